package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/egress/broker"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Source says where a connection or query came from.
type Source struct {
	SandboxID string `json:"sandbox"`
	TaskID    string `json:"task,omitempty"`
	ExecID    string `json:"exec,omitempty"`
}

// EventKind names an egress event.
type EventKind string

// The events. A decision (connect, request, dns) is recorded before any
// byte goes upstream; if recording it fails, the destination is refused.
const (
	KindConnect  EventKind = "egress.connect"  // a CONNECT decided
	KindClose    EventKind = "egress.close"    // a tunnel ended: bytes, SNI, or a late refusal
	KindRequest  EventKind = "egress.request"  // an HTTP request decided (plain, or in a brokered tunnel)
	KindResponse EventKind = "egress.response" // its response: status and bytes
	KindDNS      EventKind = "egress.dns"      // a DNS query answered
	KindSecret   EventKind = "egress.secret"   // a brokered secret was put in a request (never its value)
)

// Event is one egress record. Fields that do not apply are zero.
type Event struct {
	Time time.Time `json:"time"`
	Kind EventKind `json:"kind"`
	Source
	// Conn ties together the events of one connection from the sandbox.
	Conn uint64 `json:"conn,omitempty"`
	// Decision is "allow" or "deny" on decision events, and "deny" on a
	// close event when the tunnel was refused after it opened (SNI).
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Method   string `json:"method,omitempty"`
	// Host is the destination as requested, normalised; Addr is the
	// address connected to (or refused).
	Host string     `json:"host,omitempty"`
	Port int        `json:"port,omitempty"`
	Addr netip.Addr `json:"addr,omitzero"`
	// Path of an HTTP request, without the query.
	Path      string        `json:"path,omitempty"`
	SNI       string        `json:"sni,omitempty"`
	Status    int           `json:"status,omitempty"`
	BytesUp   int64         `json:"bytes_up,omitempty"`
	BytesDown int64         `json:"bytes_down,omitempty"`
	Duration  time.Duration `json:"duration,omitempty"`
	// DNSType is the query type (A, AAAA, ...); Answers the addresses
	// given back.
	DNSType string       `json:"dns_type,omitempty"`
	Answers []netip.Addr `json:"answers,omitempty"`
	// Secret is the id of a brokered secret used, Header where.
	Secret string `json:"secret,omitempty"`
	Header string `json:"header,omitempty"`
	Error  string `json:"error,omitempty"`
	// Of, Count, First and Last make a KindRefusedSummary: Count
	// refusals of kind Of (with the fields above) between First and Last
	// that were not recorded one by one. Final: written because the
	// sandbox was removed or the daemon stopped.
	Of    EventKind `json:"of,omitempty"`
	Count int64     `json:"count,omitempty"`
	First time.Time `json:"first,omitzero"`
	Last  time.Time `json:"last,omitzero"`
	Final bool      `json:"final,omitempty"`
}

// Recorder stores egress events (the manager writes them to the audit
// log). Record is called from many goroutines at once, on the connection's
// path, so it should be quick. An error means the event was not kept: for
// a decision the proxy then refuses the destination (fail closed).
type Recorder interface {
	Record(ctx context.Context, e Event) error
}

// Resolver resolves names host-side. *net.Resolver satisfies it; network
// is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens upstream connections, always to an address already
// checked ("198.51.100.7:443", never a name). *net.Dialer satisfies it.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config configures a Service. Only Recorder is required.
type Config struct {
	// Recorder receives every event. Required: egress without evidence is
	// refused.
	Recorder Recorder
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// Dialer defaults to a net.Dialer with DialTimeout.
	Dialer Dialer
	// Presets are the package registry hosts policies may name (see
	// DiscoverPresets); a preset missing here allows nothing.
	Presets Presets
	// UpstreamRoots verify the real hosts behind brokered secrets; nil
	// means the system roots.
	UpstreamRoots *x509.CertPool
	// Logger gets operational logs (not the audit record); nil discards.
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time

	DialTimeout   time.Duration // per address; default 10s
	HeaderTimeout time.Duration // to read a request head, also between keep-alive requests; default 60s
	HelloTimeout  time.Duration // to receive a TLS ClientHello after CONNECT; default 10s
	// MaxHeaderBytes bounds a request head; default 32 KiB.
	MaxHeaderBytes int
	// CALifetime is how long a sandbox CA is valid; default 30 days.
	CALifetime time.Duration
	// NAT64Prefixes are the NAT64 (or DNS64) prefixes of the host's
	// network besides 64:ff9b::/96 and 64:ff9b:1::/48, each of a length
	// RFC 6052 defines (32, 40, 48, 56, 64, 96): an address under one is
	// also judged by the IPv4 address it embeds.
	NAT64Prefixes []netip.Prefix
	// Limits bound each sandbox's DNS and connection rates and its audit
	// budget; zero fields take DefaultLimits.
	Limits Limits
	// Quota, when set, is asked before each allowed destination is
	// connected to and told the bytes of each one when it ends (a
	// project's egress bytes a day: internal/quotas); nil bounds nothing.
	Quota Quota
	// QuotaPoll is how often, with a Quota, an open tunnel's bytes are
	// read from the kernel and told to it, so that one past the quota is
	// cut; default DefaultQuotaPoll.
	QuotaPoll time.Duration
	// SandboxSendBuffer is the send buffer (SO_SNDBUF) of the sandbox's
	// side of each proxy connection; default DefaultSandboxSendBuffer,
	// negative leaves the kernel's autotuning (up to tcp_wmem's maximum).
	SandboxSendBuffer int
}

