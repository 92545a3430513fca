package e2b

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// What the SDKs send by default is accepted; allow_internet_access false
// is a layer that denies all egress; what airlock cannot honour is
// still refused.
func TestParseCreateInternetAccess(t *testing.T) {
	cr, err := parseCreate(strings.NewReader(`{"templateID":"base","allow_internet_access":true}`), "host")
	if err != nil || cr.Policy != nil || cr.NetworkLayer != nil {
		t.Fatalf("allow_internet_access true: %v %+v, want accepted with the daemon's policy", err, cr.NetworkLayer)
	}
	cr, err = parseCreate(strings.NewReader(`{"templateID":"base","allow_internet_access":false}`), "host")
	if err != nil || cr.NetworkLayer == nil {
		t.Fatalf("allow_internet_access false: %v %+v, want a no-egress layer", err, cr.NetworkLayer)
	}
	eg := cr.NetworkLayer
	if len(eg.Grant) != 0 || eg.Grant == nil || len(eg.Rules) != 1 || eg.Rules[0].Action != netpolicy.Deny || len(eg.Rules[0].Ports) != 0 ||
		!slices.Equal(eg.Rules[0].CIDRs, []string{"0.0.0.0/0", "::/0"}) || !cr.TightenOnly {
		t.Errorf("no-egress layer: %+v", eg)
	}
	if err := eg.Check(); err != nil {
		t.Errorf("no-egress layer does not check: %v", err)
	}
	for body, want := range map[string]string{
		`{"allow_internet_access":true,"network":{"egressProxy":{"address":"p.example.test:1080"}}}`: "network.egressProxy",
		`{"allow_internet_access":true,"autoPause":true,"autoPauseMemory":false}`:                    "lifecycle onTimeout keepMemory false",
		`{"allow_internet_access":false,"mcp":{"x":{}}}`:                                             "mcp",
	} {
		if _, err := parseCreate(strings.NewReader(body), "host"); err == nil || !strings.Contains(err.Error(), "unsupported by airlock: "+want) {
			t.Errorf("%s: %v, want unsupported %s", body, err, want)
		}
	}
}

func TestConnectTimeoutOnlyExtends(t *testing.T) {
	in := func(d time.Duration) *time.Time { e := time.Now().Add(d); return &e }
	for _, c := range []struct {
		exp  *time.Time
		ttl  time.Duration
		want bool
	}{
		{in(time.Hour), 300 * time.Second, false},
		{in(time.Minute), 300 * time.Second, true},
		{in(time.Hour), 0, true}, // 0: no timeout (bounded by --max-lifetime)
		{nil, 300 * time.Second, false},
	} {
		if got := extends(&sandbox.Sandbox{Expires: c.exp}, c.ttl); got != c.want {
			t.Errorf("expires %v, ttl %s: extends %v, want %v", c.exp, c.ttl, got, c.want)
		}
	}
}

func TestParseListQuery(t *testing.T) {
	q, _ := url.ParseQuery("state=running&state=paused&metadata=a%3D1&startedAfter=2026-01-02T03:04:05.678Z&template=base&order=asc&limit=5&nextToken=5")
	lq, msg := parseListQuery(q, "host")
	if msg != "" || !lq.asc || lq.template != "host" || lq.after.IsZero() || lq.limit != 5 || lq.start != 5 || len(lq.states) != 2 || lq.meta.Get("a") != "1" {
		t.Fatalf("%q: %+v", msg, lq)
	}
	if lq, _ := parseListQuery(url.Values{}, "host"); lq.asc {
		t.Error("default order is oldest first, want newest first")
	}
	for query, want := range map[string]string{
		"startedBefore=2026-01-02T03:04:05Z": `unsupported by airlock: list filter "startedBefore"`,
		"query=x":                            `list filter "query"`,
		"order=up":                           "order: asc or desc",
		"startedAfter=yesterday":             "startedAfter",
		"state=killed":                       "state",
		"limit=0":                            "limit",
	} {
		q, _ := url.ParseQuery(query)
		if _, msg := parseListQuery(q, "host"); !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want %q", query, msg, want)
		}
	}
}

