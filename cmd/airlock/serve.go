package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/api"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/e2b"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
)

const serveUsage = `usage: airlock serve [flags]

Runs the airlock daemon: the HTTP+JSON API (docs/api.md) on a unix socket
(mode 0600), optionally on TCP (--listen) and as the E2B SDKs' API
(--e2b-listen); sandboxes on the native backend, or on gVisor when runsc is
installed and a request (or --template-backend) asks for it; their network
only through the egress proxy, as each sandbox's egress policy allows
(default: nothing); state in SQLite. Over TCP, a task's repository is cloned
only as the policy file's fetch: section allows (default: nothing). The audit
log's head is signed at start, at stop, and every --audit-checkpoint-events
events or --audit-checkpoint-interval. One daemon per state dir. SIGINT/SIGTERM
stop it; its sandboxes are destroyed, their records kept. Sandboxes die with
the daemon even if it is killed; the next start reaps what they left and
marks them lost.

flags:
`

func defaultSocket() string { return envOr("AIRLOCK_SOCKET", "/run/airlock/airlock.sock") }

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", serveUsage, stderr)
	socket := fs.String("socket", defaultSocket(), "unix socket to serve on (env AIRLOCK_SOCKET)")
	stateDir := fs.String("state-dir", envOr("AIRLOCK_STATE_DIR", "/run/airlock"), "runtime state directory (env AIRLOCK_STATE_DIR)")
	dataDir := fs.String("data-dir", envOr("AIRLOCK_DATA_DIR", "/var/lib/airlock"), "data directory: templates and the database (env AIRLOCK_DATA_DIR)")
	db := fs.String("db", "", "SQLite database (default DATA-DIR/airlock.db)")
	maxLife := duration(fs, "max-lifetime", 24*time.Hour, "longest a sandbox may live, from its creation, and its TTL when none is asked for: a `DURATION` such as 24h, 7d (0: unbounded)")
	listen := fs.String("listen", "", "also serve on this TCP `ADDR` (host:port), API key required (see 'airlock apikey')")
	e2bListen := fs.String("e2b-listen", "", "also serve the E2B-compatible API on this TCP `ADDR`: point E2B_API_URL and E2B_SANDBOX_URL at it (key: 'airlock apikey create --e2b')")
	policyFile := fs.String("policy", "", "policy `FILE` (YAML; see 'airlock policy default'); default: the built-in policy")
	approvalWait := duration(fs, "approval-wait", manager.DefaultApprovalWait, "how long a command held for approval waits by default: a `DURATION`, at most 1h (the CLI's exec waits as long as its own --approval-wait says)")
	var tplBackends listFlag
	var nat64 prefixFlag
	fs.Var(&nat64, "nat64-prefix", "a NAT64/DNS64 `PREFIX` of this host's network besides 64:ff9b::/96 and 64:ff9b:1::/48 (length 32, 40, 48, 56, 64 or 96; repeatable): egress judges an address under it by the IPv4 address it embeds")
	fs.Var(&tplBackends, "template-backend", "run the sandboxes of a template on a backend unless the request names one: `TEMPLATE=native|gvisor` (repeatable)")
	caps := defaultCaps()
	fs.Var(sizeFlag{&caps.Limits.MemoryBytes}, "max-memory", "the most memory one sandbox may ask for (`SIZE`, by default half the host's; 0: no bound)")
	fs.Var(sizeFlag{&caps.Limits.DiskBytes}, "max-disk", "the largest disk one sandbox may ask for (`SIZE`; 0: no bound)")
	fs.Var(sizeFlag{&caps.Limits.TmpBytes}, "max-tmp", "the largest /tmp one sandbox may ask for (`SIZE`, by default half the host's memory; 0: no bound)")
	fs.Int64Var(&caps.Limits.Pids, "max-pids", 0, "the most processes one sandbox may ask for (default: a quarter of what the host's kernel.pid_max leaves sandboxes, at most 32768; more than it leaves is refused; 0: no bound but the host's)")
	fs.Float64Var(&caps.Limits.CPUs, "max-cpus", caps.Limits.CPUs, "the most CPUs one sandbox may ask for (by default the host's; 0: no bound)")
	fs.Uint64Var(&caps.Limits.NoFile, "max-nofile", 0, "the most open files one sandbox process may ask for (default and most: fs.nr_open, and fs.file-max less a quarter over --max-sandboxes; by default at most 65536; 0: that)")
	fs.Int64Var(&caps.Limits.Ptys, "max-ptys", 0, "the most terminals one sandbox may ask for (default: a quarter of what the host's pty pool leaves sandboxes; more than it leaves is refused)")
	fs.IntVar(&caps.Sandboxes, "max-sandboxes", caps.Sandboxes, "the most sandboxes that may exist at once (0: no bound)")
	acceptGap := fs.String("accept-audit-gap", "", "start although the audit log's signed checkpoint is missing or does not match (a cut or rewritten log): `REASON` is recorded in the log, and a new checkpoint is signed")
	maxProxyConns := fs.Int("max-proxy-conns", runtime.DefaultMaxProxyConns, "the most proxy connections one sandbox may hold open; more are refused with a 503 and recorded (egress.refused)")
	ao := auditOpts{}
	fs.StringVar(&ao.keyFile, "audit-key", "", "the audit log's ed25519 signing key `FILE` (made on first start; default DATA-DIR/audit.key): on another disk or owned by another user than the database, rewriting the log and re-signing its checkpoint takes both")
	fs.IntVar(&ao.events, "audit-checkpoint-events", audit.DefaultCheckpointEvents, fmt.Sprintf("sign a checkpoint of the audit log after at most this many events (1..%d)", audit.MaxCheckpointEvents))
	durationVar(fs, &ao.interval, "audit-checkpoint-interval", audit.DefaultCheckpointInterval, "and at least this often while events are written: a `DURATION`, at most 1h")
	lim := egress.DefaultLimits
	fs.Float64Var(&lim.DNSRate, "egress-dns-rate", lim.DNSRate, "DNS queries a second one sandbox may send, in bursts of --egress-dns-burst; more are refused, not queued (0: no bound)")
	fs.IntVar(&lim.DNSBurst, "egress-dns-burst", lim.DNSBurst, "burst of --egress-dns-rate")
	fs.Float64Var(&lim.ConnRate, "egress-conn-rate", lim.ConnRate, "proxy connections a second one sandbox may open, in bursts of --egress-conn-burst; more are refused (429) (0: no bound)")
	fs.IntVar(&lim.ConnBurst, "egress-conn-burst", lim.ConnBurst, "burst of --egress-conn-rate")
	fs.Float64Var(&lim.ReqRate, "egress-request-rate", lim.ReqRate, "requests a second one sandbox may send on open proxy connections after each one's first (keep-alive, and in a brokered host's tunnel), in bursts of --egress-request-burst; more are refused (429) (0: no bound)")
	fs.IntVar(&lim.ReqBurst, "egress-request-burst", lim.ReqBurst, "burst of --egress-request-rate")
	refusalWindow := duration(fs, "egress-refusal-window", lim.RefusalWindow, "repeated egress refusals of one kind within this `DURATION` are recorded once plus one counted summary event")
	fs.Int64Var(&lim.BudgetEvents, "egress-audit-events", lim.BudgetEvents, "the most egress events one sandbox may put in the audit log in its life; past it its egress is cut (0: no bound)")
	fs.Var(sizeFlag{&lim.BudgetBytes}, "egress-audit-bytes", "the most bytes of egress events one sandbox may put in the audit log (`SIZE`); past it its egress is cut (0: no bound)")
	reserve := int64(audit.DefaultReserve)
	fs.Var(sizeFlag{&reserve}, "audit-reserve", "disk space (`SIZE`) kept next to the database for what must be recorded on a full disk: destroys and the daemon's stop (0: none)")
	noEgress := fs.Bool("no-egress", false, "run no egress proxy: sandboxes get no network at all (default: the proxy, which allows only what each sandbox's egress policy allows)")
	if code, done := parseFlags(fs, serveUsage, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "airlock serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *db == "" {
		*db = filepath.Join(*dataDir, "airlock.db")
	}
	if *maxLife < 0 {
		fmt.Fprintf(stderr, "airlock serve: --max-lifetime %s: must not be negative\n", *maxLife)
		return 2
	}
	if *approvalWait <= 0 || *approvalWait > manager.MaxApprovalWait {
		fmt.Fprintf(stderr, "airlock serve: --approval-wait %s: more than 0 and at most %s\n", *approvalWait, manager.MaxApprovalWait)
		return 2
	}
	if ao.events < 1 || ao.events > audit.MaxCheckpointEvents || ao.interval <= 0 || ao.interval > audit.MaxCheckpointInterval {
		fmt.Fprintf(stderr, "airlock serve: --audit-checkpoint-events 1..%d and --audit-checkpoint-interval more than 0 and at most %s\n", audit.MaxCheckpointEvents, audit.MaxCheckpointInterval)
		return 2
	}
	if ao.keyFile == "" {
		ao.keyFile = filepath.Join(*dataDir, "audit.key")
	}
	var pol *policy.File
	if *policyFile != "" {
		var err error
		if pol, err = manager.LoadPolicyFile(*policyFile); err != nil {
			fmt.Fprintf(stderr, "airlock serve: %v\n", err)
			return 2
		}
	}
	byTemplate := map[string]string{}
	for _, tb := range tplBackends {
		name, be, ok := strings.Cut(tb, "=")
		if !ok || name == "" || (be != "native" && be != "gvisor") {
			fmt.Fprintf(stderr, "airlock serve: --template-backend %q: use TEMPLATE=native or TEMPLATE=gvisor\n", tb)
			return 2
		}
		byTemplate[name] = be
	}
	if caps.Limits.MemoryBytes < 0 || caps.Limits.DiskBytes < 0 || caps.Limits.TmpBytes < 0 || caps.Limits.Pids < 0 || caps.Limits.CPUs < 0 || caps.Sandboxes < 0 {
		fmt.Fprintln(stderr, "airlock serve: --max-* must not be negative (0: no bound)")
		return 2
	}
	if *maxProxyConns <= 0 {
		fmt.Fprintf(stderr, "airlock serve: --max-proxy-conns %d: must be at least 1\n", *maxProxyConns)
		return 2
	}
	lim.RefusalWindow = *refusalWindow
	if lim.DNSRate < 0 || lim.ConnRate < 0 || lim.ReqRate < 0 || lim.DNSBurst < 1 || lim.ConnBurst < 1 || lim.ReqBurst < 1 || lim.BudgetEvents < 0 || lim.BudgetBytes < 0 || lim.RefusalWindow <= 0 || reserve < 0 {
		fmt.Fprintln(stderr, "airlock serve: --egress-* rates and budgets and --audit-reserve must not be negative (0: no bound), bursts at least 1, --egress-refusal-window more than 0")
		return 2
	}
	for _, f := range []*float64{&lim.DNSRate, &lim.ConnRate, &lim.ReqRate} {
		if *f == 0 {
			*f = -1 // the flag's 0 is no bound; egress.Limits' is the default
		}
	}
	for _, n := range []*int64{&lim.BudgetEvents, &lim.BudgetBytes} {
		if *n == 0 {
			*n = -1
		}
	}
	if caps.Limits.Ptys < 0 {
		fmt.Fprintln(stderr, "airlock serve: --max-* must not be negative (0: no bound)")
		return 2
	}
	tables, err := readHostTables("/proc/sys")
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// the defaults' own bounds, which fitCaps lowers to the host's
	if !set["max-pids"] {
		caps.Limits.Pids = defaultCaps().Limits.Pids
	}
	if !set["max-nofile"] {
		caps.Limits.NoFile = defaultCaps().Limits.NoFile
	}
	caps, msg, err := fitCaps(caps, tables, func(name string) bool { return set[name] })
	if err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "airlock serve: %s\n", msg)
	if err := serve(*socket, *listen, *e2bListen, *stateDir, *dataDir, *db, *maxLife, caps, pol, *approvalWait, !*noEgress, *maxProxyConns, nat64, byTemplate, *acceptGap, ao, floodBounds{lim, reserve}, stderr); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	return 0
}

