package e2b

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// E2B's network object (SandboxNetworkConfig) maps onto one egress layer
// that can only tighten the daemon's policy, the ceiling:
//
//   - denyOut entries become deny rules (one per port given; none: every
//     port). E2B's ALL_TRAFFIC, 0.0.0.0/0, denies IPv6 too (::/0): E2B
//     sandboxes have no IPv6, so "all traffic" is all of it. Names are
//     taken as well (E2B refuses them): airlock can deny by name.
//   - allowOut entries are the deny rules' exceptions (except_hosts,
//     except_cidrs): as on E2B, an allowed entry wins over a denied one,
//     but only over the layer's own deny rules. The daemon's deny rules,
//     its guards and its allow rules still decide, so allowOut opens
//     nothing the daemon's policy does not allow.
//   - allow_internet_access false adds ALL_TRAFFIC to denyOut, as E2B
//     documents it.
//
// What airlock cannot honour is refused, never dropped: a port on an
// allowOut entry (an exception covers every port), port ranges,
// egressProxy, per-host transform rules, maskRequestHost, public sandbox
// URLs (allowPublicTraffic true) and any field E2B may add.

// networkRequest is E2B's create-time network object.
type networkRequest struct {
	AllowOut           []string        `json:"allowOut"`
	DenyOut            []string        `json:"denyOut"`
	AllowPublicTraffic *bool           `json:"allowPublicTraffic"`
	MaskRequestHost    *string         `json:"maskRequestHost"`
	EgressProxy        json.RawMessage `json:"egressProxy"`
	Rules              json.RawMessage `json:"rules"`
}

// allTraffic is E2B's ALL_TRAFFIC.
const allTraffic = "0.0.0.0/0"

// denyOutRule names the layer's deny rule for every port; a rule for
// one port is named denyOutRule + "-" + the port.
const denyOutRule = "e2b-deny-out"

// badNetwork is the error of a network object airlock refuses.
func badNetwork(format string, args ...any) error {
	return fmt.Errorf("network: "+format+": %w", append(args, errdefs.ErrInvalid)...)
}

// unsupportedNetwork is the error of a network option airlock lacks.
func unsupportedNetwork(format string, args ...any) error {
	return fmt.Errorf("unsupported by airlock: network."+format+": %w", append(args, errdefs.ErrInvalid)...)
}

// parseNetwork reads the network object strictly: a field airlock does
// not know is refused, since the caller counts on it.
func parseNetwork(raw json.RawMessage) (*networkRequest, error) {
	var n networkRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return nil, fmt.Errorf("unsupported by airlock: network: %v (airlock takes allowOut, denyOut): %w", err, errdefs.ErrInvalid)
	}
	switch {
	case isSet(n.EgressProxy):
		return nil, unsupportedNetwork("egressProxy: a sandbox's egress goes through airlock's own proxy, which chains to no other")
	case isSet(n.Rules):
		return nil, unsupportedNetwork("rules: per-host header transforms; airlock brokers credentials as secrets of its egress policy")
	case n.MaskRequestHost != nil && *n.MaskRequestHost != "":
		return nil, unsupportedNetwork("maskRequestHost: airlock serves no sandbox URLs")
	case n.AllowPublicTraffic != nil && *n.AllowPublicTraffic:
		return nil, unsupportedNetwork("allowPublicTraffic: airlock serves no sandbox URLs (getHost is refused until airlock has preview ports)")
	}
	return &n, nil
}

// entry is one allowOut or denyOut item: a name, or a range, and a port
// (0: every port).
type entry struct {
	name string
	pfx  netip.Prefix
	port int
}

// parseEntry reads E2B's entry syntax: "8.8.8.8", "8.8.8.0/24",
// "example.com", "*.example.com", each optionally ":PORT" (":" alone:
// every port), IPv6 bare or in brackets ("[::1]:80").
func parseEntry(field string, i int, s string) (entry, error) {
	where := fmt.Sprintf("%s[%d] %q", field, i, s)
	host, port, err := splitEntry(strings.TrimSpace(s))
	if err != nil {
		return entry{}, badNetwork("%s: %v", where, err)
	}
	e := entry{port: port}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		if pfx != pfx.Masked() {
			return entry{}, badNetwork("%s has host bits set (did you mean %s?)", where, pfx.Masked())
		}
		e.pfx = pfx
	} else if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return entry{}, badNetwork("%s: an address with a zone", where)
		}
		e.pfx = netip.PrefixFrom(a, a.BitLen())
	} else {
		e.name = host
	}
	if e.pfx.IsValid() && e.pfx.Addr().Is4In6() {
		e.pfx = netip.PrefixFrom(e.pfx.Addr().Unmap(), e.pfx.Bits()-96)
		if e.pfx.Bits() < 0 {
			return entry{}, badNetwork("%s: an IPv4-mapped range wider than IPv4", where)
		}
	}
	return e, nil
}

