package sandbox

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/airlock-dev/airlock/internal/cli"
)

// The remaining one-call verbs: a CLI verb for every API call.

// simpleVerb makes a verb taking exactly n positional arguments.
func simpleVerb(name, synopsis, about string, n int, run func(c *cli.Cmd, args []string) int) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		c := cli.NewCmd(name, synopsis, about, stdout, stderr)
		asJSON := c.FS.Bool("json", false, "print the answer as JSON (where there is one)")
		pos, code, done := c.Parse(args)
		if done {
			return code
		}
		if len(pos) != n {
			return c.UsageErr("want %d arguments", n)
		}
		c.JSON = *asJSON
		return run(c, pos)
	}
}

var sandboxStat = simpleVerb("stat", "airlock sandbox stat [flags] ID PATH", "Describes a file of the sandbox (a symlink itself, not its target).\n", 2,
	func(c *cli.Cmd, a []string) int {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		fi, err := cl.StatFile(context.Background(), a[0], a[1])
		if err != nil {
			return c.Fail(err)
		}
		if c.JSON {
			_ = cli.PrintJSON(c.Stdout, fi)
			return 0
		}
		fmt.Fprintf(c.Stdout, "%s %s %04o %d uid=%d gid=%d %s", cli.Esc(fi.Path), cli.Esc(fi.Type), fi.Mode, fi.Size, fi.UID, fi.GID, fi.ModTime.Format("2006-01-02T15:04:05Z"))
		if fi.Target != "" {
			fmt.Fprintf(c.Stdout, " -> %s", cli.Esc(fi.Target))
		}
		fmt.Fprintln(c.Stdout)
		return 0
	})

var sandboxMkdir = simpleVerb("mkdir", "airlock sandbox mkdir [flags] ID DIR", "Makes a directory (and its parents) in the sandbox.\n", 2,
	func(c *cli.Cmd, a []string) int {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		if err := cl.Mkdir(context.Background(), a[0], a[1], true); err != nil {
			return c.Fail(err)
		}
		return 0
	})

var sandboxRmFile = simpleVerb("rmf", "airlock sandbox rmf [flags] ID PATH", "Removes a file or directory (and everything in it) in the sandbox.\n", 2,
	func(c *cli.Cmd, a []string) int {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		if err := cl.RemoveFile(context.Background(), a[0], a[1], true); err != nil {
			return c.Fail(err)
		}
		return 0
	})

var sandboxDownload = simpleVerb("download", "airlock sandbox download [flags] ID DIR > FILE.tar",
	"Writes a directory of the sandbox to stdout as a tar stream. Files the policy\ndoes not let you read (a .env, a key) are left out, and their number is said\non stderr (each is in the audit record as file.refused).\n", 2,
	func(c *cli.Cmd, a []string) int {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		_, omitted, err := cl.DownloadTarCounted(context.Background(), a[0], a[1], c.Stdout)
		if err != nil {
			return c.Fail(err)
		}
		if omitted > 0 {
			c.Errorf("%s left out (refused by policy; see 'airlock audit query --sandbox %s --kind file.refused')", plural(omitted, "file"), a[0])
		}
		return 0
	})

// plural is "1 file", "2 files".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

var sandboxInput = simpleVerb("input", "airlock sandbox input [flags] ID EXEC_ID < DATA", "Sends stdin to a running command started with an open stdin.\n", 2,
	func(c *cli.Cmd, a []string) int {
		data, err := io.ReadAll(io.LimitReader(sandboxStdin, 16<<20))
		if err != nil {
			return c.Fail(err)
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		if err := cl.Input(context.Background(), a[0], a[1], data); err != nil {
			return c.Fail(err)
		}
		return 0
	})

var sandboxCloseStdin = simpleVerb("close-stdin", "airlock sandbox close-stdin [flags] ID EXEC_ID", "Closes a running command's open stdin (it reads end of file).\n", 2,
	func(c *cli.Cmd, a []string) int {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		if err := cl.CloseStdin(context.Background(), a[0], a[1]); err != nil {
			return c.Fail(err)
		}
		return 0
	})

var sandboxResize = simpleVerb("resize", "airlock sandbox resize [flags] ID EXEC_ID ROWS COLS", "Resizes a running command's terminal.\n", 4,
	func(c *cli.Cmd, a []string) int {
		rows, err1 := strconv.ParseUint(a[2], 10, 16)
		cols, err2 := strconv.ParseUint(a[3], 10, 16)
		if err1 != nil || err2 != nil || rows == 0 || cols == 0 {
			return c.UsageErr("ROWS and COLS must be positive numbers")
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		if err := cl.Resize(context.Background(), a[0], a[1], uint16(rows), uint16(cols)); err != nil {
			return c.Fail(err)
		}
		return 0
	})

var sandboxHealth = simpleVerb("health", "airlock sandbox health [flags]", "Asks the daemon how it is.\n", 0,
	func(c *cli.Cmd, a []string) int {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		h, err := cl.Health(context.Background())
		if err != nil {
			return c.Fail(err)
		}
		if c.JSON {
			_ = cli.PrintJSON(c.Stdout, h)
			return 0
		}
		fmt.Fprintf(c.Stdout, "ok: version %s, backend %s, cgroup %s\n", h.Version, h.Backend, h.Cgroup)
		return 0
	})
