// Package daemon wires the airlock daemon: the backends, the template
// store, the database, the audit log (with its start check and
// checkpoints), the egress service, the manager, and the API's listeners
// (unix socket, optional TCP, optional E2B door). `airlock serve` builds
// it from one Config; flags and signals stay with the caller.
//
// It installs no signal handlers: whoever calls Serve decides when to stop
// by cancelling its context.
package daemon

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/projects"
	"github.com/airlock-dev/airlock/internal/quotas"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/api"
	"github.com/airlock-dev/airlock/internal/apikeys"
	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/e2b"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/filesapi"
	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/pool"
	"github.com/airlock-dev/airlock/internal/records"
	"github.com/airlock-dev/airlock/internal/redact"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/native"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/usage"
)

// Config is what a daemon is built from. New validates nothing that a
// flag parser checks (ranges, signs); it fills the zero values noted.
type Config struct {
	// Socket is the unix socket the API is served on (mode 0600);
	// required. A file left at its path is removed: the daemon lock
	// proves it stale.
	Socket string
	// Listen, if set, is a TCP host:port also serving the API, with an
	// API key required.
	Listen string
	// E2BListen, if set, is a TCP host:port serving the E2B-compatible API.
	E2BListen string
	// E2BDomain, if set, routes sandbox hosts <port>-<id>.E2BDomain on
	// E2BListen (e2b.Config.Domain).
	E2BDomain string
	// E2BTLSCert and E2BTLSKey, if set, are the PEM certificate and key
	// E2BListen serves TLS with.
	E2BTLSCert, E2BTLSKey string
	// StateDir is the runtime state directory (made 0711); one daemon per
	// state dir, held by a lock in it. Required.
	StateDir string
	// DataDir holds templates, tasks, disks, keys and by default the
	// database. Required.
	DataDir string
	// DB is the SQLite database ("": DataDir/airlock.db). The audit
	// checkpoint and reserve files live next to it.
	DB string
	// MaxLifetime is the longest a sandbox may live, and its TTL when none
	// is asked for (0: unbounded).
	MaxLifetime time.Duration
	// Caps bound what one sandbox may ask for and how many exist at once
	// (zero fields: no bound).
	Caps manager.Caps
	// Policy is the policy file (nil: the built-in policy).
	Policy *policy.File
	// ApprovalWait is how long a held command waits by default (0:
	// approvals.DefaultWait); the E2B door waits at most 50 s.
	ApprovalWait time.Duration
	// NoEgress runs no egress proxy: sandboxes get no network at all.
	NoEgress bool
	// DepCache keeps per-project dependency caches in DataDir/depcache
	// (internal/depcache); false: none, tasks start with their
	// template's caches.
	DepCache bool
	// MaxProxyConns caps each sandbox's open proxy connections (0:
	// runtime.DefaultMaxProxyConns).
	MaxProxyConns int
	// NAT64Prefixes are NAT64/DNS64 prefixes besides the well-known ones.
	NAT64Prefixes []netip.Prefix
	// TemplateBackends maps a template to "native" or "gvisor" for
	// requests that name no backend.
	TemplateBackends map[string]string
	// Pools are the warm pools (none: every create starts a sandbox).
	Pools []pool.Spec
	// AcceptAuditGap, if set, is the operator's reason for starting
	// although the audit log's checkpoint is missing or does not match;
	// it is recorded in the log.
	AcceptAuditGap string
	// AuditKeyFile is the audit log's ed25519 key ("": DataDir/audit.key;
	// made on first start).
	AuditKeyFile string
	// CheckpointEvents and CheckpointInterval bound the unsigned tail of
	// the audit log (0: audit.DefaultCheckpointEvents and
	// audit.DefaultCheckpointInterval).
	CheckpointEvents   int
	CheckpointInterval time.Duration
	// EgressLimits bound one sandbox's egress rates and audit budget
	// (zero fields: egress's defaults; negative: no bound).
	EgressLimits egress.Limits
	// AuditReserve is the disk space kept next to the database for
	// essential records on a full disk (0: none).
	AuditReserve int64
	// Runsc is gVisor's runsc binary ("": "runsc" on PATH), and
	// GVisorPlatform its platform ("": runsc's own).
	Runsc          string
	GVisorPlatform string
	// ProjectQuotas are every project's quotas but those it sets itself
	// (zero fields: no bound; internal/quotas).
	ProjectQuotas quotas.Limits
	// KeyRate bounds each API key's requests over TCP (zero: no bound).
	KeyRate quotas.Rate
	// Version is reported by the health route and the daemon.start record.
	Version string
	// Log receives the daemon's log lines (slog text; nil: discarded).
	Log io.Writer
}