// splitEntry splits an entry's host from its port.
func splitEntry(s string) (host string, port int, err error) {
	if s == "" {
		return "", 0, fmt.Errorf("empty")
	}
	rest := ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("unterminated [")
		}
		host, rest = s[1:end], s[end+1:]
		if rest != "" && rest[0] != ':' {
			return "", 0, fmt.Errorf("junk after ]")
		}
		rest = strings.TrimPrefix(rest, ":")
	} else if strings.Count(s, ":") > 1 {
		return s, 0, nil // bare IPv6: no port
	} else if h, p, ok := strings.Cut(s, ":"); ok {
		host, rest = h, p
	} else {
		host = s
	}
	if rest == "" {
		return host, 0, nil
	}
	if lo, hi, ok := strings.Cut(rest, "-"); ok {
		if lo != hi {
			return "", 0, fmt.Errorf("unsupported by airlock: a port range (give one port per entry, or none for every port)")
		}
		rest = lo
	}
	port, err = strconv.Atoi(rest)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != rest {
		return "", 0, fmt.Errorf("port %q (1 to 65535)", rest)
	}
	return host, port, nil
}

// doorLayer is the network layer of a create or an update: its network
// object (nil: none given) and allow_internet_access (noInternet: it was
// false); nil: nothing is denied.
func doorLayer(n *networkRequest, noInternet bool) (*netpolicy.Policy, error) {
	if n != nil {
		return networkLayer(n, noInternet)
	}
	if noInternet {
		return noEgress(), nil
	}
	return nil, nil
}

// networkLayer builds the egress layer of a network object and
// allow_internet_access (noInternet: it was false). It is nil when
// nothing is denied: an allowOut then has nothing to except, as on E2B.
func networkLayer(n *networkRequest, noInternet bool) (*netpolicy.Policy, error) {
	deny := slices.Clone(n.DenyOut)
	if noInternet {
		deny = append(deny, allTraffic)
	}
	byPort := map[int]*netpolicy.Rule{}
	var ports []int
	denyAllTraffic, denyNames := false, false
	for i, s := range deny {
		e, err := parseEntry("denyOut", i, s)
		if err != nil {
			return nil, err
		}
		r := byPort[e.port]
		if r == nil {
			id := denyOutRule
			if e.port != 0 {
				id += "-" + strconv.Itoa(e.port)
			}
			r = &netpolicy.Rule{ID: id, Action: netpolicy.Deny}
			if e.port != 0 {
				r.Ports = []int{e.port}
			}
			byPort[e.port] = r
			ports = append(ports, e.port)
		}
		switch {
		case e.name != "":
			r.Hosts, denyNames = append(r.Hosts, e.name), true
		case e.pfx.String() == allTraffic:
			r.CIDRs = append(r.CIDRs, allTraffic, "::/0")
			denyAllTraffic = denyAllTraffic || e.port == 0
		default:
			r.CIDRs = append(r.CIDRs, e.pfx.String())
		}
	}
	exceptHosts, exceptCIDRs, err := exceptions(n.AllowOut)
	if err != nil {
		return nil, err
	}
	if len(exceptHosts) > 0 && !denyAllTraffic && !denyNames {
		return nil, badNetwork("allowOut names domains, which only make exceptions to denyOut: include ALL_TRAFFIC (%q) in denyOut to deny all other traffic", allTraffic)
	}
	if len(byPort) == 0 {
		return nil, nil
	}
	slices.Sort(ports)
	eg := &netpolicy.Policy{}
	for _, p := range ports {
		r := byPort[p]
		r.CIDRs = uniq(r.CIDRs)
		r.Hosts = uniq(r.Hosts)
		r.ExceptHosts, r.ExceptCIDRs = exceptHosts, exceptCIDRs
		eg.Rules = append(eg.Rules, *r)
	}
	if err := eg.Check(); err != nil {
		return nil, badNetwork("%v", err)
	}
	return eg, nil
}

// exceptions reads allowOut into the deny rules' exceptions.
func exceptions(allowOut []string) (hosts, cidrs []string, err error) {
	for i, s := range allowOut {
		e, err := parseEntry("allowOut", i, s)
		if err != nil {
			return nil, nil, err
		}
		if e.port != 0 {
			return nil, nil, unsupportedNetwork("allowOut[%d] %q: a port; an exception covers every port (which ports are open is the daemon's policy)", i, s)
		}
		if e.name != "" {
			hosts = append(hosts, e.name)
		} else {
			cidrs = append(cidrs, e.pfx.String())
		}
	}
	return uniq(hosts), uniq(cidrs), nil
}

func uniq(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