// DefaultSandboxSendBuffer bounds what the proxy queues towards a
// sandbox (the kernel doubles it for its bookkeeping). The sandbox is on
// this host, a few microseconds away, so this still lets a connection
// carry gigabytes a second; an autotuned buffer instead grows to
// megabytes, the bytes wait in it until their cache lines are gone, and
// the sandbox's copy out of its socket then reads them from memory
// (measured: a relayed 64 MiB cost about 1.6x the CPU of this setting,
// see BenchmarkRelayCost). It also bounds the kernel memory a slow
// reader in a sandbox pins per connection.
const DefaultSandboxSendBuffer = 128 << 10

// Service is the host's egress service, one per daemon. It is safe for
// concurrent use.
type Service struct {
	cfg      Config
	resolver Resolver
	dialer   Dialer
	log      *slog.Logger
	cut      atomic.Bool
	connSeq  atomic.Uint64

	mu        sync.Mutex // guards sandboxes and each sandbox's conns
	sandboxes map[string]*sandbox
	orphan    *meter // of ids without an entry

	refused refusals
	closed  bool // Close ran: no more window timers (guarded by refused.mu)
}

type sandbox struct {
	pol   atomic.Pointer[compiled]
	conns map[*tracked]struct{}
	ca    broker.CA
	meter *meter
}

// tracked is an open connection, so a policy change or the kill switch
// can cut it.
type tracked struct {
	close func()
	mu    sync.Mutex
	live  bool // a destination is connected
	t     Target
	m     mode
	addr  netip.Addr
}

func (tr *tracked) set(t Target, m mode, a netip.Addr) {
	tr.mu.Lock()
	tr.live, tr.t, tr.m, tr.addr = true, t, m, a
	tr.mu.Unlock()
}

