// Package run is the CLI's verbs that need no daemon: 'airlock run', one
// command in a fresh one-shot sandbox (the daemon's when one answers,
// daemon.go; else of a backend opened in process), and 'airlock reap',
// which removes what killed airlock processes left.
package run

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/gvisor"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/template"
)

const runUsage = `usage: airlock run [flags] -- CMD [ARGS...]

Runs CMD in a fresh, isolated, one-shot sandbox and removes it afterwards.

Through a daemon: when an airlock daemon answers at --socket, the sandbox is
the daemon's (a warm pool's when one of this shape is ready: see 'airlock
serve --pool'), made with the same flags, recorded in the daemon's audit
log, and destroyed by the daemon when CMD ends, also when airlock is killed
(the teardown goes on after airlock exits; on a signal airlock waits for it). The daemon's templates,
backends and policy apply (a command it denies or holds for approval exits
126, naming the approval); --workspace is uploaded as a copy. The run goes
the direct way instead, and --verbose says why, with --direct, with one of
--state-dir, --data-dir, --runsc, --gvisor-platform, when no daemon answers,
when the daemon cannot make the sandbox (unsupported, e.g. a backend it was
not given), or when stdin is a terminal, pipe or socket (the daemon takes
stdin whole, before CMD starts: give </dev/null or a file to use it).
--daemon fails (125) instead of going direct.

Direct: no daemon is needed; the backend is opened in this process. Needs
root (for uid mapping and cgroups).

The sandbox: its own user, mount, pid, network (loopback only), ipc, uts and
cgroup namespaces; the template's root filesystem read-only under a private
writable layer; CMD runs as uid 1000 with no capabilities, no_new_privs,
seccomp and Landlock. With --backend gvisor, the same behind gVisor's
user-space kernel instead (runsc; no Landlock, no separate --tmp). With
--workspace, a copy of DIR is at /workspace; the host DIR is never changed.

Exit status: CMD's own; 127 if CMD is not found, 126 if it is not executable,
124 if --timeout expired, 128+N if killed by signal N; 2 for a usage error (a
bad flag or value), 125 if airlock itself failed (no sandbox could be made).
A hit limit (timeout, memory, pids, disk, output) is named on stderr.

Environment: AIRLOCK_SOCKET (--socket), AIRLOCK_RUN_DIRECT=1 (--direct),
AIRLOCK_STATE_DIR, AIRLOCK_DATA_DIR, AIRLOCK_BACKEND,
AIRLOCK_RUNSC and AIRLOCK_GVISOR_PLATFORM (defaults of the flags named
below); AIRLOCK_CGROUP_PARENT, the cgroup the sandbox is placed under
(default: "airlock" for the state dir /run/airlock, "airlock-HASH" for any
other, HASH from the state dir's path; gVisor's: the same with "-oci" after
"airlock", or AIRLOCK_CGROUP_PARENT-gvisor); AIRLOCK_TRACE=1 prints the
timing of each phase on stderr.

flags:
`

type runOpts struct {
	template  string
	workspace string
	memory    int64
	disk      int64
	tmp       int64
	pids      int64
	ptys      int64
	cpus      float64
	timeout   time.Duration
	env       cli.ListFlag
	dir       string
	stateDir  string
	dataDir   string
	output    int64
	backend   backendOpts
}

