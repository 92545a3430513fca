package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/daemon/stack"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"github.com/airlock-dev/airlock/internal/policy"
)

// An update's body is read as strictly as a create's network object: a
// JSON object of E2B's update fields, the create's refusals, never a
// field dropped.
func TestParseUpdateRefusals(t *testing.T) {
	for body, want := range map[string]string{
		``:                                     "a JSON object",
		`   `:                                  "a JSON object",
		`null`:                                 "a JSON object",
		`[]`:                                   "a JSON object",
		`"denyOut"`:                            "a JSON object",
		`{`:                                    "network update",
		`{"denyOut":["0.0.0.0/0"]} {}`:         "one JSON object",
		`{"denyOut":"0.0.0.0/0"}`:              "network update",
		`{"denyOut":[1]}`:                      "network update",
		`{"allowIn":["192.0.2.0/24"]}`:         `unknown field "allowIn"`,
		`{"allowPublicTraffic":true}`:          `unknown field "allowPublicTraffic"`,
		`{"maskRequestHost":"x.example.test"}`: `unknown field "maskRequestHost"`,
		`{"DenyOut":["0.0.0.0/0"],"x":1}`:      `unknown field "x"`,
		`{"allow_internet_access":"no"}`:       "network update",
		`{"egressProxy":{"address":"p.example.test:1080"}}`:                    "unsupported by airlock: network.egressProxy",
		`{"rules":{"api.example.test":[{"transform":{"headers":{"A":"b"}}}]}}`: "unsupported by airlock: network.rules",
		`{"allowOut":["api.example.test"]}`:                                    "include ALL_TRAFFIC",
		`{"denyOut":["0.0.0.0/0"],"allowOut":["192.0.2.7:443"]}`:               "unsupported by airlock: network.allowOut[0]",
		`{"denyOut":["0.0.0.0/0:1-1024"]}`:                                     "a port range",
		`{"denyOut":["203.0.113.7/24"]}`:                                       "host bits",
		`{"denyOut":[""]}`:                                                     "denyOut[0]",
		`{"denyOut":["a b.example.test"]}`:                                     "network",
	} {
		_, _, err := parseUpdate(strings.NewReader(body))
		if err == nil || !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an invalid-request error with %q", body, err, want)
		}
	}
	big := `{"denyOut":["` + strings.Repeat("a", 1<<20) + `"]}`
	if _, _, err := parseUpdate(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Errorf("a body over 1 MiB: %v", err)
	}
	// What E2B documents: a field left out is cleared, and
	// allow_internet_access false is ALL_TRAFFIC in denyOut.
	for body, rules := range map[string]int{`{}`: 0, `{"allow_internet_access":true}`: 0, `{"allow_internet_access":false}`: 1,
		`{"denyOut":["0.0.0.0/0","198.51.100.7:25"],"allowOut":["api.example.test"]}`: 2, `{"rules":{},"egressProxy":null}`: 0} {
		l, _, err := parseUpdate(strings.NewReader(body))
		if err != nil || (l == nil) != (rules == 0) || l != nil && len(l.Rules) != rules {
			t.Errorf("%s: layer %+v, %v; want %d rules", body, l, err, rules)
		}
	}
}

// The operator's policy for the attacks: the public web and loopback
// (standing in for the internet) open, 127.0.9.0/24 denied.
const operatorEgress = `
egress:
  grant: [public_web]
  rules:
    - {id: lo, action: allow, cidrs: [127.0.0.0/8]}
    - {id: op-deny, action: deny, cidrs: [127.0.9.0/24]}
`

func withOperatorEgress(t *testing.T) func(*stack.Config) {
	return func(c *stack.Config) {
		withEgress(c)
		pf, err := policy.Parse([]byte("classes: {read: allow, unknown: allow}\n" + operatorEgress))
		if err != nil {
			t.Fatal(err)
		}
		c.Policy = pf
	}
}

