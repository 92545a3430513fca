package egress

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// The connection rate is taken once per connection, but a plain-HTTP
// keep-alive connection carries any number of requests, and each is a
// decision the daemon makes (a resolution, the deny-name checks) and two
// events it writes (egress.request, egress.response): found in a review,
// one connection wrote as fast as the upstream answered. Requests after a
// connection's first take a token of the request rate (so do those inside
// a brokered host's tunnel); over it, 429.
func TestKeepAliveRequestsTakeARequestToken(t *testing.T) {
	up := startUpstream(t, nil, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	e := newEnv(t, newResolver("api.example.test", "127.0.0.1"), Config{Limits: Limits{ConnRate: 1, ConnBurst: 2, ReqRate: 1, ReqBurst: 2, RefusalWindow: time.Hour}})
	e.setPolicy(t, Policy{Rules: []Rule{{ID: "api", Action: Allow, Hosts: []string{"api.example.test"}, Ports: []int{up.port}}, loopbackRule(up.port)}})
	c := e.client(nil)
	ok, limited := 0, 0
	for range 50 {
		resp, err := c.Get("http://api.example.test:" + itoa(up.port) + "/x")
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	if limited == 0 {
		t.Errorf("no request was answered 429 (%d answered 200)", ok)
	}
	reqs := len(e.rec.find(t, KindRequest, 0))
	t.Logf("%d of 50 requests answered 200 at a rate of 1/s with bursts of 2; %d egress.request events", ok, reqs)
	if ok > 10 {
		t.Errorf("%d requests went through in well under a second at request and connection rates of 1/s, bursts of 2: keep-alive requests take no token", ok)
	}
}
