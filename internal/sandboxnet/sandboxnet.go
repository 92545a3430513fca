// Package sandboxnet is the sandboxes' network as a module of the sandbox
// core: it owns the egress service (internal/egress), gives each new
// sandbox its runtime.Network, keeps each sandbox's egress policy there
// (its policy's egress sections, the runtime layer set with SetEgress,
// the network layer it was created with or given by SetNetworkLayer,
// which only narrows those, the brokered secrets granted to it), writes the service's decisions to
// the audit log, and serves the egress API (status, kill switch, policy,
// CA).
//
// A sandbox's network namespace has only loopback: with an egress
// service, the backend hands every connection the sandbox's programs open
// to the in-sandbox proxy, and every DNS query, to the Network this
// package gave it; the service decides by the sandbox's egress policy,
// with the sandbox, task and exec they came from (Core.ExecOf). Every
// decision is in the audit record before a byte goes out; a record that
// cannot be written refuses the destination. Without an egress service
// (Config.Egress nil) sandboxes have no network at all, brokered secrets
// are refused, and the kill switch and runtime layers are unsupported.
package sandboxnet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/hook"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// Broker gives the egress policy the secrets brokered to a sandbox.
type Broker interface {
	// BrokeredSecrets are sandbox id's broker-mode grants with their
	// values (an error: its policy cannot be made; nothing is applied).
	BrokeredSecrets(ctx context.Context, id string) ([]egress.Secret, error)
}

// Config configures the module.
type Config struct {
	// Egress configures the egress service (its Recorder is set to the
	// audit log); nil: no service, sandboxes have no network at all.
	Egress *egress.Config
	// MaxProxyConns caps each sandbox's open proxy connections (0:
	// runtime.DefaultMaxProxyConns); refusals are recorded.
	MaxProxyConns int
	// Broker gives the brokered secrets; nil: the core's
	// (Core.BrokeredSecrets, while the secrets live in the core).
	Broker Broker
	// TrustDir holds each sandbox's system bundle with its egress CA,
	// bound over the sandbox's (trust.go); "": sandboxes do not trust
	// their CA by themselves.
	TrustDir string
	// Quota bounds each project's egress bytes a day (internal/quotas);
	// nil: no bound.
	Quota Quota
}

// Net is the module. Its methods are safe for concurrent use once it is
// attached.
type Net struct {
	cfg    Config
	core   hook.Core
	broker Broker
	svc    *egress.Service // nil: no network

	layerMu sync.Mutex // serializes runtime layer changes (SetEgress)
	mu      sync.Mutex // guards layers
	// layers are the runtime egress layers of live sandboxes (SetEgress),
	// over their policies'; dropped when the sandbox is not live.
	layers map[string]*egress.Policy
	// netLayers replace live sandboxes' create-time network layers
	// (hook.LiveInfo.NetworkLayer; SetNetworkLayer), on top of the
	// runtime layer; a nil value: replaced by none.
	netLayers map[string]*egress.Policy

	sysBundle []byte // the host's system bundle; nil: no trust binds
}

// New makes the module; it works once attached to a manager.
func New(cfg Config) *Net {
	return &Net{cfg: cfg, broker: cfg.Broker, layers: map[string]*egress.Policy{}, netLayers: map[string]*egress.Policy{}}
}

// Name implements hook.Module.
func (n *Net) Name() string { return "network" }

// Attach implements hook.Module: it starts the egress service.
func (n *Net) Attach(c hook.Core) error {
	n.core = c
	if n.broker == nil {
		n.broker = c
	}
	if n.cfg.Egress == nil {
		return nil
	}
	ec := *n.cfg.Egress
	ec.Recorder = recorder{n}
	if n.cfg.Quota != nil {
		ec.Quota = egressQuota{n: n, q: n.cfg.Quota}
	}
	svc, err := egress.New(ec)
	if err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	n.svc = svc
	return n.openTrust()
}

// Network implements hook.NetworkModule: nil without a service.
func (n *Net) Network() hook.Network {
	if n.svc == nil {
		return nil
	}
	return n
}

var errNoProxy = fmt.Errorf("this daemon runs no egress proxy: sandboxes have no network at all: %w", errdefs.ErrUnsupported)

// SandboxNetwork implements hook.Network.
func (n *Net) SandboxNetwork(id string) (hook.SandboxNetwork, error) {
	binds, env, err := n.trust(id)
	if err != nil {
		return hook.SandboxNetwork{}, err
	}
	return hook.SandboxNetwork{Network: &sandboxNetwork{n: n, id: id}, Env: append(proxyEnv(), env...), Binds: binds,
		MaxProxyConns: n.cfg.MaxProxyConns}, nil
}

// proxyEnv points the usual clients (curl, git, npm, pip, go, ...) at the
// sandbox's proxy. A program that ignores it has no route at all.
func proxyEnv() []string {
	const proxy = "http://" + runtime.ProxyAddr
	return []string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "ALL_PROXY=" + proxy,
		"http_proxy=" + proxy, "https_proxy=" + proxy, "all_proxy=" + proxy,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1",
		"npm_config_proxy=" + proxy, "npm_config_https_proxy=" + proxy,
	}
}

