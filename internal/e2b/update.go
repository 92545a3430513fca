package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// updateNetwork (PUT /sandboxes/{id}/network) replaces a sandbox's
// network layer, as E2B's replaces its egress rules: what the body leaves
// out is cleared. The body is read as a create's network object is, with
// the same refusals; the new layer is applied at once (sandboxnet closes
// open connections it refuses). Like the create-time layer it only
// narrows the daemon's policy with the operator's runtime layer (the
// ceiling): an update widens back to that ceiling at most, never past it.

// Networks replaces a sandbox's network layer (sandboxnet.Net).
type Networks interface {
	// SetNetworkLayer replaces sandbox id's network layer (nil: none)
	// and applies it; one that would relax the ceiling is refused.
	SetNetworkLayer(ctx context.Context, id string, layer *netpolicy.Policy) (*netpolicy.Policy, error)
}

// networkUpdate is E2B's SandboxNetworkUpdateConfig.
type networkUpdate struct {
	AllowInternetAccess *bool           `json:"allow_internet_access"`
	AllowOut            []string        `json:"allowOut"`
	DenyOut             []string        `json:"denyOut"`
	EgressProxy         json.RawMessage `json:"egressProxy"`
	Rules               json.RawMessage `json:"rules"`
}

// netView is a sandbox's network as E2B's GET shows it: what its create
// or its last update asked for.
type netView struct {
	allowInternet *bool
	network       *networkInfo
}

// networkInfo is E2B's SandboxNetworkConfig as GET answers it.
type networkInfo struct {
	AllowOut           []string `json:"allowOut,omitempty"`
	DenyOut            []string `json:"denyOut,omitempty"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic,omitempty"`
}

// viewOf is the view of a network object (nil: none given) and
// allow_internet_access; nil when neither was given.
func viewOf(n *networkRequest, allowInternet *bool) *netView {
	if n == nil && allowInternet == nil {
		return nil
	}
	v := &netView{allowInternet: allowInternet}
	if n != nil {
		v.network = &networkInfo{AllowOut: n.AllowOut, DenyOut: n.DenyOut, AllowPublicTraffic: n.AllowPublicTraffic}
	}
	return v
}

// parseUpdate reads an update's body strictly: a JSON object, no field
// airlock does not know, the create's refusals. It returns the new layer
// (nil: nothing denied) and what GET shows of it (nil: nothing).
func parseUpdate(r io.Reader) (*netpolicy.Policy, *netView, error) {
	body, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read request: %w", err)
	}
	if len(body) > 1<<20 {
		return nil, nil, fmt.Errorf("request body over 1 MiB: %w", errdefs.ErrInvalid)
	}
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return nil, nil, fmt.Errorf("request body: a JSON object (allow_internet_access, allowOut, denyOut) is required: %w", errdefs.ErrInvalid)
	}
	var u networkUpdate
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return nil, nil, fmt.Errorf("unsupported by airlock: network update: %v (airlock takes allow_internet_access, allowOut, denyOut): %w", err, errdefs.ErrInvalid)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("request body: one JSON object: %w", errdefs.ErrInvalid)
	}
	switch {
	case isSet(u.EgressProxy):
		return nil, nil, unsupportedNetwork("egressProxy: a sandbox's egress goes through airlock's own proxy, which chains to no other")
	case isSet(u.Rules):
		return nil, nil, unsupportedNetwork("rules: per-host header transforms; airlock brokers credentials as secrets of its egress policy")
	}
	var n *networkRequest // none: allow_internet_access alone, as at create
	if len(u.AllowOut)+len(u.DenyOut) > 0 {
		n = &networkRequest{AllowOut: u.AllowOut, DenyOut: u.DenyOut}
	}
	layer, err := doorLayer(n, u.AllowInternetAccess != nil && !*u.AllowInternetAccess)
	if err != nil {
		return nil, nil, err
	}
	return layer, viewOf(n, u.AllowInternetAccess), nil
}

func (s *Server) updateNetwork(w http.ResponseWriter, r *http.Request) {
	layer, view, err := parseUpdate(r.Body)
	if err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if s.cfg.Network == nil {
		writeAPIError(w, http.StatusNotImplemented, "unsupported by airlock: updateNetwork: this daemon runs no egress proxy (sandboxes have no network at all)")
		return
	}
	sb, ok := s.live(w, r)
	if !ok {
		return
	}
	// One update at a time, so the view GET shows is the layer applied.
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if _, err := s.cfg.Network.SetNetworkLayer(r.Context(), sb.ID, layer); err != nil {
		writeAPIError(w, apiStatus(err), err.Error())
		return
	}
	if view == nil {
		delete(s.nets, sb.ID)
	} else {
		s.nets[sb.ID] = view
	}
	w.WriteHeader(http.StatusNoContent)
}

// setView keeps what GET shows of sandbox id's network (nil: nothing).
func (s *Server) setView(id string, v *netView) {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if v == nil {
		delete(s.nets, id)
		return
	}
	s.nets[id] = v
}

// showNetwork fills d with what GET shows of its sandbox's network.
func (s *Server) showNetwork(d *sandboxDetail) {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if v := s.nets[d.SandboxID]; v != nil {
		d.AllowInternetAccess, d.Network = v.allowInternet, v.network
	}
}

// pruneViews forgets the views of sandboxes not in keep (those still
// running or paused): a stopped sandbox's network is never shown.
func (s *Server) pruneViews(keep map[string]bool) {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	for id := range s.nets {
		if !keep[id] {
			delete(s.nets, id)
		}
	}
}