// Daemon is a started daemon: its listeners serve from New on. Serve
// waits for the end and shuts it down; Close shuts down one never served.
type Daemon struct {
	cfg             Config
	logf            func(string, ...any)
	checkpoint      string
	alog            *audit.Log
	m               *manager.Manager
	keys            *apikeys.Keys
	projects        *projects.Projects
	rates           *quotas.KeyRates // one bucket per key for every door (API, E2B)
	files           *filesapi.API
	usage           *usage.Usage
	records         *records.Records
	net             e2b.Networks // the network module, for the E2B door
	snaps           e2b.Snapshots
	srv, tcp, e2b   *http.Server
	errc            chan error
	release         []func() // undone in reverse order, last
	shutdownOnce    sync.Once
	shutdownErr     error
	stopCheckpoints func()
}

// defaults fills cfg's zero values.
func (cfg *Config) defaults() {
	if cfg.DB == "" {
		cfg.DB = filepath.Join(cfg.DataDir, "airlock.db")
	}
	if cfg.AuditKeyFile == "" {
		cfg.AuditKeyFile = filepath.Join(cfg.DataDir, "audit.key")
	}
	if cfg.ApprovalWait <= 0 {
		cfg.ApprovalWait = approvals.DefaultWait
	}
	if cfg.CheckpointEvents == 0 {
		cfg.CheckpointEvents = audit.DefaultCheckpointEvents
	}
	if cfg.CheckpointInterval == 0 {
		cfg.CheckpointInterval = audit.DefaultCheckpointInterval
	}
	if cfg.Runsc == "" {
		cfg.Runsc = "runsc"
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
}

// New opens everything the daemon needs, in this order: the state dir's
// lock, the backends (reaping what a dead daemon left), templates, the
// database, the audit log (checked against its last signed head, then
// checkpointed), egress, the manager, and the listeners, each serving as
// soon as it is open; the daemon.start record follows the unix socket's.
// On an error what was opened is released.
func New(ctx context.Context, cfg Config) (_ *Daemon, err error) {
	cfg.defaults()
	log := slog.New(slog.NewTextHandler(cfg.Log, nil))
	d := &Daemon{cfg: cfg, logf: func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }, errc: make(chan error, 3)}
	defer func() {
		if err != nil {
			d.releaseAll()
		}
	}()
	if err := d.lock(); err != nil {
		return nil, err
	}
	be, backends, unavailable, err := d.openBackends()
	if err != nil {
		return nil, err
	}
	tpls, err := template.Open(filepath.Join(cfg.DataDir, "templates"))
	if err != nil {
		return nil, err
	}
	st, err := store.Open(cfg.DB)
	if err != nil {
		return nil, err
	}
	d.release = append(d.release, func() { _ = st.Close() })
	red := redact.New()
	if err := d.openAudit(ctx, st, red); err != nil {
		return nil, err
	}
	// The manager with the feature modules, wired as in every test.
	stk, err := stack.New(ctx, stack.Config{Config: manager.Config{Backend: be, Backends: backends, Unavailable: unavailable, TemplateBackends: cfg.TemplateBackends,
		Templates: tpls, Store: st, MaxLifetime: cfg.MaxLifetime, Caps: cfg.Caps,
		Policy: cfg.Policy, Audit: d.alog, Redactor: red, Logf: d.logf},
		TaskDir: filepath.Join(cfg.DataDir, "tasks"), SnapshotDir: filepath.Join(cfg.DataDir, "snapshots"), SecretsKey: filepath.Join(cfg.DataDir, "secrets.key"),
		Egress: d.egressConfig(ctx, log), MaxProxyConns: cfg.MaxProxyConns, TrustDir: filepath.Join(cfg.StateDir, "trust"), ApprovalWait: cfg.ApprovalWait,
		DepCacheDir: depCacheDir(cfg), Pools: cfg.Pools, PoolsLater: true,
		Quotas: quotas.Config{Defaults: cfg.ProjectQuotas, Unset: unsetLimits()}})
	if err != nil {
		return nil, err
	}
	d.m, d.keys, d.files, d.records, d.net, d.usage = stk.Manager, stk.Keys, stk.Files, stk.Records, stk.Network, stk.Usage
	d.projects = stk.Projects
	d.rates = quotas.NewKeyRates(cfg.KeyRate, nil)
	if stk.Snapshots != nil {
		d.snaps = stk.Snapshots
	}
	if err := d.listen(ctx, api.New(d.m, apiModules(stk, d.alog, tpls, d.rates), api.Health{OK: true, Version: cfg.Version, Backend: be.Name(), Cgroup: be.CgroupMode()})); err != nil {
		return nil, err
	}
	// after listen's umask: a template the first fills build while it was
	// set got directories of mode 0600, and every create of it failed
	stk.Pools.Start()
	return d, nil
}

