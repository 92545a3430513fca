package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/tarball"
	"github.com/airlock-dev/airlock/sdk"
)

// pathOpts choose between the daemon's path and the direct one.
type pathOpts struct {
	direct  bool   // --direct: never the daemon
	daemon  bool   // --daemon: the daemon or fail (no fallback)
	verbose bool   // say which path ran, and why
	socket  string // the daemon's socket
}

func (p *pathOpts) flags(fs interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
}) {
	fs.BoolVar(&p.direct, "direct", os.Getenv("AIRLOCK_RUN_DIRECT") == "1", "run in a sandbox of a backend opened here, even when a daemon is reachable (env AIRLOCK_RUN_DIRECT=1)")
	fs.BoolVar(&p.daemon, "daemon", false, "run through the daemon or fail (exit 125, with the reason) instead of falling back to --direct")
	fs.BoolVar(&p.verbose, "verbose", false, "say on stderr which path ran (daemon: its socket and the sandbox's id; direct: why)")
	fs.StringVar(&p.socket, "socket", cli.EnvOr(sdk.SocketEnv, sdk.DefaultSocket), "the daemon's unix socket `PATH` (env AIRLOCK_SOCKET)")
}

// directOnly are the flags that configure the direct path's own backend:
// one given makes the run direct (the daemon has its own).
var directOnly = []string{"state-dir", "data-dir", "runsc", "gvisor-platform"}

// stdinForDaemon is what the daemon's path gives CMD as stdin (the daemon
// takes it whole, before CMD starts), or why it cannot: stdin that is a
// stream (a terminal, a pipe, a socket) can only be passed as the direct
// path passes it, read as CMD reads it.
func stdinForDaemon(f *os.File) ([]byte, string) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, "stdin cannot be examined: " + err.Error()
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Size > sdk.MaxStdin {
			return nil, fmt.Sprintf("stdin is a file larger than %d MiB (the daemon takes stdin whole)", sdk.MaxStdin>>20)
		}
		// read from its offset without moving it: a fallback to the direct
		// path gives CMD the same file as it is
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil || off > st.Size {
			return nil, "stdin is a file that could not be read whole"
		}
		b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size-off))
		if err != nil {
			return nil, "stdin is a file that could not be read whole"
		}
		return b, ""
	case unix.S_IFCHR:
		if unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3 { // /dev/null
			return nil, ""
		}
		return nil, "stdin is a terminal or device (the daemon takes stdin whole; use </dev/null or a file)"
	}
	return nil, "stdin is a pipe or socket (the daemon takes stdin whole, before CMD starts; use </dev/null or a file)"
}

// directReason says why this run goes the direct way ("": it may go
// through the daemon), judged before anything is sent; stdin is what the
// daemon would be given.
func directReason(p *pathOpts, set map[string]bool, stdin *os.File) ([]byte, string) {
	if p.direct {
		return nil, "--direct"
	}
	for _, f := range directOnly {
		if set[f] {
			return nil, "--" + f + " configures the direct path's backend"
		}
	}
	data, why := stdinForDaemon(stdin)
	if why != "" {
		return nil, why
	}
	c, err := net.DialTimeout("unix", p.socket, time.Second)
	if err != nil {
		return nil, "no daemon answers at " + p.socket
	}
	c.Close()
	return data, ""
}

// runViaDaemon is runOnce through the daemon at p.socket: create a
// one-shot sandbox (a warm pool's when one of this shape is ready), upload
// the workspace, exec streaming CMD's output raw; the daemon destroys the
// sandbox when that exec ends (and records it), after its answer, so
// airlock exits without waiting for the teardown. A signal drops the exec
// (the daemon kills CMD when its client goes) and destroys the sandbox,
// waiting, before exiting 128+N.
func runViaDaemon(o *runOpts, p *pathOpts, argv []string, stdinData []byte, stdout, stderr io.Writer) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tracef("start (daemon)")
	cl, err := sdk.New(sdk.WithSocket(p.socket), sdk.WithActor(cli.ActorName()))
	if err != nil {
		return 125, err
	}
	defer cl.Close()

	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigc)
	var got syscall.Signal
	sigDone := make(chan struct{})
	go func() {
		select {
		case s := <-sigc:
			got = s.(syscall.Signal)
			cancel()
		case <-sigDone:
		}
	}()
	defer close(sigDone)
	interrupted := func(err error) (int, error) {
		if got != 0 {
			return 128 + int(got), fmt.Errorf("interrupted by %s; sandbox destroyed", unix.SignalName(got))
		}
		return 125, err
	}

	sb, err := cl.CreateSandbox(ctx, o.createRequest())
	if err != nil {
		if got == 0 && sdk.IsUnsupported(err) {
			// nothing was made: this daemon cannot make this sandbox
			// (a backend it was not given), the direct path may
			return 125, &fallback{why: "the daemon cannot make this sandbox: " + err.Error()}
		}
		return interrupted(err)
	}
	tracef("sandbox created")
	if p.verbose {
		fmt.Fprintf(stderr, "airlock run: through the daemon at %s: sandbox %s\n", cli.Esc(p.socket), sb.ID)
	}
	execEnded := false // the daemon destroys the one-shot sandbox then
	defer func() {
		// After a signal the teardown is waited for: the run's promise is
		// that nothing of it is left once airlock exits on a signal.
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		if got != 0 {
			_ = cl.DestroySandbox(dctx, sb.ID)
		} else if !execEnded {
			if derr := cl.DestroySandboxNoWait(dctx, sb.ID); derr != nil {
				_ = cl.DestroySandbox(dctx, sb.ID)
			}
		}
		tracef("done")
	}()
	if o.workspace != "" {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarball.WriteDir(pw, o.workspace)) }()
		if err := cl.UploadTar(ctx, sb.ID, "/workspace", pr); err != nil {
			pr.CloseWithError(err)
			return interrupted(fmt.Errorf("--workspace %s: copying it into the sandbox: %w", o.workspace, err))
		}
	}
	// The daemon's policy judges CMD. One it holds for an operator's
	// approval fails at once (126) with the approval's id, never a silent
	// wait of the daemon's --approval-wait.
	req := sdk.ExecRequest{Argv: argv, Cwd: o.dir, Timeout: o.timeout, OutputLimit: o.output, NoApprovalWait: true}
	if stdinData != nil {
		req.Stdin = bytes.NewReader(stdinData)
	}
	st, err := cl.Exec(ctx, sb.ID, req, stdout, stderr)
	tracef("exec done")
	// A status means the exec ran its course in the daemon, which is
	// destroying the one-shot sandbox; after anything else (a refusal
	// that may have come before the sandbox was looked at, a broken
	// stream) the DELETE above is sent too (of a stopped one: a no-op).
	execEnded = err == nil
	if err != nil {
		if got != 0 {
			return interrupted(err)
		}
		var e *sdk.Error
		if sdk.IsApprovalPending(err) && errors.As(err, &e) && e.ApprovalID != "" {
			err = fmt.Errorf("%w; nothing ran: an operator decides with 'airlock approve %s' (then run it again), or --direct runs it without the daemon and its policy", err, e.ApprovalID)
		}
		return execFailedCode(ctx, cl, sb.ID, argv, err), err
	}
	reportDaemonLimits(st, o.timeout, sb.Limits, stderr)
	return st.Code, nil
}

