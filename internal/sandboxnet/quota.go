package sandboxnet

import (
	"context"

	"github.com/airlock-dev/airlock/internal/egress"
)

// Quota is a project's egress bytes a day (internal/quotas): asked
// before each allowed destination, told each connection's bytes.
type Quota interface {
	// AdmitEgress refuses (an error naming the quota) a new egress
	// connection of project.
	AdmitEgress(ctx context.Context, project string) error
	// EgressMoved adds n bytes a connection of project moved.
	EgressMoved(project string, n int64)
}

// egressQuota is the egress service's per-sandbox view of the quota: a
// sandbox's bytes are its project's.
type egressQuota struct {
	n *Net
	q Quota
}

var _ egress.Quota = egressQuota{}

// project is sandbox id's project; "" when it is not live (it has no
// policy then either: the service denies it before asking).
func (e egressQuota) project(id string) string {
	li, ok := e.n.core.Live(id)
	if !ok || li.View == nil {
		return ""
	}
	return li.View.Project
}

func (e egressQuota) AdmitEgress(id string) string {
	p := e.project(id)
	if p == "" {
		return "the sandbox's project is not known: its egress quota cannot be checked"
	}
	if err := e.q.AdmitEgress(context.Background(), p); err != nil {
		return err.Error()
	}
	return ""
}

func (e egressQuota) EgressMoved(id string, n int64) {
	if p := e.project(id); p != "" {
		e.q.EgressMoved(p, n)
	}
}