// depCacheDir is where the dependency caches are kept ("": none).
func depCacheDir(cfg Config) string {
	if !cfg.DepCache {
		return ""
	}
	return filepath.Join(cfg.DataDir, "depcache")
}

// apiModules are the stack's modules and the audit log as the API takes
// them.
func apiModules(s *stack.Stack, alog *audit.Log, tpls *template.Store, rates *quotas.KeyRates) api.Modules {
	mods := api.Modules{Images: images{store: tpls, secrets: s.Secrets}, Keys: s.Keys, Snapshots: s.Snapshots, Secrets: s.Secrets, Tasks: s.Tasks, Files: s.Files, Records: s.Records, Policies: s.Explain, Network: s.Network, Audit: alog, Approvals: s.Approvals, Review: s.Review, Caches: caches(s), Pools: s.Pools, Owners: s.Projects, Projects: s.Projects, Quotas: s.Quotas,
		KeyRates: rates}
	if s.Builds != nil {
		mods.Builds = s.Builds
	}
	return mods
}

// caches is the stack's dependency caches as the API takes them (nil:
// none, never a nil *depcache.Caches in the interface).
func caches(s *stack.Stack) api.Caches {
	if s.Caches == nil {
		return nil
	}
	return s.Caches
}

// lock takes the state dir's daemon lock: one daemon per state dir.
func (d *Daemon) lock() error {
	if err := os.MkdirAll(d.cfg.StateDir, 0o711); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(d.cfg.StateDir, "daemon.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	d.release = append(d.release, func() { _ = lock.Close() })
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("another airlock daemon is running with state dir %s (stop it first)", d.cfg.StateDir)
	}
	return nil
}

// openBackends opens the native backend, which must work, and gVisor,
// for sandboxes that ask for it: missing, asking for it is an error that
// says how to install it.
func (d *Daemon) openBackends() (*native.Backend, map[string]runtime.Backend, map[string]string, error) {
	be, err := OpenNative(d.cfg.StateDir, d.cfg.DataDir, true, d.logf)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(be.Reaped) > 0 {
		d.logf("reaped %d leftover sandboxes", len(be.Reaped))
	}
	backends, unavailable := map[string]runtime.Backend{}, map[string]string{}
	if g, err := OpenGVisor(d.cfg.StateDir, d.cfg.DataDir, d.cfg.Runsc, d.cfg.GVisorPlatform, true, d.logf); err == nil {
		backends["gvisor"] = g
	} else {
		unavailable["gvisor"] = err.Error()
		d.logf("gvisor backend unavailable: %v", err)
	}
	return be, backends, unavailable, nil
}

