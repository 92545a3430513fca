package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/sdk"
)

// projectPolicy is 'project policy': show the project's own layer, or
// set it from a file (--file) or clear it (--clear); with --url a
// project's admin key sets its own project's.
func projectPolicy(c *cli.Cmd, args []string) int {
	c.Remote()
	file := c.FS.String("file", "", "set the project's layer from `FILE` (YAML or JSON: classes, outside_scope, scope, rules, egress, install_scripts)")
	clearIt := c.FS.Bool("clear", false, "remove the project's layer")
	id, code, done := oneName(c, args)
	if done {
		return code
	}
	if *file != "" && *clearIt {
		return c.UsageErr("--file and --clear: one of them")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	ctx := context.Background()
	var p *sdk.ProjectPolicy
	switch {
	case *clearIt:
		p, err = cl.SetProjectPolicy(ctx, id, sdk.PolicyLayer{})
	case *file != "":
		var l *sdk.PolicyLayer
		if l, err = readLayer(*file); err != nil {
			return c.UsageErr("--file %s: %v", *file, err)
		}
		p, err = cl.SetProjectPolicy(ctx, id, *l)
	default:
		p, err = cl.ProjectPolicy(ctx, id)
	}
	if err != nil {
		return c.Fail(err)
	}
	if p.Policy == nil {
		fmt.Fprintf(c.Stdout, "project %s has no policy layer of its own\n", cli.Esc(p.Project))
		return 0
	}
	_ = cli.PrintJSON(c.Stdout, p.Policy)
	return 0
}

// readLayer reads one policy layer, as a policy file's top level without
// the templates, projects and fetch sections (a project's layer is one
// layer).
func readLayer(path string) (*sdk.PolicyLayer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := policy.Parse(data)
	if err != nil {
		return nil, err
	}
	if len(f.Templates) > 0 || len(f.Projects) > 0 || f.Fetch != nil {
		return nil, fmt.Errorf("a project's layer is one layer: no templates, projects or fetch sections")
	}
	b, err := json.Marshal(f.Layer)
	if err != nil {
		return nil, err
	}
	var l sdk.PolicyLayer
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	return &l, nil
}
