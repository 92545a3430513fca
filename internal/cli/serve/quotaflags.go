package serve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/quotas"
)

// quotaFlag is --project-quota: the projects' default quotas, as
// sandboxes=N,memory=SIZE,cpus=N,disk=SIZE,execs=N,output=SIZE,egress=SIZE (execs a
// minute; output: what the store keeps of the commands' output);
// repeated flags add up, a later value of a name replaces an earlier one.
type quotaFlag struct{ l *quotas.Limits }

func (f quotaFlag) String() string {
	if f.l == nil {
		return ""
	}
	var out []string
	add := func(name string, v int64, size bool) {
		if v != 0 {
			s := strconv.FormatInt(v, 10)
			if size {
				s = cli.FmtSize(v)
			}
			out = append(out, name+"="+s)
		}
	}
	add("sandboxes", f.l.Sandboxes, false)
	add("memory", f.l.MemoryBytes, true)
	if f.l.CPUs != 0 {
		out = append(out, "cpus="+strconv.FormatFloat(f.l.CPUs, 'g', -1, 64))
	}
	add("disk", f.l.DiskBytes, true)
	add("execs", f.l.ExecsPerMinute, false)
	add("output", f.l.StoredOutputBytes, true)
	add("egress", f.l.EgressBytesPerDay, true)
	return strings.Join(out, ",")
}

func (f quotaFlag) Set(spec string) error {
	for _, kv := range strings.Split(spec, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || val == "" {
			return fmt.Errorf("%q: want NAME=VALUE (sandboxes, memory, cpus, disk, execs, output, egress)", kv)
		}
		var err error
		switch name {
		case "sandboxes":
			f.l.Sandboxes, err = strconv.ParseInt(val, 10, 64)
		case "memory":
			f.l.MemoryBytes, err = cli.ParseSize(val)
		case "disk":
			f.l.DiskBytes, err = cli.ParseSize(val)
		case "cpus":
			f.l.CPUs, err = strconv.ParseFloat(val, 64)
		case "execs":
			f.l.ExecsPerMinute, err = strconv.ParseInt(val, 10, 64)
		case "output":
			f.l.StoredOutputBytes, err = cli.ParseSize(val)
		case "egress":
			f.l.EgressBytesPerDay, err = cli.ParseSize(val)
		default:
			return fmt.Errorf("%q: unknown quota (sandboxes, memory, cpus, disk, execs, output, egress)", name)
		}
		if err != nil {
			return fmt.Errorf("%s=%s: %v", name, val, err)
		}
	}
	return f.l.Check()
}