// openAudit opens the audit log and checks it against its last signed
// head: a log cut short or rewritten while the daemon was down is
// refused, not continued, unless the operator accepts the gap, which the
// log then records. Then it signs a checkpoint, at every start (a daemon
// that dies without stopping still leaves one that names this head), and
// starts the periodic ones: what a cut or a rewrite can take unnoticed is
// bounded by the unsigned tail (README, "The audit record").
func (d *Daemon) openAudit(ctx context.Context, st *store.Store, red *redact.Redactor) error {
	d.checkpoint = filepath.Join(filepath.Dir(d.cfg.DB), "audit-head.json")
	acfg := audit.Config{Store: st, Redactor: red, KeyFile: d.cfg.AuditKeyFile, CheckpointFile: d.checkpoint}
	if d.cfg.AuditReserve > 0 {
		acfg.ReserveFile, acfg.ReserveBytes = filepath.Join(filepath.Dir(d.cfg.DB), "audit.reserve"), d.cfg.AuditReserve
	}
	alog, err := audit.Open(ctx, acfg)
	if err != nil {
		return err
	}
	d.alog = alog
	if err := publishKey(d.cfg.AuditKeyFile, alog.PublicKey()); err != nil {
		return err
	}
	if err := audit.CheckStart(ctx, alog, st, d.checkpoint); err != nil {
		gap := d.cfg.AcceptAuditGap
		if gap == "" {
			return fmt.Errorf("%v (see 'airlock audit verify --db %s'; to start anyway, with the gap on record: --accept-audit-gap REASON)", err, d.cfg.DB)
		}
		d.logf("AUDIT GAP ACCEPTED (%s): %v", gap, err)
		if _, err := alog.Record(ctx, audit.Entry{Actor: "operator", Kind: "audit.gap_accepted", Payload: map[string]any{"reason": gap, "problem": err.Error()}}); err != nil {
			return err
		}
	}
	if _, err := alog.Checkpoint(d.checkpoint); err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	stop, err := alog.StartCheckpoints(d.checkpoint, d.cfg.CheckpointEvents, d.cfg.CheckpointInterval, d.logf)
	if err != nil {
		return err
	}
	d.stopCheckpoints = stop
	d.release = append(d.release, stop)
	return nil
}

// egressConfig is the egress service's configuration, nil with NoEgress,
// with the package registries policies may name as this machine's
// package managers are configured.
func (d *Daemon) egressConfig(ctx context.Context, log *slog.Logger) *egress.Config {
	if d.cfg.NoEgress {
		return nil
	}
	presets, err := egress.DiscoverPresets(ctx, egress.DiscoverEnv{})
	if err != nil {
		d.logf("egress presets: %v", err)
	}
	for _, name := range []string{"npm", "go", "pypi", "debian", "crates"} {
		if len(presets[name]) == 0 {
			d.logf("egress preset %s: no hosts found in this machine's configuration; a policy naming it allows nothing", name)
		}
	}
	return &egress.Config{Presets: presets, Logger: log, Limits: d.cfg.EgressLimits, NAT64Prefixes: d.cfg.NAT64Prefixes}
}