// Apply implements hook.Network.
func (n *Net) Apply(ctx context.Context, id string) error {
	if n.svc == nil {
		return nil
	}
	li, ok := n.core.Live(id)
	if !ok {
		n.RemoveSandbox(id)
		return nil
	}
	p, err := n.effective(ctx, id, li)
	if err != nil {
		return err
	}
	return n.svc.SetPolicy(id, p)
}

// RemoveSandbox implements hook.Network: its layer goes with it.
func (n *Net) RemoveSandbox(id string) {
	n.mu.Lock()
	delete(n.layers, id)
	delete(n.netLayers, id)
	n.mu.Unlock()
	if n.svc != nil {
		n.svc.RemoveSandbox(id)
	}
	n.dropTrust(id)
}

// Usage implements hook.Network.
func (n *Net) Usage(id string) *egress.Usage { return n.EgressUsage(id) }

// FlushRefusals implements hook.Network.
func (n *Net) FlushRefusals(ctx context.Context, id string) {
	if n.svc != nil {
		n.svc.FlushRefusals(ctx, id)
	}
}

// Presets implements hook.Network.
func (n *Net) Presets() egress.Presets {
	if n.cfg.Egress == nil {
		return nil
	}
	return n.cfg.Egress.Presets
}

// Close implements hook.Network: the refusal counts still open.
func (n *Net) Close(ctx context.Context) {
	if n.svc != nil {
		n.svc.Close(ctx)
	}
}

func (n *Net) layer(id string) *egress.Policy {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.layers[id]
}

// netLayer is a live sandbox's network layer: the one it was last given
// (SetNetworkLayer), else the one it was created with; nil: none.
func (n *Net) netLayer(id string, li *hook.LiveInfo) *egress.Policy {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.netLayers[id]; ok {
		return l
	}
	return li.NetworkLayer
}

// ceiling is what a live sandbox's network layer narrows: its policy's
// egress with the runtime layer (the operator's, SetEgress).
func (n *Net) ceiling(id string, li *hook.LiveInfo) egress.Policy {
	p := li.Policy.Egress
	if l := n.layer(id); l != nil {
		p = p.Merge(*l)
	}
	return p
}

// effective is a live sandbox's egress policy: its policy's, the runtime
// layer, the network layer, and its brokered secrets with their values.
func (n *Net) effective(ctx context.Context, id string, li *hook.LiveInfo) (egress.Policy, error) {
	p := n.ceiling(id, li)
	if l := n.netLayer(id, li); l != nil {
		p = p.Merge(*l)
	}
	secs, err := n.broker.BrokeredSecrets(ctx, id)
	if err != nil {
		return p, err
	}
	if len(secs) > 0 {
		p.Secrets = append(slices.Clone(p.Secrets), secs...)
	}
	return p, nil
}

// live is sandbox id while it lives; else the store's error, or a
// conflict for a stopped one.
func (n *Net) live(ctx context.Context, id string) (*hook.LiveInfo, error) {
	if li, ok := n.core.Live(id); ok {
		return li, nil
	}
	if _, err := n.core.Store().GetSandbox(ctx, id); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("sandbox %s is stopped: %w", id, errdefs.ErrConflict)
}

