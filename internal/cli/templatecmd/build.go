package templatecmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/daemon"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template/build"
	"github.com/airlock-dev/airlock/sdk"
)

const buildUsage = `usage: airlock template build [flags] NAME [CONTEXT_DIR]

Builds the template NAME from a build file (-f, default ./airlock.template):

  FROM NAME              an imported or built template (first, once)
  egress: PRESET, ...    registry presets RUN steps may reach (daemon only)
  RUN CMD | RUN ["a"]    in a fresh sandbox of the stack so far
  COPY SRC... DEST       from CONTEXT_DIR only (default .)
  ENV K=V ...            WORKDIR DIR            USER NAME

Each step is a layer of the template store on the base's, cached by the
digest of its inputs: a rebuild in which nothing changed reuses every layer
(and a NAME that exists is then left as it is; a build that differs from it
is a conflict). The record (airlock template inspect) has the base's hash and
each step with its digest and layer. A RUN runs as the sandbox user (uid
1000) and can change only /workspace and /home/sandbox: those trees, as it
left them, are its layer. Files a build adds are owned by root in the
template (readable, not writable, for the sandbox user).

With --socket (or AIRLOCK_SOCKET) the daemon builds into its own store:
each RUN runs in one of its sandboxes (labelled airlock.build=NAME) under
its command policy (a denied or held command fails the build, naming the
denial or the approval), on its audit log, with its network through the
egress proxy: the daemon's egress policy plus the file's egress: presets.
The template's record then names each RUN's sandbox and exec and every
request it made (host, port, path, status, bytes, decision). Without a
socket the build runs in process on --data-dir's store: its RUN steps have
no network (an egress: section is refused as unsupported), no command
policy and no audit log. Needs root either way.

flags:
`

func cmdBuild(args []string, stdout, stderr io.Writer) int {
	fs, c := flags("build", buildUsage, stderr)
	file := fs.String("f", "airlock.template", "the build `FILE`")
	stateDir := fs.String("state-dir", cli.EnvOr("AIRLOCK_STATE_DIR", "/run/airlock"), "runtime state directory of the RUN steps' sandboxes (env AIRLOCK_STATE_DIR)")
	quiet := fs.Bool("quiet", false, "no progress lines, no RUN output, on stderr")
	socket := fs.String("socket", os.Getenv(sdk.SocketEnv), "build through the daemon on this unix socket `PATH` (env AIRLOCK_SOCKET; \"\": in process)")
	var lim runtime.Limits
	fs.Var(cli.SizeFlag{V: &lim.MemoryBytes}, "memory", "memory limit of each RUN in process: a `SIZE` (default 512M; a daemon build has the daemon's)")
	fs.Var(cli.SizeFlag{V: &lim.DiskBytes}, "disk", "writable layer of each RUN in process: a `SIZE` (default 1G; a daemon build has the daemon's)")
	pos, code, done := fs.parse(buildUsage, args, stdout)
	if done {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		fmt.Fprintf(stderr, "airlock template build: want NAME [CONTEXT_DIR]; run 'airlock template build --help'\n")
		return 2
	}
	ctxDir := "."
	if len(pos) == 2 {
		ctxDir = pos[1]
	}
	if *socket != "" {
		return buildOnDaemon(*socket, pos[0], *file, ctxDir, *quiet, stdout, stderr)
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return fail(stderr, "build", err)
	}
	f, err := build.Parse(filepath.Base(*file), data)
	if err != nil {
		return fail(stderr, "build", err)
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "build", err)
	}
	b := &build.Builder{Store: s}
	if !*quiet {
		b.Logf = progress(stderr)
	}
	if slices.ContainsFunc(f.Steps, func(s build.Step) bool { return s.Op == "RUN" }) {
		be, err := daemon.OpenNative(*stateDir, *c.dataDir, true, nil)
		if err != nil {
			return fail(stderr, "build", err)
		}
		r := &build.SandboxRunner{Backend: be, Limits: lim}
		if !*quiet {
			r.Stdout, r.Stderr = stderr, stderr
		}
		b.Runner = r
	}
	ctx, cancel := signalContext()
	defer cancel()
	t0 := time.Now()
	res, err := b.Build(ctx, pos[0], *file, f, ctxDir)
	if err != nil {
		return fail(stderr, "build", err)
	}
	img := res.Image
	fmt.Fprintf(stdout, "%s@%s %s (%d steps: %d cached, %d built, %s)\n", cli.Esc(img.Name), img.Version, img.Digest, res.Cached+res.Done, res.Cached, res.Done, time.Since(t0).Round(time.Millisecond))
	return 0
}

// buildOnDaemon asks the daemon to build (its paths are the daemon
// host's: the file and context are sent absolute).
func buildOnDaemon(socket, name, file, ctxDir string, quiet bool, stdout, stderr io.Writer) int {
	absFile, err := filepath.Abs(file)
	if err != nil {
		return fail(stderr, "build", err)
	}
	absCtx, err := filepath.Abs(ctxDir)
	if err != nil {
		return fail(stderr, "build", err)
	}
	c, err := sdk.New(sdk.WithSocket(socket))
	if err != nil {
		return fail(stderr, "build", err)
	}
	var prog func(string)
	if !quiet {
		p := progress(stderr)
		prog = func(line string) { p("%s", cli.Esc(line)) }
	}
	ctx, cancel := signalContext()
	defer cancel()
	t0 := time.Now()
	b, err := c.BuildTemplate(ctx, name, absFile, absCtx, prog)
	if err != nil {
		return fail(stderr, "build", err)
	}
	fmt.Fprintf(stdout, "%s@%s %s (%d steps: %d cached, %d built, %s)\n", cli.Esc(b.Template.Name), b.Template.Version, b.Template.Digest, b.Cached+b.Built, b.Cached, b.Built, time.Since(t0).Round(time.Millisecond))
	return 0
}
