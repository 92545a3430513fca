package sandboxnet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// projectQuota refuses the projects in full and keeps what each moved.
type projectQuota struct {
	mu    sync.Mutex
	full  map[string]bool
	moved map[string]int64
}

func (q *projectQuota) AdmitEgress(_ context.Context, p string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.full[p] {
		return fmt.Errorf("project %s: quota egress_bytes_per_day", p)
	}
	return nil
}

func (q *projectQuota) EgressMoved(p string, n int64) {
	q.mu.Lock()
	q.moved[p] += n
	q.mu.Unlock()
}

// A sandbox's egress bytes are its project's: the service's quota asks
// and counts by the sandbox's project, and a sandbox whose project is not
// known (not live) is refused rather than counted nowhere.
func TestEgressQuotaIsTheSandboxsProjects(t *testing.T) {
	q := &projectQuota{full: map[string]bool{}, moved: map[string]int64{}}
	e := onFake(t, Config{Egress: &egress.Config{}, Quota: q}, allowPlain)
	sb, err := e.m.Create(context.Background(), sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	eq := egressQuota{n: e.n, q: q}
	if why := eq.AdmitEgress(sb.ID); why != "" {
		t.Fatalf("refused under the quota: %s", why)
	}
	eq.EgressMoved(sb.ID, 42)
	if q.moved["default"] != 42 || len(q.moved) != 1 {
		t.Errorf("moved: %v, want 42 bytes of project default", q.moved)
	}
	q.full["default"] = true
	if why := eq.AdmitEgress(sb.ID); !strings.Contains(why, "egress_bytes_per_day") {
		t.Errorf("a full project's sandbox: %q", why)
	}
	if why := eq.AdmitEgress("sb-not-live"); why == "" {
		t.Error("a sandbox that is not live was admitted")
	}
	eq.EgressMoved("sb-not-live", 7)
	if len(q.moved) != 1 {
		t.Errorf("bytes of no project were counted: %v", q.moved)
	}
}