// updateNetwork replaces the sandbox's network layer, applied at once,
// and GET shows it; it widens back to the operator's policy at most,
// never past it; bodies, keys and tokens that are not the caller's own
// change nothing.
func TestE2BUpdateNetwork(t *testing.T) {
	d := newDoor(t, withOperatorEgress(t))
	ctx := context.Background()
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	create := func(body string) (string, string) {
		resp, b := d.call("POST", "/v2/sandboxes", []byte(body), key)
		var c struct{ SandboxID, EnvdAccessToken string }
		if resp.StatusCode != 201 || json.Unmarshal(b, &c) != nil {
			t.Fatalf("create %s: %d %s", body, resp.StatusCode, b)
		}
		return c.SandboxID, c.EnvdAccessToken
	}
	a, tokA := create(`{"templateID":"base","timeout":300,"allow_internet_access":true,"network":{"denyOut":["0.0.0.0/0"],"allowOut":["127.0.0.5"]}}`)
	b, _ := create(`{"templateID":"base","timeout":300,"network":{"denyOut":["127.0.0.6"]}}`)
	decide := func(id, dest string) string {
		t.Helper()
		x, err := d.net.ExplainEgress(ctx, id, dest)
		if err != nil {
			t.Fatalf("explain %s in %s: %v", dest, id, err)
		}
		return x.Decision + " " + x.Rule
	}
	want := func(id string, cases map[string]string) {
		t.Helper()
		for dest, w := range cases {
			if got := decide(id, dest); got != w {
				t.Errorf("%s: %s: %s, want %s", id, dest, got, w)
			}
		}
	}
	info := func(id string) (int, map[string]any) {
		t.Helper()
		resp, body := d.call("GET", "/sandboxes/"+id, nil, key)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		return resp.StatusCode, m
	}
	update := func(id, body string, hdr map[string]string) (int, string) {
		t.Helper()
		resp, out := d.call("PUT", "/sandboxes/"+id+"/network", []byte(body), hdr)
		return resp.StatusCode, string(out)
	}
	want(a, map[string]string{"https://127.0.0.5/": "allow lo", "https://127.0.0.7/": "deny " + denyOutRule})
	if _, m := info(a); m["allowInternetAccess"] != true || !reflect.DeepEqual(m["network"], map[string]any{"allowOut": []any{"127.0.0.5"}, "denyOut": []any{"0.0.0.0/0"}}) {
		t.Errorf("GET after create: %v", m)
	}

	// A replacement: the old rules go, the new ones hold at once.
	if st, out := update(a, `{"denyOut":["127.0.0.5"]}`, key); st != 204 {
		t.Fatalf("update: %d %s", st, out)
	}
	want(a, map[string]string{"https://127.0.0.5/": "deny " + denyOutRule, "https://127.0.0.7/": "allow lo"})
	if _, m := info(a); m["allowInternetAccess"] != nil || !reflect.DeepEqual(m["network"], map[string]any{"denyOut": []any{"127.0.0.5"}}) {
		t.Errorf("GET after update: %v", m)
	}
	if st, out := update(a, `{"allow_internet_access":false}`, key); st != 204 {
		t.Fatalf("update: %d %s", st, out)
	}
	want(a, map[string]string{"https://127.0.0.5/": "deny " + noEgressRule, "https://127.0.0.7/": "deny " + noEgressRule})
	if _, m := info(a); m["allowInternetAccess"] != false || m["network"] != nil {
		t.Errorf("GET after allow_internet_access false: %v", m)
	}

	// Attack: widen past the operator. Every exception E2B can name is
	// given; what the operator denies stays denied, and an empty update
	// is the operator's policy, no more.
	for _, body := range []string{`{"denyOut":["0.0.0.0/0","::/0"],"allowOut":["0.0.0.0/0","::/0","127.0.9.0/24","127.0.9.9"]}`, `{}`, `{"allow_internet_access":true}`} {
		if st, out := update(a, body, key); st != 204 {
			t.Fatalf("update %s: %d %s", body, st, out)
		}
		want(a, map[string]string{"https://127.0.9.9/": "deny op-deny", "https://127.0.0.7/": "allow lo", "https://[::1]/": "deny guard-loopback"})
		p, err := d.net.EgressPolicy(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if loose := p.LooserThan(netpolicy.Policy{Grant: []netpolicy.Category{netpolicy.PublicWeb}, Rules: p.Rules[:2]}); len(loose) != 0 || p.Rules[1].ID != "op-deny" {
			t.Errorf("%s: looser than the operator's policy: %v (%+v)", body, loose, p)
		}
	}
	if _, m := info(a); m["network"] != nil || m["allowInternetAccess"] != true {
		t.Errorf("GET after clearing: %v", m)
	}
	// The operator narrows the sandbox at run time: an update cannot
	// take that back either.
	if _, err := d.net.SetEgress(ctx, a, egress.Policy{Rules: []egress.Rule{{ID: "op-runtime", Action: "deny", CIDRs: []string{"127.0.0.8/32"}}}}, false); err != nil {
		t.Fatal(err)
	}
	if st, out := update(a, `{"denyOut":["0.0.0.0/0"],"allowOut":["127.0.0.8"]}`, key); st != 204 {
		t.Fatalf("update: %d %s", st, out)
	}
	want(a, map[string]string{"https://127.0.0.8/": "deny op-runtime", "https://127.0.0.7/": "deny " + denyOutRule})

	// Attacks on who may update: a sandbox's token is not an API key;
	// the in-sandbox API (by header or by host) has no such route.
	before, _ := d.net.EgressPolicy(ctx, b)
	open := `{"allow_internet_access":true}`
	for name, hdr := range map[string]map[string]string{
		"no key":                 {"Content-Type": "application/json"},
		"a token as the key":     {"X-API-KEY": tokA},
		"a wrong key":            {"X-API-KEY": "e2b_" + strings.Repeat("0", 40)},
		"a's token by header":    envdHeaders(b, tokA, nil),
		"b's id, a's token, key": envdHeaders(b, tokA, key),
		"a's host":               {"Host": EnvdPort + "-" + b + "." + testDomain, "X-Access-Token": tokA},
	} {
		if st, out := update(b, open, hdr); st == 204 || st/100 == 2 {
			t.Errorf("%s: %d %s", name, st, out)
		}
	}
	// Bodies that do not read change nothing.
	for _, body := range []string{`not json`, `[]`, `{"allowIn":["0.0.0.0/0"]}`, `{"egressProxy":{"address":"p.example.test:1"}}`, `{"allowOut":["127.0.0.6"],"x":1}`} {
		if st, out := update(b, body, key); st != 400 || !strings.Contains(out, `"code":400`) {
			t.Errorf("%s: %d %s", body, st, out)
		}
	}
	if after, _ := d.net.EgressPolicy(ctx, b); !reflect.DeepEqual(before, after) {
		t.Errorf("refused updates changed b's egress: %+v -> %+v", before, after)
	}
	want(b, map[string]string{"https://127.0.0.6/": "deny " + denyOutRule})
	if st, out := update("sb-doesnotexist", open, key); st != 404 {
		t.Errorf("unknown sandbox: %d %s", st, out)
	}
	// b's update is b's alone.
	pa, _ := d.net.EgressPolicy(ctx, a)
	if st, out := update(b, open, key); st != 204 {
		t.Fatalf("update b: %d %s", st, out)
	}
	if pa2, _ := d.net.EgressPolicy(ctx, a); !reflect.DeepEqual(pa, pa2) {
		t.Errorf("b's update changed a: %+v -> %+v", pa, pa2)
	}
	if resp, out := d.call("DELETE", "/sandboxes/"+b, nil, key); resp.StatusCode != 204 {
		t.Fatalf("kill: %d %s", resp.StatusCode, out)
	}
	if st, out := update(b, open, key); st != 404 {
		t.Errorf("update of a killed sandbox: %d %s", st, out)
	}
	if st, _ := info(b); st != 404 {
		t.Errorf("GET of a killed sandbox: %d", st)
	}
	// The list shows no network, as E2B's does.
	resp, out := d.call("GET", "/v2/sandboxes", nil, key)
	var l []map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(out, &l) != nil || len(l) != 1 || l[0]["network"] != nil || l[0]["allowInternetAccess"] != nil {
		t.Errorf("list: %d %s", resp.StatusCode, out)
	}
	if !slices.ContainsFunc(pa.Rules, func(r netpolicy.Rule) bool { return r.ID == "op-runtime" }) {
		t.Errorf("the operator's runtime layer went: %+v", pa)
	}
}
