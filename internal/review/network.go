package review

import (
	"context"
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/store"
)

// egressPayload is what networkRequests reads of an egress event.
type egressPayload struct {
	Time      time.Time `json:"time"`
	Exec      string    `json:"exec"`
	Conn      uint64    `json:"conn"`
	Decision  string    `json:"decision"`
	Rule      string    `json:"rule"`
	Method    string    `json:"method"`
	Host      string    `json:"host"`
	Port      int       `json:"port"`
	Status    int       `json:"status"`
	BytesUp   int64     `json:"bytes_up"`
	BytesDown int64     `json:"bytes_down"`
	Of        string    `json:"of"`
	Count     int64     `json:"count"`
	Last      time.Time `json:"last"`
}

// networkRequests is what the sandbox's egress proxy decided, from the
// audit record: one entry per CONNECT or HTTP request, with the bytes and
// status of its connection. Never nil: with no egress service, no request
// could leave the sandbox at all.
func (r *Review) networkRequests(ctx context.Context, sandboxID string) ([]bundle.NetworkRequest, error) {
	out := []bundle.NetworkRequest{}
	r.c.FlushRefusals(ctx, sandboxID) // the counts of the window still open
	events, err := r.c.AuditLog().Query(ctx, store.AuditFilter{SandboxID: sandboxID, Kind: "egress"})
	if err != nil {
		return nil, err
	}
	last := map[uint64]int{} // connection -> its latest request in out
	for _, e := range events {
		var p egressPayload
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		switch e.Kind {
		case string(egress.KindConnect), string(egress.KindRequest):
			method := p.Method
			if e.Kind == string(egress.KindConnect) {
				method = "CONNECT"
			}
			out = append(out, bundle.NetworkRequest{Time: p.Time, ExecID: p.Exec, Host: p.Host, Port: p.Port, Method: method, Decision: p.Decision, Rule: p.Rule})
			if p.Conn != 0 {
				last[p.Conn] = len(out) - 1
			}
		case string(egress.KindRefusedSummary):
			// Refusals counted, not recorded one by one.
			if p.Of == string(egress.KindConnect) || p.Of == string(egress.KindRequest) {
				out = append(out, refusedSummary(p))
			}
		case string(egress.KindClose), string(egress.KindResponse):
			if i, ok := last[p.Conn]; ok && p.Conn != 0 {
				addToRequest(&out[i], p)
			}
		}
	}
	return out, nil
}

// refusedSummary is the entry of a count of refused requests.
func refusedSummary(p egressPayload) bundle.NetworkRequest {
	method := p.Method
	if p.Of == string(egress.KindConnect) && method == "" {
		method = "CONNECT"
	}
	return bundle.NetworkRequest{Time: p.Last, ExecID: p.Exec, Host: p.Host, Port: p.Port, Method: method, Decision: "deny", Rule: p.Rule, Count: p.Count}
}

// addToRequest adds a close or response event to its connection's
// latest request: its bytes, status, and a refusal after it opened (SNI).
func addToRequest(r *bundle.NetworkRequest, p egressPayload) {
	r.BytesOut += p.BytesUp
	r.BytesIn += p.BytesDown
	if p.Status != 0 {
		r.Status = p.Status
	}
	if p.Decision == "deny" {
		r.Decision, r.Rule = p.Decision, p.Rule
	}
}