func (o *runOpts) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.template, "template", "host", "template for the root filesystem")
	fs.StringVar(&o.workspace, "workspace", "", "host `DIR` to copy into /workspace (the host DIR is not changed)")
	fs.Var(cli.SizeFlag{V: &o.memory}, "memory", "memory limit: a `SIZE` such as 512M (default 512M)")
	fs.Var(cli.SizeFlag{V: &o.disk}, "disk", "size of the writable layer (/workspace, home): a `SIZE` such as 1G (default 1G)")
	fs.Var(cli.SizeFlag{V: &o.tmp}, "tmp", "size of /tmp: a `SIZE` such as 256M (default 256M)")
	fs.Int64Var(&o.pids, "pids", native.DefaultPids, "maximum number of processes")
	fs.Int64Var(&o.ptys, "ptys", 0, fmt.Sprintf("maximum number of terminals open at once (default %d; not with --backend gvisor, whose terminals are its own)", native.DefaultPtys))
	fs.Float64Var(&o.cpus, "cpus", 0, "CPU quota in CPUs, e.g. 1.5 (default: no quota)")
	cli.DurationVar(fs, &o.timeout, "timeout", 0, "kill CMD after this long: a `DURATION` such as 30s, 5m (default: no timeout)")
	fs.Var(&o.env, "env", "set `K=V` in CMD's environment (repeatable)")
	fs.StringVar(&o.dir, "cwd", "", "working directory inside the sandbox (default: the template's working directory, else /workspace)")
	fs.StringVar(&o.stateDir, "state-dir", cli.EnvOr("AIRLOCK_STATE_DIR", "/run/airlock"), "runtime state directory (env AIRLOCK_STATE_DIR)")
	fs.StringVar(&o.dataDir, "data-dir", cli.EnvOr("AIRLOCK_DATA_DIR", "/var/lib/airlock"), "data directory holding templates and the sandboxes' disk images (env AIRLOCK_DATA_DIR)")
	fs.Var(cli.SizeFlag{V: &o.output}, "output-limit", "cap on each of stdout and stderr: a `SIZE` (default 16M)")
	o.backend.flags(fs, "isolation backend")
}

func CmdRun(args []string, stdout, stderr io.Writer) int {
	var (
		o runOpts
		p pathOpts
	)
	fs := cli.NewFlagSet("run", runUsage, stderr)
	o.flags(fs)
	p.flags(fs)
	if code, done := cli.ParseFlags(fs, runUsage, args, stdout); done {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "airlock run: no command given; usage: airlock run [flags] -- CMD [ARGS...]")
		return 2
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "airlock run: %v\n", err)
		return 2
	}
	if p.direct && p.daemon {
		fmt.Fprintln(stderr, "airlock run: --direct and --daemon: choose one")
		return 2
	}
	code, err := runEither(&o, &p, set, argv, stdout, stderr)
	if err != nil {
		// (the command's own output is raw; airlock's words about it are not)
		fmt.Fprintf(stderr, "airlock run: %s\n", cli.Esc(err.Error()))
		if code == 0 {
			code = 125
		}
	}
	return code
}

// runEither runs argv through the daemon when one is reachable and
// nothing of the run needs the direct path, else directly.
func runEither(o *runOpts, p *pathOpts, set map[string]bool, argv []string, stdout, stderr io.Writer) (int, error) {
	stdinData, why := directReason(p, set, os.Stdin)
	if why == "" {
		code, err := runViaDaemon(o, p, argv, stdinData, stdout, stderr)
		var fb *fallback
		if !errors.As(err, &fb) {
			return code, err
		}
		why = fb.why
	}
	if p.daemon {
		return 125, fmt.Errorf("--daemon: cannot run through the daemon: %s", why)
	}
	if p.verbose {
		fmt.Fprintf(stderr, "airlock run: direct: %s\n", cli.Esc(why))
	}
	return runOnce(o, argv, os.Stdin, stdout, stderr)
}

func (o *runOpts) validate() error {
	if err := template.ValidName(o.template); err != nil {
		return fmt.Errorf("--template %q: %v", o.template, err)
	}
	if err := o.backend.validate(); err != nil {
		return err
	}
	for _, kv := range o.env {
		if i := strings.IndexByte(kv, '='); i <= 0 || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("--env %q: use K=V", kv)
		}
	}
	if o.pids < native.MinPids {
		return fmt.Errorf("--pids %d: must be at least %d", o.pids, native.MinPids)
	}
	if o.ptys < 0 || o.ptys > native.MaxPtys {
		return fmt.Errorf("--ptys %d: from 1 to %d", o.ptys, native.MaxPtys)
	}
	if o.cpus < 0 {
		return fmt.Errorf("--cpus %g: must not be negative", o.cpus)
	}
	if o.timeout < 0 {
		return fmt.Errorf("--timeout %s: must not be negative", o.timeout)
	}
	if o.memory != 0 && o.memory < 16<<20 {
		return fmt.Errorf("--memory %d: must be at least 16M", o.memory)
	}
	if o.dir != "" && !filepath.IsAbs(o.dir) {
		return fmt.Errorf("--cwd %q: must be an absolute path inside the sandbox", o.dir)
	}
	if o.workspace != "" {
		abs, err := filepath.Abs(o.workspace)
		if err != nil {
			return err
		}
		st, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("--workspace %s: no such directory", o.workspace)
		}
		if !st.IsDir() {
			return fmt.Errorf("--workspace %s: not a directory", o.workspace)
		}
		o.workspace = abs
	}
	return nil
}

// runOnce creates a sandbox, runs argv, destroys the sandbox. It returns
// the exit status to use.
func runOnce(o *runOpts, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tracef("start")
	be, err := openBackend(o.backend, o.backend.name, o.stateDir, o.dataDir, true, nil)
	tracef("backend ready")
	if err != nil {
		return 125, err
	}
	store, err := template.Open(filepath.Join(o.dataDir, "templates"))
	if err != nil {
		return 125, err
	}
	tpl, err := store.Get(o.template)
	if err != nil {
		if errors.Is(err, template.ErrNotFound) {
			return 125, fmt.Errorf("--template %q: %v", o.template, err)
		}
		return 125, err
	}
	tracef("template ready")
	// An image template's layers stay out of GC while this run uses them.
	release, err := store.Hold(tpl)
	if err != nil {
		return 125, err
	}
	defer release()
	spec := runtime.Spec{
		RootFS:    tpl.Dir,
		Lowers:    tpl.Lowers,
		Workspace: o.workspace,
		Env:       runtime.MergeEnv(tpl.Env, o.env),
		Limits: runtime.Limits{
			MemoryBytes: o.memory, Pids: o.pids, CPUs: o.cpus, DiskBytes: o.disk, TmpBytes: o.tmp, Ptys: o.ptys,
		},
		// a one-shot run reports no file activity (nothing records it)
		NoFileActivity: true,
	}
	for _, b := range tpl.Binds {
		spec.Binds = append(spec.Binds, runtime.Bind{Source: b.Source, Target: b.Target})
	}

	// SIGINT/SIGTERM: tear the sandbox down, then exit 128+sig.
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigc)
	var got os.Signal
	sigDone := make(chan struct{})
	go func() {
		select {
		case s := <-sigc:
			got = s
			cancel()
		case <-sigDone:
		}
	}()
	defer close(sigDone)

	sb, err := be.Create(ctx, spec)
	if err != nil {
		if got != nil {
			return 128 + int(got.(syscall.Signal)), fmt.Errorf("interrupted")
		}
		return 125, err
	}
	tracef("sandbox created")
	defer func() {
		tracef("destroy")
		sb.Destroy(context.Background())
		tracef("destroyed")
	}()

	dir := o.dir
	if dir == "" {
		dir = tpl.WorkDir // "": the backend's /workspace
	}
	proc, err := sb.Exec(ctx, runtime.ExecRequest{
		Argv: argv, Dir: dir, Timeout: o.timeout, Stdin: stdin, Stdout: stdout, Stderr: stderr, OutputLimit: o.output,
	})
	if err != nil {
		var ee *native.ExecError
		if errors.As(err, &ee) {
			return ee.ExitCode(), fmt.Errorf("%s: %s", argv[0], ee.Msg)
		}
		if got != nil {
			return 128 + int(got.(syscall.Signal)), fmt.Errorf("interrupted")
		}
		return 125, err
	}
	tracef("exec started")
	st, err := proc.Wait(ctx)
	tracef("exec done")
	if err != nil {
		if got != nil || errors.Is(err, context.Canceled) {
			sb.Destroy(context.Background())
			if got != nil {
				return 128 + int(got.(syscall.Signal)), fmt.Errorf("interrupted by %v; sandbox destroyed", got)
			}
		}
		return 125, err
	}
	lim := sb.Info().Limits
	switch st.Limit {
	case runtime.LimitTimeout:
		fmt.Fprintf(stderr, "airlock: command timed out after %s and was killed\n", o.timeout)
	case runtime.LimitMemory:
		fmt.Fprintf(stderr, "airlock: memory limit of %s exceeded; the command was killed (raise --memory)\n", cli.FmtBytes(lim.MemoryBytes))
	case runtime.LimitPids:
		fmt.Fprintf(stderr, "airlock: process limit of %d reached (raise --pids)\n", lim.Pids)
	case runtime.LimitDisk:
		fmt.Fprintf(stderr, "airlock: sandbox disk is full (limit %s for the writable layer, %s for /tmp; raise --disk or --tmp)\n", cli.FmtBytes(lim.DiskBytes), cli.FmtBytes(lim.TmpBytes))
	}
	if st.StdoutTruncated || st.StderrTruncated {
		fmt.Fprintf(stderr, "airlock: output truncated (stdout %d bytes, stderr %d bytes; raise --output-limit)\n", st.StdoutBytes, st.StderrBytes)
	}
	return st.Code, nil
}

