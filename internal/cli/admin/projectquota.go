package admin

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/sdk"
)

// 'airlock project usage' and 'airlock project quota': a project's
// quotas (internal/quotas) and what it holds of them.

// projectShowUsage is 'project usage': a key reads its own project's
// (--url).
func projectShowUsage(c *cli.Cmd, args []string) int {
	asJSON := c.FS.Bool("json", false, "print JSON")
	c.Remote()
	id, code, done := oneName(c, args)
	if done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	u, err := cl.ProjectUsage(context.Background(), id)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(c.Stdout, u)
		return 0
	}
	printUsage(c.Stdout, u)
	return 0
}

// printUsage shows each quota: what is used, the bound, and whether the
// project sets it or the daemon's default does.
func printUsage(w io.Writer, u *sdk.ProjectUsage) {
	size := func(v int64) string { return cli.FmtSize(v) }
	count := func(v int64) string { return strconv.FormatInt(v, 10) }
	cores := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PROJECT %s\nQUOTA\tUSED\tLIMIT\tFROM\n", cli.Esc(u.Project))
	row := func(name, used, limit string, zero, set bool) {
		from := "default"
		if set {
			from = "project"
		}
		if zero {
			limit = "none"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, used, limit, from)
	}
	q, s, n := u.Quotas, u.Set, u.Usage
	row("sandboxes", count(n.Sandboxes), count(q.Sandboxes), q.Sandboxes == 0, s.Sandboxes != nil)
	row("memory", size(n.MemoryBytes), size(q.MemoryBytes), q.MemoryBytes == 0, s.MemoryBytes != nil)
	row("cpus", cores(n.CPUs), cores(q.CPUs), q.CPUs == 0, s.CPUs != nil)
	row("disk", size(n.DiskBytes), size(q.DiskBytes), q.DiskBytes == 0, s.DiskBytes != nil)
	row("execs/minute", count(n.ExecsLastMinute), count(q.ExecsPerMinute), q.ExecsPerMinute == 0, s.ExecsPerMinute != nil)
	row("stored output", size(n.StoredOutputBytes), size(q.StoredOutputBytes), q.StoredOutputBytes == 0, s.StoredOutputBytes != nil)
	row("egress/day", size(n.EgressBytesLastDay), size(q.EgressBytesPerDay), q.EgressBytesPerDay == 0, s.EgressBytesPerDay != nil)
	_ = tw.Flush()
}

// quotaValue is one --NAME flag of 'project quota', kept as written.
type quotaValue struct{ v *string }

func (q quotaValue) String() string {
	if q.v == nil {
		return ""
	}
	return *q.v
}
func (q quotaValue) Set(s string) error { *q.v = s; return nil }

// projectQuota is 'project quota': an admin's key lowers its own
// project's (--url).
func projectQuota(c *cli.Cmd, args []string) int {
	c.Remote()
	vals := map[string]*string{}
	for _, f := range []struct{ name, help string }{
		{"sandboxes", "live sandboxes at once: `N`, none or default"},
		{"memory", "the sum of the live sandboxes' memory limits: a `SIZE` (8G), none or default"},
		{"cpus", "the sum of their CPU limits: `N` cores, none or default"},
		{"disk", "the sum of their disk limits: a `SIZE`, none or default"},
		{"execs", "commands a minute: `N`, none or default"},
		{"output", "the commands' output the store keeps: a `SIZE`, none or default"},
		{"egress", "the bytes its sandboxes' egress moves in 24 hours: a `SIZE`, none or default"},
	} {
		v := new(string)
		vals[f.name] = v
		c.FS.Var(quotaValue{v}, f.name, f.help)
	}
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
	cur, err := cl.ProjectUsage(ctx, id)
	if err != nil {
		return c.Fail(err)
	}
	s := cur.Set
	for _, f := range []struct {
		name string
		set  func(v string) error
	}{
		{"sandboxes", intQuota(&s.Sandboxes, parseCount)},
		{"memory", intQuota(&s.MemoryBytes, cli.ParseSize)},
		{"disk", intQuota(&s.DiskBytes, cli.ParseSize)},
		{"execs", intQuota(&s.ExecsPerMinute, parseCount)},
		{"output", intQuota(&s.StoredOutputBytes, cli.ParseSize)},
		{"egress", intQuota(&s.EgressBytesPerDay, cli.ParseSize)},
		{"cpus", cpuQuota(&s.CPUs)},
	} {
		if v := *vals[f.name]; v != "" {
			if err := f.set(v); err != nil {
				return c.UsageErr("--%s %s: %v", f.name, v, err)
			}
		}
	}
	u, err := cl.SetProjectQuotas(ctx, id, s)
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(c.Stdout, u)
		return 0
	}
	printUsage(c.Stdout, u)
	return 0
}

// intQuota sets *dst from "none" (0), "default" (nil) or a number parse
// reads.
func intQuota(dst **int64, parse func(string) (int64, error)) func(string) error {
	return func(v string) error {
		switch strings.ToLower(v) {
		case "default":
			*dst = nil
			return nil
		case "none":
			v = "0"
		}
		n, err := parse(v)
		if err != nil {
			return err
		}
		if n < 0 {
			return fmt.Errorf("negative")
		}
		*dst = &n
		return nil
	}
}

func cpuQuota(dst **float64) func(string) error {
	return func(v string) error {
		switch strings.ToLower(v) {
		case "default":
			*dst = nil
			return nil
		case "none":
			v = "0"
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 || n != n {
			return fmt.Errorf("not a number of cores")
		}
		*dst = &n
		return nil
	}
}

func parseCount(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }
