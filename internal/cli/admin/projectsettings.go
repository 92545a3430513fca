package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/sdk"
)

// projectSettings is 'project settings': show them, or set those named
// (a setting not named stays as it is).
func projectSettings(c *cli.Cmd, args []string) int {
	c.Remote()
	tpl := c.FS.String("default-template", "", "the template of a create that names none (`NAME`; default: the daemon's)")
	life := c.FS.String("max-lifetime", "", "bound its sandboxes' lives from their creation (`DURATION` such as 4h, at most the daemon's; default: the daemon's)")
	asJSON := c.FS.Bool("json", false, "print the answer as JSON")
	id, code, done := oneName(c, args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	ctx := context.Background()
	cur, err := cl.ProjectSettings(ctx, id)
	if err != nil {
		return c.Fail(err)
	}
	if *tpl != "" || *life != "" {
		req := sdk.ProjectSettingsRequest{DefaultTemplate: cur.DefaultTemplate, MaxLifetimeSeconds: cur.MaxLifetimeSeconds}
		if *tpl != "" {
			req.DefaultTemplate = *tpl
			if *tpl == "default" {
				req.DefaultTemplate = ""
			}
		}
		if *life != "" {
			req.MaxLifetimeSeconds = 0
			if *life != "default" {
				d, err := time.ParseDuration(*life)
				if err != nil || d < time.Second {
					return c.UsageErr("--max-lifetime %s: want a duration of at least 1s, or default", *life)
				}
				req.MaxLifetimeSeconds = int64(d / time.Second)
			}
		}
		if cur, err = cl.SetProjectSettings(ctx, id, req); err != nil {
			return c.Fail(err)
		}
	}
	if *asJSON {
		_ = cli.PrintJSON(c.Stdout, cur)
		return 0
	}
	tplOut, lifeOut := cur.DefaultTemplate, "the daemon's"
	if tplOut == "" {
		tplOut = "the daemon's (host)"
	}
	if cur.MaxLifetimeSeconds > 0 {
		lifeOut = (time.Duration(cur.MaxLifetimeSeconds) * time.Second).String()
	}
	fmt.Fprintf(c.Stdout, "PROJECT %s\ndefault template\t%s\nmax lifetime\t%s\n", cli.Esc(cur.Project), cli.Esc(tplOut), lifeOut)
	return 0
}