func CmdReap(args []string, stdout, stderr io.Writer) int {
	const reapUsage = "usage: airlock reap [flags]\n\nRemoves what killed airlock processes of this state dir left behind: sandbox\nprocesses, cgroups, state dirs. Every airlock start does this too. Only the\nstate dir's own cgroup parent is searched (see AIRLOCK_CGROUP_PARENT in\n'airlock run --help'); another state dir's sandboxes are never touched.\n\nflags:\n"
	fs := cli.NewFlagSet("reap", reapUsage, stderr)
	stateDir := fs.String("state-dir", cli.EnvOr("AIRLOCK_STATE_DIR", "/run/airlock"), "runtime state directory (env AIRLOCK_STATE_DIR)")
	dataDir := fs.String("data-dir", cli.EnvOr("AIRLOCK_DATA_DIR", "/var/lib/airlock"), "data directory holding the sandboxes' disk images (env AIRLOCK_DATA_DIR)")
	if code, done := cli.ParseFlags(fs, reapUsage, args, stdout); done {
		return code
	}
	be, err := openNative(*stateDir, *dataDir, false, nil)
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	ids, err := be.Reap()
	ids = append(be.Reaped, ids...)
	if _, serr := os.Stat(filepath.Join(*stateDir, "gvisor")); serr == nil {
		// gVisor sandboxes of `airlock run --backend gvisor`, where runsc
		// still works
		if g, gerr := openBackend(backendOpts{runsc: cli.EnvOr("AIRLOCK_RUNSC", "runsc")}, "gvisor", *stateDir, *dataDir, false, nil); gerr == nil {
			gb := g.(*gvisor.Backend)
			gids, rerr := gb.Reap()
			ids = append(append(ids, gb.Reaped...), gids...)
			err = errors.Join(err, rerr)
			if c, cerr := gb.Census(); cerr == nil && c.StateDirs == 0 && c.Cgroups == 0 {
				_ = gb.RemoveCgroupParent()
			}
		}
	}
	fmt.Fprintf(stdout, "reaped %d leftover sandbox(es)\n", len(ids))
	if c, cerr := be.Census(); cerr == nil && c.StateDirs == 0 && c.Cgroups == 0 {
		// nothing of ours is left: the (empty) cgroup parent can go too
		_ = be.RemoveCgroupParent()
	}
	if err != nil {
		fmt.Fprintf(stderr, "airlock reap: %v\n", err)
		return 1
	}
	return 0
}
