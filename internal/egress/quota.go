package egress

import "net/http"

// RuleQuota is the rule of a destination the sandbox's quota refused
// (Config.Quota); the reason names the quota.
const RuleQuota = "quota"

// Quota bounds the bytes a sandbox's connections move (the daemon's
// quotas count them per project). It is called on the connection's path
// from many goroutines at once, so it should be quick.
type Quota interface {
	// AdmitEgress says why sandbox id may not connect to another
	// destination now ("": it may). It is asked once the policy allows
	// the destination and before the decision is recorded, so that the
	// refusal is the decision on record.
	AdmitEgress(id string) (refusal string)
	// EgressMoved adds the bytes (both ways) one connection, or one
	// plain HTTP exchange, of sandbox id moved, once it ended.
	EgressMoved(id string, n int64)
}

// quotaDecision turns an allowed decision into a refusal when sandbox
// id's quota refuses it; it keeps the decision's addresses for the
// record.
func (s *Service) quotaDecision(id string, d decision) decision {
	if !d.allow || s.cfg.Quota == nil {
		return d
	}
	if why := s.cfg.Quota.AdmitEgress(id); why != "" {
		q := deny(RuleQuota, "%s", why)
		q.addrs = d.addrs
		return q
	}
	return d
}

// moved tells the quota what a connection of sandbox id moved.
func (s *Service) moved(id string, up, down int64) {
	if s.cfg.Quota != nil && up+down > 0 {
		s.cfg.Quota.EgressMoved(id, up+down)
	}
}

// quotaStatus is the answer to a destination a quota refused.
const quotaStatus = http.StatusTooManyRequests