// New returns a Service with every sandbox denied everything until
// SetPolicy.
func New(cfg Config) (*Service, error) {
	if cfg.Recorder == nil {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "egress: a Recorder is required (every connection is recorded)")
	}
	for _, p := range cfg.NAT64Prefixes {
		if !ValidNAT64Prefix(p) {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, "egress: NAT64 prefix %s: an IPv6 prefix of length 32, 40, 48, 56, 64 or 96", p)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 60 * time.Second
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = 10 * time.Second
	}
	if cfg.QuotaPoll <= 0 {
		cfg.QuotaPoll = DefaultQuotaPoll
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = 32 << 10
	}
	if cfg.SandboxSendBuffer == 0 {
		cfg.SandboxSendBuffer = DefaultSandboxSendBuffer
	}
	if cfg.CALifetime <= 0 {
		cfg.CALifetime = 30 * 24 * time.Hour
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Service{cfg: cfg, resolver: cfg.Resolver, dialer: cfg.Dialer, log: cfg.Logger, sandboxes: map[string]*sandbox{},
		refused: refusals{m: map[refusalKey]*refusalCount{}, kinds: map[string]int{}}}
	s.orphan = s.newMeter()
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	if s.dialer == nil {
		s.dialer = &net.Dialer{Timeout: cfg.DialTimeout}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// sandboxLocked returns the sandbox's entry, creating it. s.mu is held.
func (s *Service) sandboxLocked(id string) *sandbox {
	sb := s.sandboxes[id]
	if sb == nil {
		sb = &sandbox{conns: map[*tracked]struct{}{}, meter: s.newMeter()}
		s.sandboxes[id] = sb
	}
	return sb
}

// SetPolicy sets (or replaces) a sandbox's policy. It takes effect at
// once: new connections and queries use it, and open connections that it
// no longer allows are cut.
func (s *Service) SetPolicy(sandboxID string, p Policy) error {
	if sandboxID == "" {
		return errdefs.Wrap(errdefs.ErrInvalid, "egress: empty sandbox id")
	}
	c, err := compile(&p, s.cfg.Presets)
	if err != nil {
		return fmt.Errorf("sandbox %s: %w", sandboxID, err)
	}
	c.nat64 = s.cfg.NAT64Prefixes
	for _, sec := range c.Secrets {
		if sec.Value == "" {
			return errdefs.Wrap(errdefs.ErrInvalid, "sandbox %s: egress secret %s has no value (fill Secret.Value before SetPolicy)", sandboxID, sec.ID)
		}
	}
	if len(c.EmptyPresets) > 0 {
		s.log.Warn("egress presets found no host in this machine's configuration", "sandbox", sandboxID, "presets", c.EmptyPresets)
	}
	s.mu.Lock()
	sb := s.sandboxLocked(sandboxID)
	sb.pol.Store(c)
	var cut []*tracked
	for tr := range sb.conns {
		tr.mu.Lock()
		if tr.live && !s.stillAllowed(c, tr.t, tr.m, tr.addr) {
			cut = append(cut, tr)
		}
		tr.mu.Unlock()
	}
	s.mu.Unlock()
	for _, tr := range cut {
		tr.close()
	}
	return nil
}

// RemoveSandbox forgets a sandbox: its policy, its CA, its budget and
// its open connections, which are cut; its refusal counts are written.
func (s *Service) RemoveSandbox(sandboxID string) {
	defer s.flushRefusals(context.Background(), true, sandboxID)
	s.mu.Lock()
	sb := s.sandboxes[sandboxID]
	delete(s.sandboxes, sandboxID)
	var cut []*tracked
	if sb != nil {
		sb.pol.Store(nil)
		for tr := range sb.conns {
			cut = append(cut, tr)
		}
	}
	s.mu.Unlock()
	for _, tr := range cut {
		tr.close()
	}
}

// CutAll is the kill switch. On, it refuses every new connection and DNS
// answer of every sandbox and cuts every open connection; off, policies
// apply again.
func (s *Service) CutAll(on bool) {
	s.cut.Store(on)
	if !on {
		return
	}
	s.mu.Lock()
	var cut []*tracked
	for _, sb := range s.sandboxes {
		for tr := range sb.conns {
			cut = append(cut, tr)
		}
	}
	s.mu.Unlock()
	for _, tr := range cut {
		tr.close()
	}
}

// IsCut reports whether the kill switch is on.
func (s *Service) IsCut() bool { return s.cut.Load() }

// policy returns a sandbox's current policy (nil: none, deny all).
func (s *Service) policy(sandboxID string) *compiled {
	s.mu.Lock()
	sb := s.sandboxes[sandboxID]
	s.mu.Unlock()
	if sb == nil {
		return nil
	}
	return sb.pol.Load()
}

// track registers an open connection of a sandbox; the returned func
// unregisters it. A connection of a sandbox without an entry is tracked
// under a fresh entry, which RemoveSandbox clears.
func (s *Service) track(sandboxID string, closeFn func()) (*tracked, func()) {
	tr := &tracked{close: closeFn}
	s.mu.Lock()
	sb := s.sandboxLocked(sandboxID)
	sb.conns[tr] = struct{}{}
	s.mu.Unlock()
	return tr, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(sb.conns, tr)
		// Forget an entry that only this connection made (a sandbox with
		// no policy and no CA), so unknown ids do not pile up.
		if len(sb.conns) == 0 && sb.pol.Load() == nil && s.sandboxes[sandboxID] == sb && !sb.ca.Made() {
			delete(s.sandboxes, sandboxID)
		}
	}
}

// record stores an event, stamping the time. Refusals are aggregated
// (refuse) and never fail; a decision past the sandbox's audit budget is
// refused (write).
func (s *Service) record(ctx context.Context, e Event) error {
	if aggregable(&e) {
		s.refuse(ctx, e, true)
		return nil
	}
	return s.write(ctx, e)
}

// dial connects to the first checked address that answers.
func (s *Service) dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, netip.Addr, error) {
	var errs []error
	for _, a := range addrs {
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
		c, err := s.dialer.DialContext(dctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		cancel()
		if err == nil {
			return c, a, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, netip.Addr{}, errors.New("no address to dial")
	}
	return nil, addrs[0], errors.Join(errs...)
}
