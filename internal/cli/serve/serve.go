// Package serve is 'airlock serve': its flags into a daemon.Config (caps
// fitted to the host's tables, policy, egress bounds) and the signals that
// stop it; the daemon's wiring is internal/daemon.
package serve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/daemon"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/pool"
	"github.com/airlock-dev/airlock/internal/runtime"
)

const serveUsage = `usage: airlock serve [flags]

Runs the airlock daemon: the HTTP+JSON API (docs/api.md) on a unix socket
(mode 0600), optionally on TCP (--listen) and as the E2B SDKs' API
(--e2b-listen; sandbox hosts <port>-<id>.DOMAIN with --e2b-domain, TLS with
--e2b-tls-cert/--e2b-tls-key); sandboxes on the native backend, or on gVisor when runsc is
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

func defaultSocket() string { return cli.EnvOr("AIRLOCK_SOCKET", "/run/airlock/airlock.sock") }

func CmdServe(args []string, stdout, stderr io.Writer) int {
	fs := cli.NewFlagSet("serve", serveUsage, stderr)
	socket := fs.String("socket", defaultSocket(), "unix socket to serve on (env AIRLOCK_SOCKET)")
	stateDir := fs.String("state-dir", cli.EnvOr("AIRLOCK_STATE_DIR", "/run/airlock"), "runtime state directory (env AIRLOCK_STATE_DIR)")
	dataDir := fs.String("data-dir", cli.EnvOr("AIRLOCK_DATA_DIR", "/var/lib/airlock"), "data directory: templates and the database (env AIRLOCK_DATA_DIR)")
	db := fs.String("db", "", "SQLite database (default DATA-DIR/airlock.db)")
	maxLife := cli.Duration(fs, "max-lifetime", 24*time.Hour, "longest a sandbox may live, from its creation, and its TTL when none is asked for: a `DURATION` such as 24h, 7d (0: unbounded)")
	listen := fs.String("listen", "", "also serve on this TCP `ADDR` (host:port), API key required (see 'airlock apikey')")
	e2bListen := fs.String("e2b-listen", "", "also serve the E2B-compatible API on this TCP `ADDR`: point E2B_API_URL and E2B_SANDBOX_URL at it (key: 'airlock apikey create --e2b')")
	policyFile := fs.String("policy", "", "policy `FILE` (YAML; see 'airlock policy default'); default: the built-in policy")
	approvalWait := cli.Duration(fs, "approval-wait", approvals.DefaultWait, "how long a command held for approval waits by default: a `DURATION`, at most 1h (the CLI's exec waits as long as its own --approval-wait says)")
	var tplBackends cli.ListFlag
	var nat64 cli.PrefixFlag
	fs.Var(&nat64, "nat64-prefix", "a NAT64/DNS64 `PREFIX` of this host's network besides 64:ff9b::/96 and 64:ff9b:1::/48 (length 32, 40, 48, 56, 64 or 96; repeatable): egress judges an address under it by the IPv4 address it embeds")
	var pools cli.ListFlag
	fs.Var(&pools, "pool", "keep warm sandboxes of a template ready: `TEMPLATE[@BACKEND]=MIN[:MAX]` (repeatable; backend: the template's; a create of the pool's shape claims one, see docs/api.md); they count against --max-sandboxes")
	fs.Var(&tplBackends, "template-backend", "run the sandboxes of a template on a backend unless the request names one: `TEMPLATE=native|gvisor` (repeatable)")
	caps := defaultCaps()
	fs.Var(cli.SizeFlag{V: &caps.Limits.MemoryBytes}, "max-memory", "the most memory one sandbox may ask for (`SIZE`, by default half the host's; 0: no bound)")
	fs.Var(cli.SizeFlag{V: &caps.Limits.DiskBytes}, "max-disk", "the largest disk one sandbox may ask for (`SIZE`; 0: no bound)")
	fs.Var(cli.SizeFlag{V: &caps.Limits.TmpBytes}, "max-tmp", "the largest /tmp one sandbox may ask for (`SIZE`, by default half the host's memory; 0: no bound)")
	fs.Int64Var(&caps.Limits.Pids, "max-pids", 0, "the most processes one sandbox may ask for (default: a quarter of what the host's kernel.pid_max leaves sandboxes, at most 32768; more than it leaves is refused; 0: no bound but the host's)")
	fs.Float64Var(&caps.Limits.CPUs, "max-cpus", caps.Limits.CPUs, "the most CPUs one sandbox may ask for (by default the host's; 0: no bound)")
	fs.Uint64Var(&caps.Limits.NoFile, "max-nofile", 0, "the most open files one sandbox process may ask for (default and most: fs.nr_open, and fs.file-max less a quarter over --max-sandboxes; by default at most 65536; 0: that)")
	fs.Int64Var(&caps.Limits.Ptys, "max-ptys", 0, "the most terminals one sandbox may ask for (default: a quarter of what the host's pty pool leaves sandboxes; more than it leaves is refused)")
	fs.IntVar(&caps.Sandboxes, "max-sandboxes", caps.Sandboxes, "the most sandboxes that may exist at once (0: no bound); the daemon warns at start when the host's kernel.pid_max or kernel.pty.max, or its own open-file limit, cannot hold that many")
	acceptGap := fs.String("accept-audit-gap", "", "start although the audit log's signed checkpoint is missing or does not match (a cut or rewritten log): `REASON` is recorded in the log, and a new checkpoint is signed")
	maxProxyConns := fs.Int("max-proxy-conns", runtime.DefaultMaxProxyConns, "the most proxy connections one sandbox may hold open; more are refused with a 503 and recorded (egress.refused)")
	var cfg daemon.Config
	fs.Var(quotaFlag{&cfg.ProjectQuotas}, "project-quota", "every project's quotas but those it sets itself ('airlock project quota'): `sandboxes=N,memory=SIZE,cpus=N,disk=SIZE,execs=N,output=SIZE,egress=SIZE` (live sandboxes; the sum of their memory, CPU and disk limits, where a limit left unset counts the backend's default and no CPU limit every core; commands a minute; the commands' output the store keeps; the bytes their egress moves in 24 hours; any subset; 0 or unset: no bound)")
	fs.Float64Var(&cfg.KeyRate.PerSecond, "key-rate", 0, "requests a second one API key may send over TCP (the API's listeners and the E2B door's control plane draw on one bucket per key), in bursts of --key-burst; more are answered 429 (rate_limited) with Retry-After (0: no bound)")
	fs.IntVar(&cfg.KeyRate.Burst, "key-burst", 0, "burst of --key-rate (0: --key-rate rounded up)")
	fs.StringVar(&cfg.AuditKeyFile, "audit-key", "", "the audit log's ed25519 signing key `FILE` (made on first start; default DATA-DIR/audit.key): on another disk or owned by another user than the database, rewriting the log and re-signing its checkpoint takes both")
	fs.IntVar(&cfg.CheckpointEvents, "audit-checkpoint-events", audit.DefaultCheckpointEvents, fmt.Sprintf("sign a checkpoint of the audit log after at most this many events (1..%d)", audit.MaxCheckpointEvents))
	cli.DurationVar(fs, &cfg.CheckpointInterval, "audit-checkpoint-interval", audit.DefaultCheckpointInterval, "and at least this often while events are written: a `DURATION`, at most 1h")
	lim := egress.DefaultLimits
	fs.Float64Var(&lim.DNSRate, "egress-dns-rate", lim.DNSRate, "DNS queries a second one sandbox may send, in bursts of --egress-dns-burst; more are refused, not queued (0: no bound)")
	fs.IntVar(&lim.DNSBurst, "egress-dns-burst", lim.DNSBurst, "burst of --egress-dns-rate")
	fs.Float64Var(&lim.ConnRate, "egress-conn-rate", lim.ConnRate, "proxy connections a second one sandbox may open, in bursts of --egress-conn-burst; more are refused (429) (0: no bound)")
	fs.IntVar(&lim.ConnBurst, "egress-conn-burst", lim.ConnBurst, "burst of --egress-conn-rate")
	fs.Float64Var(&lim.ReqRate, "egress-request-rate", lim.ReqRate, "requests a second one sandbox may send on open proxy connections after each one's first (keep-alive, and in a brokered host's tunnel), in bursts of --egress-request-burst; more are refused (429) (0: no bound)")
	fs.IntVar(&lim.ReqBurst, "egress-request-burst", lim.ReqBurst, "burst of --egress-request-rate")
	refusalWindow := cli.Duration(fs, "egress-refusal-window", lim.RefusalWindow, "repeated egress refusals of one kind within this `DURATION` are recorded once plus one counted summary event")
	fs.Int64Var(&lim.BudgetEvents, "egress-audit-events", lim.BudgetEvents, "the most egress events one sandbox may put in the audit log in its life; past it its egress is cut (0: no bound)")
	fs.Var(cli.SizeFlag{V: &lim.BudgetBytes}, "egress-audit-bytes", "the most bytes of egress events one sandbox may put in the audit log (`SIZE`); past it its egress is cut (0: no bound)")
	reserve := int64(audit.DefaultReserve)
	fs.Var(cli.SizeFlag{V: &reserve}, "audit-reserve", "disk space (`SIZE`) kept next to the database for what must be recorded on a full disk: destroys and the daemon's stop (0: none)")
	noEgress := fs.Bool("no-egress", false, "run no egress proxy: sandboxes get no network at all (default: the proxy, which allows only what each sandbox's egress policy allows)")
	depCache := fs.Bool("dep-cache", false, "keep per-project dependency caches in DATA-DIR/depcache: a task gets its project's Go modules, npm tarballs and pip wheels and sdists that earlier tasks downloaded through the egress proxy and that the base commit's go.sum, package-lock.json or requirements.txt --hash pins (airlock cache ls|clear)")
	e2bf := addE2BFlags(fs)
	if code, done := cli.ParseFlags(fs, serveUsage, args, stdout); done {
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
	if *approvalWait <= 0 || *approvalWait > sandbox.MaxApprovalWait {
		fmt.Fprintf(stderr, "airlock serve: --approval-wait %s: more than 0 and at most %s\n", *approvalWait, sandbox.MaxApprovalWait)
		return 2
	}
	if cfg.CheckpointEvents < 1 || cfg.CheckpointEvents > audit.MaxCheckpointEvents || cfg.CheckpointInterval <= 0 || cfg.CheckpointInterval > audit.MaxCheckpointInterval {
		fmt.Fprintf(stderr, "airlock serve: --audit-checkpoint-events 1..%d and --audit-checkpoint-interval more than 0 and at most %s\n", audit.MaxCheckpointEvents, audit.MaxCheckpointInterval)
		return 2
	}
	if cfg.KeyRate.PerSecond < 0 || cfg.KeyRate.PerSecond != cfg.KeyRate.PerSecond || cfg.KeyRate.Burst < 0 {
		fmt.Fprintf(stderr, "airlock serve: --key-rate and --key-burst must not be negative\n")
		return 2
	}
	if cfg.AuditKeyFile == "" {
		cfg.AuditKeyFile = filepath.Join(*dataDir, "audit.key")
	}
	var pol *policy.File
	if *policyFile != "" {
		var err error
		if pol, err = loadPolicyFile(*policyFile); err != nil {
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
	var poolSpecs []pool.Spec
	for _, v := range pools {
		ps, err := pool.ParseSpec(v)
		if err == nil && ps.Backend != "" && ps.Backend != "native" && ps.Backend != "gvisor" {
			err = fmt.Errorf("pool %q: backend: use native or gvisor", v)
		}
		if err != nil {
			fmt.Fprintf(stderr, "airlock serve: --pool: %v\n", err)
			return 2
		}
		poolSpecs = append(poolSpecs, ps)
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
	tables, err := ReadHostTables("/proc/sys")
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
	// What the caps were fitted to is the daemon's first log line, in the
	// daemon's log style (slog's text, as internal/daemon logs); only
	// usage and start errors are the CLI's own "airlock serve: ..." lines.
	lg := slog.New(slog.NewTextHandler(stderr, nil))
	lg.Info(msg)
	if w := DensityWarning(caps, tables); w != "" {
		lg.Warn(w)
	}
	var nofile unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile); err == nil {
		if w := FilesWarning(caps.Sandboxes, nofile.Cur); w != "" {
			lg.Warn(w)
		}
	}
	cfg.Socket, cfg.Listen, cfg.E2BListen, cfg.StateDir, cfg.DataDir, cfg.DB = *socket, *listen, *e2bListen, *stateDir, *dataDir, *db
	if err := e2bf.apply(&cfg); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 2
	}
	cfg.MaxLifetime, cfg.Caps, cfg.Policy, cfg.ApprovalWait, cfg.NoEgress = *maxLife, caps, pol, *approvalWait, *noEgress
	cfg.DepCache = *depCache
	cfg.MaxProxyConns, cfg.NAT64Prefixes, cfg.TemplateBackends, cfg.AcceptAuditGap = *maxProxyConns, nat64, byTemplate, *acceptGap
	cfg.Pools = poolSpecs
	cfg.EgressLimits, cfg.AuditReserve = lim, reserve
	cfg.Runsc, cfg.GVisorPlatform = cli.EnvOr("AIRLOCK_RUNSC", "runsc"), os.Getenv("AIRLOCK_GVISOR_PLATFORM")
	cfg.Version, cfg.Log = cli.Version, stderr
	if err := serve(cfg); err != nil {
		fmt.Fprintf(stderr, "airlock serve: %v\n", err)
		return 1
	}
	return 0
}

// serve runs the daemon of cfg until SIGINT or SIGTERM.
func serve(cfg daemon.Config) error {
	d, err := daemon.New(context.Background(), cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		select {
		case sig := <-sigc:
			cancel(signalCause{sig}) // logged as "SIGNAL: shutting down"
		case <-ctx.Done():
		}
	}()
	return d.Serve(ctx)
}

// signalCause is a signal as the cause of a cancelled context.
type signalCause struct{ os.Signal }

func (s signalCause) Error() string { return s.String() }

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

// loadPolicyFile reads a policy file for the manager's Config.Policy.
func loadPolicyFile(path string) (*policy.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	f, err := policy.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return f, nil
}