// floodBounds are what bounds one sandbox's share of the audit log, and
// the space kept for records on a full disk.
type floodBounds struct {
	egress  egress.Limits
	reserve int64 // 0: no reserve
}

func serve(socket, listen, e2bListen, stateDir, dataDir, dbPath string, maxLife time.Duration, caps manager.Caps, pol *policy.File, approvalWait time.Duration, withEgress bool, maxProxyConns int, nat64 []netip.Prefix, byTemplate map[string]string, acceptGap string, ao auditOpts, fb floodBounds, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	if err := os.MkdirAll(stateDir, 0o711); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(stateDir, "daemon.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("another airlock daemon is running with state dir %s (stop it first)", stateDir)
	}
	be, err := openNative(stateDir, dataDir, true, logf)
	if err != nil {
		return err
	}
	if len(be.Reaped) > 0 {
		logf("reaped %d leftover sandboxes", len(be.Reaped))
	}
	// gVisor, for sandboxes that ask for it (backend "gvisor"); missing,
	// asking for it is an error that says how to install it.
	backends, unavailable := map[string]runtime.Backend{}, map[string]string{}
	gopts := backendOpts{runsc: envOr("AIRLOCK_RUNSC", "runsc"), platform: os.Getenv("AIRLOCK_GVISOR_PLATFORM")}
	if g, err := openBackend(gopts, "gvisor", stateDir, dataDir, true, logf); err == nil {
		backends["gvisor"] = g
	} else {
		unavailable["gvisor"] = err.Error()
		logf("gvisor backend unavailable: %v", err)
	}
	tpls, err := template.Open(filepath.Join(dataDir, "templates"))
	if err != nil {
		return err
	}
	st, err := store.Open(dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	red := redact.New()
	acfg := audit.Config{Store: st, Redactor: red, KeyFile: ao.keyFile}
	if fb.reserve > 0 {
		acfg.ReserveFile, acfg.ReserveBytes = filepath.Join(filepath.Dir(dbPath), "audit.reserve"), fb.reserve
	}
	alog, err := audit.Open(ctx, acfg)
	if err != nil {
		return err
	}
	checkpoint := filepath.Join(filepath.Dir(dbPath), "audit-head.json")
	// The last signed head must still be in the log: a log cut short or
	// rewritten while the daemon was down is refused, not continued,
	// unless the operator accepts the gap, which the log then records.
	if err := audit.CheckStart(ctx, alog, st, checkpoint); err != nil {
		if acceptGap == "" {
			return fmt.Errorf("%v (see 'airlock audit verify --db %s'; to start anyway, with the gap on record: --accept-audit-gap REASON)", err, dbPath)
		}
		logf("AUDIT GAP ACCEPTED (%s): %v", acceptGap, err)
		if _, err := alog.Record(ctx, audit.Entry{Actor: "operator", Kind: "audit.gap_accepted", Payload: map[string]any{"reason": acceptGap, "problem": err.Error()}}); err != nil {
			return err
		}
	}
	// A checkpoint at every start: a daemon that dies without stopping
	// still leaves one that names this head.
	if _, err := alog.Checkpoint(checkpoint); err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	// And while it runs: what a cut or a rewrite can take unnoticed is
	// bounded by the unsigned tail (README, "The audit record").
	stopCheckpoints, err := alog.StartCheckpoints(checkpoint, ao.events, ao.interval, logf)
	if err != nil {
		return err
	}
	defer stopCheckpoints()
	var egressCfg *egress.Config
	if withEgress {
		// The package registries policies may name, as this machine's
		// package managers are configured.
		presets, err := egress.DiscoverPresets(ctx, egress.DiscoverEnv{})
		if err != nil {
			logf("egress presets: %v", err)
		}
		for _, name := range []string{"npm", "go", "pypi", "debian", "crates"} {
			if len(presets[name]) == 0 {
				logf("egress preset %s: no hosts found in this machine's configuration; a policy naming it allows nothing", name)
			}
		}
		egressCfg = &egress.Config{Presets: presets, Logger: log, Limits: fb.egress, NAT64Prefixes: nat64}
	}
	m, err := manager.New(ctx, manager.Config{Egress: egressCfg, Backend: be, Backends: backends, Unavailable: unavailable, TemplateBackends: byTemplate, Templates: tpls, Store: st, TaskDir: filepath.Join(dataDir, "tasks"), MaxLifetime: maxLife, Caps: caps,
		Policy: pol, ApprovalWait: approvalWait, Audit: alog, AuditCheckpoint: checkpoint, Redactor: red, Logf: logf,
		SecretKeyFile: filepath.Join(dataDir, "secrets.key"), MaxProxyConns: maxProxyConns})
	if err != nil {
		return err
	}
	// We hold the daemon lock: a socket file left here is stale.
	if err := os.MkdirAll(filepath.Dir(socket), 0o711); err != nil {
		return err
	}
	_ = os.Remove(socket)
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", socket)
	unix.Umask(old)
	if err != nil {
		return err
	}
	defer os.Remove(socket)
	if err := os.Chmod(socket, 0o600); err != nil {
		return err
	}
	handler := api.New(m, api.Health{OK: true, Version: version, Backend: be.Name(), Cgroup: be.CgroupMode()})
	srv := &http.Server{Handler: guardBodies(handler), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	logf("serving on unix:%s (state %s, database %s)", socket, stateDir, dbPath)
	_ = m.Record(manager.WithActor(ctx, "airlock"), audit.Entry{Kind: "daemon.start", Payload: map[string]any{"version": version, "pid": os.Getpid(), "socket": socket, "listen": listen}})
	var tcpSrv *http.Server
	if listen != "" {
		tln, err := net.Listen("tcp", listen)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("--listen %s: %w", listen, err)
		}
		tcpSrv = &http.Server{Handler: guardBodies(handler.TCP()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
		go func() { errc <- tcpSrv.Serve(netutil.LimitListener(tln, connCap())) }()
		logf("serving on tcp:%s (API key required)", tln.Addr())
	}
	var e2bSrv *http.Server
	if e2bListen != "" {
		eln, err := net.Listen("tcp", e2bListen)
		if err != nil {
			_ = srv.Close()
			if tcpSrv != nil {
				_ = tcpSrv.Close()
			}
			return fmt.Errorf("--e2b-listen %s: %w", e2bListen, err)
		}
		wait := approvalWait
		if wait > 50*time.Second {
			wait = 50 * time.Second // under the E2B SDKs' 60 s request timeout
		}
		e2bSrv = &http.Server{Handler: guardBodies(e2b.New(e2b.Config{Manager: m, ApprovalWait: wait, Logf: logf})), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
		go func() { errc <- e2bSrv.Serve(netutil.LimitListener(eln, connCap())) }()
		logf("serving the E2B-compatible API on tcp:%s (API key required)", eln.Addr())
	}

	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	select {
	case sig := <-sigc:
		logf("%v: shutting down", sig)
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			_ = m.Shutdown(context.Background())
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if tcpSrv != nil {
		_ = tcpSrv.Shutdown(sctx)
	}
	if e2bSrv != nil {
		// Streams of running commands do not end on their own: close them.
		_ = e2bSrv.Close()
	}
	err = m.Shutdown(context.Background())
	_ = m.Record(manager.WithActor(ctx, "airlock"), audit.Entry{Kind: "daemon.stop", Payload: map[string]any{"pid": os.Getpid()}}) // essential: written on a full disk too
	stopCheckpoints()
	if _, cerr := alog.Checkpoint(checkpoint); cerr != nil {
		logf("audit checkpoint: %v", cerr)
	}
	if err != nil {
		return err
	}
	logf("stopped")
	return nil
}

// auditOpts are serve's audit log settings.
type auditOpts struct {
	keyFile  string
	events   int
	interval time.Duration
}

// idleTimeout closes a kept-alive connection that sends no new request.
const idleTimeout = 60 * time.Second

// guardBodies: on every listener, a request body must keep coming (see
// api.BodyGuard); headers are bounded by ReadHeaderTimeout.
func guardBodies(h http.Handler) http.Handler {
	return api.BodyGuard(h, api.BodyIdleTimeout, api.BodyMinRate, api.BodyRateGrace)
}

// connCap bounds the open connections of each TCP listener, so that
// clients that open thousands and leave them idle (no key needed for
// that) cannot use up the descriptors that the unix socket and the
// sandboxes need: more wait in the kernel's accept queue. A quarter of
// the descriptor limit, at most 1024.
func connCap() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur/4 > 1024 {
		return 1024
	}
	return max(int(rl.Cur/4), 16)
}

// defaultCaps: what one sandbox may ask for by default is what this host
// can give without one sandbox taking it whole (half its memory, as /tmp
// too, all its CPUs, 32768 processes, a 64 GiB disk, 65536 open files),
// and 256 sandboxes at once; fitCaps then bounds them by the host's tables.
func defaultCaps() manager.Caps {
	c := manager.Caps{Sandboxes: 256}
	c.Limits.Pids, c.Limits.DiskBytes, c.Limits.NoFile = 32768, 64<<30, 65536
	c.Limits.CPUs = float64(goruntime.NumCPU())
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		half := int64(si.Totalram) * int64(si.Unit) / 2
		c.Limits.MemoryBytes, c.Limits.TmpBytes = half, half
	}
	return c
}