// listen opens every listener asked for (the unix socket at 0600, then
// the TCP ones) before serving on any: a daemon that answers its socket's
// health check is reachable on all its doors, and one door that cannot
// open leaves none open. Then it records daemon.start and serves.
func (d *Daemon) listen(ctx context.Context, handler *api.Server) error {
	socket := d.cfg.Socket
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
	d.release = append(d.release, func() { _ = os.Remove(socket) })
	if err := os.Chmod(socket, 0o600); err != nil {
		_ = ln.Close()
		return err
	}
	tln, eln, err := d.listenTCP()
	if err != nil {
		_ = ln.Close()
		return err
	}
	d.srv = &http.Server{Handler: guardBodies(handler), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
	if tln != nil {
		d.tcp = &http.Server{Handler: guardBodies(handler.TCP()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
	}
	if eln != nil {
		wait := min(d.cfg.ApprovalWait, 50*time.Second) // under the E2B SDKs' 60 s request timeout
		d.e2b = &http.Server{Handler: guardBodies(e2b.New(e2b.Config{Manager: d.m, Files: d.files, Usage: d.usage, Network: d.net, Snapshots: d.snaps, Redactor: d.records, Keys: d.keys, Rates: d.rates, Owners: d.projects, ApprovalWait: wait, Domain: d.cfg.E2BDomain, Logf: d.logf})), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idleTimeout}
	}
	_ = d.m.Record(sandbox.WithActor(ctx, "airlock"), audit.Entry{Kind: "daemon.start", Payload: map[string]any{"version": d.cfg.Version, "pid": os.Getpid(), "socket": socket, "listen": d.cfg.Listen}})
	go func() { d.errc <- d.srv.Serve(ln) }()
	d.logf("serving on unix:%s (state %s, database %s)", socket, d.cfg.StateDir, d.cfg.DB)
	if tln != nil {
		go func() { d.errc <- d.tcp.Serve(netutil.LimitListener(tln, connCap())) }()
		d.logf("serving on tcp:%s (API key required)", tln.Addr())
	}
	if eln != nil {
		go func() { d.errc <- d.e2b.Serve(netutil.LimitListener(eln, connCap())) }()
		d.logf("serving the E2B-compatible API on tcp:%s (API key required)", eln.Addr())
	}
	return nil
}

// listenTCP opens the --listen and --e2b-listen listeners asked for (nil
// for one not asked for), or neither.
func (d *Daemon) listenTCP() (tln, eln net.Listener, err error) {
	if d.cfg.Listen != "" {
		if tln, err = net.Listen("tcp", d.cfg.Listen); err != nil {
			return nil, nil, fmt.Errorf("--listen %s: %w", d.cfg.Listen, err)
		}
	}
	if d.cfg.E2BListen != "" {
		if eln, err = e2bListener(d.cfg.E2BListen, d.cfg.E2BTLSCert, d.cfg.E2BTLSKey); err != nil {
			if tln != nil {
				_ = tln.Close()
			}
			return nil, nil, err
		}
	}
	return tln, eln, nil
}

// Serve waits until ctx is done, then shuts the daemon down as Close
// does; the log names context.Cause(ctx) as the reason. A listener that
// fails ends it too: the manager is shut down (its sandboxes destroyed)
// and that error returned, with no daemon.stop record.
func (d *Daemon) Serve(ctx context.Context) error {
	select {
	case <-ctx.Done():
		d.logf("%v: shutting down", context.Cause(ctx))
	case err := <-d.errc:
		if !errors.Is(err, http.ErrServerClosed) {
			d.shutdownOnce.Do(func() {
				d.shutdownErr = err
				_ = d.m.Shutdown(context.Background())
				d.releaseAll()
			})
			return err
		}
	}
	return d.Close()
}

// Close shuts the daemon down, once: the listeners (the unix socket's
// and TCP's requests get up to 10 s; the E2B door's streams are cut),
// then the manager (its sandboxes destroyed, their records kept), then
// the daemon.stop record (essential: written on a full disk too), then
// the audit log's final checkpoint; last the database and the lock are
// released and the socket removed. It returns the manager's error.
func (d *Daemon) Close() error {
	d.shutdownOnce.Do(func() { d.shutdownErr = d.shutdown() })
	return d.shutdownErr
}

func (d *Daemon) shutdown() error {
	defer d.releaseAll()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(sctx)
	if d.tcp != nil {
		_ = d.tcp.Shutdown(sctx)
	}
	if d.e2b != nil {
		// Streams of running commands do not end on their own: close them.
		_ = d.e2b.Close()
	}
	err := d.m.Shutdown(context.Background())
	_ = d.m.Record(sandbox.WithActor(context.Background(), "airlock"), audit.Entry{Kind: "daemon.stop", Payload: map[string]any{"pid": os.Getpid()}}) // essential: written on a full disk too
	d.stopCheckpoints()
	if _, cerr := d.alog.Checkpoint(d.checkpoint); cerr != nil {
		d.logf("audit checkpoint: %v", cerr)
	}
	if err != nil {
		return err
	}
	d.logf("stopped")
	return nil
}

// releaseAll undoes what New opened, in reverse order.
func (d *Daemon) releaseAll() {
	for i := len(d.release) - 1; i >= 0; i-- {
		d.release[i]()
	}
	d.release = nil
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

// publishKey writes the audit key's public half next to it (KEY.pub,
// base64, world-readable): what reviewers verify bundles with, so that
// nobody is told to copy the private key (issue 19).
func publishKey(keyFile string, pub ed25519.PublicKey) error {
	p := strings.TrimSuffix(keyFile, ".key") + ".pub"
	tmp := p + ".new"
	if err := os.WriteFile(tmp, []byte(base64.StdEncoding.EncodeToString(pub)+"\n"), 0o644); err != nil {
		return fmt.Errorf("publish the audit public key: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("publish the audit public key: %w", err)
	}
	return nil
}

// unsetLimits is what a sandbox counts against its project's quotas of
// a limit it leaves to its backend: both backends' default memory and
// disk, and every core of the host for no CPU limit.
func unsetLimits() runtime.Limits {
	return runtime.Limits{MemoryBytes: native.DefaultMemory, DiskBytes: native.DefaultDisk, CPUs: float64(goruntime.NumCPU())}
}