// Through the door: allow_internet_access false leaves the sandbox a
// policy that denies every address; a connect's timeout never shortens
// its life; a paused sandbox's /health is 502; the list's filters and
// order.
func TestE2BCompatDoor(t *testing.T) {
	d := newDoor(t, withEgress)
	ctx := context.Background()
	key := map[string]string{"X-API-KEY": d.key, "Content-Type": "application/json"}
	create := func(body string) string {
		resp, b := d.call("POST", "/v2/sandboxes", []byte(body), key)
		var c struct{ SandboxID string }
		if resp.StatusCode != 201 || json.Unmarshal(b, &c) != nil {
			t.Fatalf("create %s: %d %s", body, resp.StatusCode, b)
		}
		return c.SandboxID
	}
	open := create(`{"templateID":"base","timeout":3600,"allow_internet_access":true,"metadata":{"k":"open"}}`)
	time.Sleep(10 * time.Millisecond)
	closed := create(`{"templateID":"base","timeout":3600,"allow_internet_access":false,"metadata":{"k":"closed"}}`)
	p, err := d.net.EgressPolicy(ctx, closed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Rules, func(r netpolicy.Rule) bool { return r.ID == noEgressRule && r.Action == netpolicy.Deny }) {
		t.Errorf("allow_internet_access false: egress %+v has no deny-all rule", p)
	}
	if p, _ := d.net.EgressPolicy(ctx, open); slices.ContainsFunc(p.Rules, func(r netpolicy.Rule) bool { return r.ID == noEgressRule }) {
		t.Errorf("allow_internet_access true got the deny-all rule")
	}

	// connect with timeout 300 keeps the hour; with two hours extends.
	before, _ := d.m.Get(ctx, open)
	if resp, b := d.call("POST", "/sandboxes/"+open+"/connect", []byte(`{"timeout":300}`), key); resp.StatusCode != 200 {
		t.Fatalf("connect: %d %s", resp.StatusCode, b)
	}
	if after, _ := d.m.Get(ctx, open); !after.Expires.Equal(*before.Expires) {
		t.Errorf("connect with timeout 300 moved the end from %v to %v", before.Expires, after.Expires)
	}
	d.call("POST", "/sandboxes/"+open+"/connect", []byte(`{"timeout":7200}`), key)
	if after, _ := d.m.Get(ctx, open); !after.Expires.After(before.Expires.Add(50 * time.Minute)) {
		t.Errorf("connect with timeout 7200: end %v, want about an hour after %v", after.Expires, before.Expires)
	}

	// A paused sandbox is not running for the SDK; resumed, it is.
	resp, b := d.call("POST", "/sandboxes/"+open+"/connect", []byte(`{}`), key)
	var c struct{ EnvdAccessToken string }
	_ = json.Unmarshal(b, &c)
	health := func() int {
		resp, _ := d.call("GET", "/health", nil, envdHeaders(open, c.EnvdAccessToken, nil))
		return resp.StatusCode
	}
	if resp.StatusCode != 200 || health() != 204 {
		t.Fatalf("running: connect %d, health %d", resp.StatusCode, health())
	}
	d.call("POST", "/sandboxes/"+open+"/pause", nil, key)
	if got := health(); got != 502 {
		t.Errorf("paused: health %d, want 502", got)
	}
	d.call("POST", "/sandboxes/"+open+"/connect", []byte(`{}`), key)
	if got := health(); got != 204 {
		t.Errorf("resumed: health %d, want 204", got)
	}

	// List: newest first by default, order asc, startedAfter, template.
	ids := func(query string) string {
		resp, b := d.call("GET", "/v2/sandboxes?"+query, nil, key)
		var l []sandboxDetail
		if resp.StatusCode != 200 || json.Unmarshal(b, &l) != nil {
			return resp.Status + " " + string(b)
		}
		var out []string
		for _, x := range l {
			out = append(out, x.Metadata["k"])
		}
		return strings.Join(out, ",")
	}
	closedSb, _ := d.m.Get(ctx, closed)
	for query, want := range map[string]string{
		"":                  "closed,open",
		"order=desc":        "closed,open",
		"order=asc":         "open,closed",
		"template=base":     "closed,open",
		"template=host":     "closed,open",
		"template=other":    "",
		"state=paused":      "",
		"limit=1":           "closed",
		"limit=1&order=asc": "open",
		"startedAfter=" + url.QueryEscape(closedSb.Created.Format(time.RFC3339Nano)): "closed",
	} {
		if got := ids(query); got != want {
			t.Errorf("list ?%s: %s, want %s", query, got, want)
		}
	}
	if got := ids("startedBefore=2026-01-01T00:00:00Z"); !strings.Contains(got, "400") || !strings.Contains(got, "unsupported by airlock") {
		t.Errorf("a filter airlock cannot apply: %s, want a 400", got)
	}
}