// EgressPolicy returns a running sandbox's effective egress policy
// (secret values left out).
func (n *Net) EgressPolicy(ctx context.Context, id string) (*egress.Policy, error) {
	li, err := n.live(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := n.effective(ctx, id, li)
	if err != nil {
		return nil, err
	}
	for i := range p.Secrets {
		p.Secrets[i].Value = ""
	}
	return &p, nil
}

// SetEgress replaces a running sandbox's runtime egress layer (over its
// policy's egress sections). tightenOnly refuses a layer that would let
// more through (agents' callers).
func (n *Net) SetEgress(ctx context.Context, id string, layer egress.Policy, tightenOnly bool) (*egress.Policy, error) {
	if n.svc == nil {
		return nil, errNoProxy
	}
	if err := layer.Check(); err != nil {
		return nil, err
	}
	li, err := n.live(ctx, id)
	if err != nil {
		return nil, err
	}
	n.layerMu.Lock() // one runtime-layer change at a time: the check below holds until it is applied
	defer n.layerMu.Unlock()
	if tightenOnly {
		if err := tightens(li.Policy, n.layer(id), layer); err != nil {
			return nil, err
		}
	}
	n.mu.Lock()
	old := n.layers[id]
	n.layers[id] = &layer
	n.mu.Unlock()
	if err := n.Apply(ctx, id); err != nil {
		n.mu.Lock()
		if old != nil {
			n.layers[id] = old
		} else {
			delete(n.layers, id)
		}
		n.mu.Unlock()
		return nil, errors.Join(err, n.Apply(ctx, id))
	}
	_ = n.core.Record(ctx, audit.Entry{SandboxID: id, TaskID: li.TaskID, Kind: "egress.policy", Payload: map[string]any{"layer": layer}})
	return n.EgressPolicy(ctx, id)
}

// SetNetworkLayer replaces a running sandbox's network layer (the one it
// was created with, sandbox.CreateRequest.NetworkLayer, or the last one
// set; nil: none) and applies it at once: open connections the new
// policy refuses are closed. The layer may only narrow the sandbox's
// policy with its runtime layer, the operator's ceiling
// (netpolicy.Policy.NarrowedBy): replacing it widens back to that
// ceiling at most.
func (n *Net) SetNetworkLayer(ctx context.Context, id string, layer *egress.Policy) (*egress.Policy, error) {
	if n.svc == nil {
		return nil, errNoProxy
	}
	li, err := n.live(ctx, id)
	if err != nil {
		return nil, err
	}
	n.layerMu.Lock() // the ceiling checked below holds until the layer is applied
	defer n.layerMu.Unlock()
	if layer != nil {
		if _, err := n.ceiling(id, li).NarrowedBy(*layer); err != nil {
			return nil, err
		}
		c := *layer
		layer = &c
	}
	n.mu.Lock()
	old, had := n.netLayers[id]
	n.netLayers[id] = layer
	n.mu.Unlock()
	if err := n.Apply(ctx, id); err != nil {
		n.mu.Lock()
		if had {
			n.netLayers[id] = old
		} else {
			delete(n.netLayers, id)
		}
		n.mu.Unlock()
		return nil, errors.Join(err, n.Apply(ctx, id))
	}
	_ = n.core.Record(ctx, audit.Entry{SandboxID: id, TaskID: li.TaskID, Kind: "egress.network", Payload: map[string]any{"layer": layer}})
	return n.EgressPolicy(ctx, id)
}

// ForkLayer is the network layer a copy of sandbox id (a sandbox made
// from its files: the E2B door's fork) starts with: id's own, as last
// set. A sandbox the operator gave a runtime layer (SetEgress) is
// refused: that layer is the operator's decision about that sandbox, and
// a copy without it would escape it.
func (n *Net) ForkLayer(ctx context.Context, id string) (*egress.Policy, error) {
	li, err := n.live(ctx, id)
	if err != nil {
		return nil, err
	}
	if n.layer(id) != nil {
		return nil, fmt.Errorf("sandbox %s has an egress layer of the operator's (airlock egress set), which a copy would not keep: %w", id, errdefs.ErrConflict)
	}
	l := n.netLayer(id, li)
	if l == nil {
		return nil, nil
	}
	c := *l
	return &c, nil
}

// tightens refuses a layer that relaxes pol, or the sandbox's policy as
// it is now (with its old layer): a layer that drops the operator's deny
// rule or restores a revoked grant loosens it.
func tightens(pol *policy.Policy, old *egress.Policy, layer egress.Policy) error {
	if err := pol.Relaxes(policy.Layer{Egress: &layer}); err != nil {
		return err
	}
	now, next := pol.Egress, pol.Egress.Merge(layer)
	if old != nil {
		now = now.Merge(*old)
	}
	if loose := next.LooserThan(now); len(loose) > 0 {
		return errdefs.Wrap(errdefs.ErrDenied, "this caller may only tighten the sandbox's egress policy; the new layer would relax it: %s (a layer replaces the last one: keep its deny rules)",
			strings.Join(loose, ", "))
	}
	return nil
}

// CutEgress turns the kill switch on (every sandbox's egress refused,
// open connections closed) or off.
func (n *Net) CutEgress(ctx context.Context, on bool) error {
	if n.svc == nil {
		return errNoProxy
	}
	n.svc.CutAll(on)
	return n.core.Record(ctx, audit.Entry{Kind: "egress.cut", Payload: map[string]any{"on": on}})
}

// EgressStatus says whether this daemon runs an egress proxy and whether
// the kill switch is on.
func (n *Net) EgressStatus() (enabled, cut bool) {
	if n.svc == nil {
		return false, false
	}
	return true, n.svc.IsCut()
}

// EgressCA returns a running sandbox's CA certificate (PEM), which the
// proxy signs intercepted hosts' certificates with (brokered secrets).
func (n *Net) EgressCA(id string) ([]byte, error) {
	if n.svc == nil {
		return nil, fmt.Errorf("this daemon runs no egress proxy: %w", errdefs.ErrUnsupported)
	}
	return n.svc.CACert(id)
}

// EgressUsage is what a running sandbox's egress has put in the audit
// record against its budget, and its cut if it used it up; nil without
// an egress service or for a stopped sandbox.
func (n *Net) EgressUsage(id string) *egress.Usage {
	if n.svc == nil {
		return nil
	}
	u, ok := n.svc.Usage(id)
	if !ok {
		return nil
	}
	return &u
}

// ExplainEgress says what a running sandbox's proxy would decide for
// dest (a URL or host:port) and why, without connecting or recording.
func (n *Net) ExplainEgress(ctx context.Context, id, dest string) (*egress.Explanation, error) {
	if n.svc == nil {
		return nil, errNoProxy
	}
	if _, err := n.live(ctx, id); err != nil {
		return nil, err
	}
	return n.svc.Explain(ctx, id, dest)
}
