package egress

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Explain says what the proxy does, for each kind of outcome, and it
// neither dials nor records: the proxy's own answer for the same
// destination is the check.
func TestExplainIsWhatTheProxyDoes(t *testing.T) {
	res := newResolver("api.example.test", "127.0.0.1", "mirror.example.test", "192.0.2.7", "web.example.test", "127.0.0.1")
	e := newEnv(t, res, Config{})
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "api", Action: Allow, Hosts: []string{"api.example.test", "mirror.example.test"}, Ports: []int{443, 8443}},
		loopbackRule(443, 8443),
		{ID: "no-web", Action: Deny, Hosts: []string{"web.example.test"}},
	}, Secrets: []Secret{{ID: "tok", Placeholder: "AIRLOCK-PLACEHOLDER-ex-0001", Hosts: []string{"api.example.test"}, Value: "s3cret-value"}}})
	for _, c := range []struct {
		dest, proxyTarget string
		allow             bool
		rule, mode        string
		reason            string
	}{
		{"https://api.example.test/v1/x", "api.example.test:443", true, "api", "CONNECT", ""},
		{"api.example.test:8443", "api.example.test:8443", true, "api", "CONNECT", ""},
		{"https://api.example.test:9000/", "api.example.test:9000", false, RulePort, "CONNECT", "port 9000"},
		{"https://nowhere.example.test/", "nowhere.example.test:443", false, RuleDefaultDeny, "CONNECT", "not in this sandbox's egress policy"},
		{"https://web.example.test/", "web.example.test:443", false, "no-web", "CONNECT", "denied by rule no-web"},
		{"https://mirror.example.test/", "mirror.example.test:443", false, "guard-reserved", "CONNECT", "cidrs: [192.0.2.7/32]"},
	} {
		recorded := len(e.rec.all())
		x, err := e.svc.Explain(context.Background(), "sb1", c.dest)
		if err != nil {
			t.Fatalf("%s: %v", c.dest, err)
		}
		if n := len(e.rec.all()); n != recorded {
			t.Errorf("Explain(%s) recorded %d events", c.dest, n-recorded)
		}
		if (x.Decision == "allow") != c.allow || x.Rule != c.rule || x.Mode != c.mode || !strings.Contains(x.Reason, c.reason) {
			t.Errorf("%s: %+v", c.dest, x)
		}
		if c.allow {
			continue // allowed destinations are not dialed here: the test dials nothing
		}
		resp, _ := e.connect(t, c.proxyTarget)
		if resp.StatusCode == 200 || ruleOf(resp) != x.Rule || !strings.Contains(resp.Status, x.Reason) {
			t.Errorf("%s: Explain says %q (rule %s), the proxy answered %q (rule %s)", c.dest, x.Reason, x.Rule, resp.Status, ruleOf(resp))
		}
	}
	x, _ := e.svc.Explain(context.Background(), "sb1", "https://api.example.test/")
	if !slices.Equal(x.Brokered, []string{"tok"}) || strings.Contains(x.String(), "s3cret") || len(x.Addrs) != 1 {
		t.Errorf("brokered %+v", x)
	}
	if plain, _ := e.svc.Explain(context.Background(), "sb1", "http://api.example.test/"); plain.Mode != "HTTP" || plain.Target != "api.example.test:80" || plain.Rule != RulePort {
		t.Errorf("plain http: %+v", plain)
	}
	if other, _ := e.svc.Explain(context.Background(), "sb-other", "https://api.example.test/"); other.Decision != "deny" {
		t.Errorf("another sandbox's policy: %+v", other)
	}
	if n := e.dial.count(); n != 0 {
		t.Errorf("%d dials", n)
	}
}

func TestExplainRefusesWhatIsNotADestination(t *testing.T) {
	e := newEnv(t, newResolver(), Config{})
	for _, dest := range []string{"", "ftp://x.example.test/", "https:///path", "https://user@x.example.test/", "x.example.test:99999", "http://[::1"} {
		if _, err := e.svc.Explain(context.Background(), "sb1", dest); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%q: %v", dest, err)
		}
	}
}