// createRequest is the sandbox of o, as the direct path would make it.
// Values the direct path leaves to the backend are sent as the backend's
// defaults where the daemon's own could differ (memory), and as 0 where
// the daemon's backend default is the same one (pids, disk, tmp, ptys:
// fixed at create, and a warm pool claims only at 0).
func (o *runOpts) createRequest() sdk.CreateRequest {
	req := sdk.CreateRequest{Template: o.template, Backend: o.backend.name, Env: slices.Clone([]string(o.env)), OneShot: true}
	req.Limits = sdk.Limits{MemoryBytes: o.memory, CPUs: o.cpus, DiskBytes: o.disk, TmpBytes: o.tmp, Ptys: o.ptys}
	if req.Limits.MemoryBytes == 0 {
		req.Limits.MemoryBytes = native.DefaultMemory
	}
	if o.pids != native.DefaultPids {
		req.Limits.Pids = o.pids
	}
	return req
}

// execFailedCode is the exit status of an exec that returned no status:
// the conventional 127 (not found) or 126 (not executable) that the
// daemon's exec record holds, else 125 (airlock failed).
func execFailedCode(ctx context.Context, cl *sdk.Client, id string, argv []string, err error) int {
	var e *sdk.Error
	if sdk.IsPolicyDenied(err) || sdk.IsApprovalPending(err) {
		return 126
	}
	if !errors.As(err, &e) || (e.Code != sdk.CodeNotFound && e.Code != sdk.CodeInvalid) {
		return 125
	}
	if execs, lerr := cl.ListExecs(ctx, id); lerr == nil {
		for i := len(execs) - 1; i >= 0; i-- {
			if x := execs[i]; slices.Equal(x.Argv, argv) && x.Status != nil && x.Status.Code != 0 {
				return x.Status.Code
			}
		}
	}
	if e.Code == sdk.CodeNotFound {
		return 127
	}
	return 125
}

// reportDaemonLimits names a hit limit on stderr as the direct path does.
func reportDaemonLimits(st *sdk.ExitStatus, timeout time.Duration, lim sdk.Limits, stderr io.Writer) {
	switch st.Limit {
	case sdk.LimitTimeout:
		fmt.Fprintf(stderr, "airlock: command timed out after %s and was killed\n", timeout)
	case sdk.LimitMemory:
		fmt.Fprintf(stderr, "airlock: memory limit of %s exceeded; the command was killed (raise --memory)\n", cli.FmtBytes(lim.MemoryBytes))
	case sdk.LimitPids:
		fmt.Fprintf(stderr, "airlock: process limit of %d reached (raise --pids)\n", lim.Pids)
	case sdk.LimitDisk:
		fmt.Fprintf(stderr, "airlock: sandbox disk is full (limit %s for the writable layer, %s for /tmp; raise --disk or --tmp)\n", cli.FmtBytes(lim.DiskBytes), cli.FmtBytes(lim.TmpBytes))
	}
	if st.StdoutTruncated || st.StderrTruncated {
		fmt.Fprintf(stderr, "airlock: output truncated (stdout %d bytes, stderr %d bytes; raise --output-limit)\n", st.StdoutBytes, st.StderrBytes)
	}
}

// fallback is runViaDaemon's answer when nothing was made and the run
// may go the direct way instead.
type fallback struct{ why string }

func (f *fallback) Error() string { return f.why }
