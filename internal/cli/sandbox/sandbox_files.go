package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/tarball"
	"github.com/airlock-dev/airlock/sdk"
)

func sandboxUpload(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("upload", "airlock sandbox upload [flags] ID HOSTDIR [DEST]",
		"Copies the host directory HOSTDIR into the sandbox below DEST (default /workspace),\nowned by the sandbox user. Regular files, directories and symlinks (as links) are\ncopied; the host directory is only read.\n", stdout, stderr)
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 && len(pos) != 3 {
		return c.UsageErr("want a sandbox ID, a host directory and an optional destination")
	}
	dest := "/workspace"
	if len(pos) == 3 {
		dest = pos[2]
	}
	st, err := os.Stat(pos[1])
	if err != nil || !st.IsDir() {
		return c.UsageErr("%s is not a directory", pos[1])
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.WriteDir(pw, pos[1])) }()
	if err := cl.UploadTar(context.Background(), pos[0], dest, pr); err != nil {
		return c.Fail(err)
	}
	return 0
}

func sandboxCat(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("cat", "airlock sandbox cat [flags] ID PATH", "Prints a file of the sandbox.\n", stdout, stderr)
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and a path")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	if _, err := cl.ReadFile(context.Background(), pos[0], pos[1], stdout); err != nil {
		return c.Fail(err)
	}
	return 0
}

func sandboxPut(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("put", "airlock sandbox put [flags] ID PATH < DATA", "Writes standard input to a file of the sandbox (created or replaced).\n", stdout, stderr)
	mode := c.FS.String("mode", "0644", "permission bits, octal")
	parents := c.FS.Bool("parents", false, "create missing parent directories")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and a path")
	}
	m, err := strconv.ParseUint(*mode, 8, 32)
	if err != nil || m > 0o777 {
		return c.UsageErr("--mode %q: want octal permission bits like 0644", *mode)
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	if err := cl.WriteFile(context.Background(), pos[0], pos[1], sandboxStdin, uint32(m), *parents); err != nil {
		return c.Fail(err)
	}
	return 0
}

func sandboxFiles(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("files", "airlock sandbox files [flags] ID DIR", "Lists a directory of the sandbox.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print the entries as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and a directory")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	list, err := cl.ListFiles(context.Background(), pos[0], pos[1])
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		if err := cli.PrintJSON(stdout, list); err != nil {
			return c.Fail(err)
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODE\tSIZE\tTYPE\tNAME")
	for _, e := range list {
		name := e.Name
		if e.Target != "" {
			name += " -> " + e.Target
		}
		fmt.Fprintf(tw, "%04o\t%d\t%s\t%s\n", e.Mode, e.Size, cli.Esc(e.Type), cli.Esc(name))
	}
	_ = tw.Flush()
	return 0
}

// sandboxAction makes the pause, resume and reset verbs.
func sandboxAction(name, about string) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		c := cli.NewCmd(name, "airlock sandbox "+name+" [flags] ID", strings.ToUpper(about[:1])+about[1:]+".\n", stdout, stderr)
		id, code, done := c.OneID(args)
		if done {
			return code
		}
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		act := map[string]func(context.Context, string) (*sdk.Sandbox, error){"pause": cl.PauseSandbox, "resume": cl.ResumeSandbox, "reset": cl.ResetSandbox}[name]
		sb, err := act(context.Background(), id)
		if err != nil {
			return c.Fail(err)
		}
		fmt.Fprintf(stdout, "%s %s\n", sb.ID, sb.State)
		return 0
	}
}

func sandboxKill(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("kill", "airlock sandbox kill [flags] ID EXEC_ID", "Sends a signal to a running command's process group (see 'airlock sandbox execs').\n", stdout, stderr)
	sig := c.FS.String("signal", "KILL", "signal name (KILL, TERM, INT, HUP, ...) or number")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and an exec ID")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	var signal any = *sig
	if n, err := strconv.Atoi(*sig); err == nil {
		signal = n
	}
	if err := cl.Signal(context.Background(), pos[0], pos[1], signal); err != nil {
		return c.Fail(err)
	}
	return 0
}

func sandboxSnapshot(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("snapshot", "airlock sandbox snapshot [flags] ID NAME",
		"Makes a new version of the template NAME from the sandbox's /workspace and its user's home\n(/home/sandbox; an E2B door sandbox's /home/user; files are kept, processes and /tmp are not). New sandboxes start from it with --template NAME.\n", stdout, stderr)
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.UsageErr("want a sandbox ID and a template name")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	var tty io.Writer
	if isTerminalW(cli.Underlying(stderr)) {
		tty = cli.Underlying(stderr)
	}
	shown := cli.Progress(tty, "snapshotting "+pos[0]+" as "+pos[1])
	s, err := cl.SnapshotSandbox(context.Background(), pos[0], pos[1])
	shown()
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintf(stdout, "%s@%s (from %s, %d bytes)\n", cli.Esc(s.Name), cli.Esc(s.Version), cli.Esc(s.FromSandbox), s.SeedBytes)
	return 0
}

func sandboxTemplates(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("templates", "airlock sandbox templates [flags]", "Lists the templates: built-in and snapshots.\n", stdout, stderr)
	asJSON := c.FS.Bool("json", false, "print a JSON array")
	if _, code, done := c.Parse(args); done {
		return code
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	list, err := cl.ListTemplates(context.Background())
	if err != nil {
		return c.Fail(err)
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, list)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tKIND\tBASE")
	for _, t := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cli.Esc(t.Name), cli.Esc(t.Version), cli.Esc(t.Kind), cli.Esc(t.Base))
	}
	_ = tw.Flush()
	return 0
}
