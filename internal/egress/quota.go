package egress

import (
	"net"
	"net/http"
	"time"
)

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
	// EgressMoved adds bytes (both ways) sandbox id moved: an open
	// tunnel's as they pass, one plain HTTP exchange's once it ended.
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

// DefaultQuotaPoll is how often an open tunnel's bytes are read from the
// kernel and told to the quota (Config.QuotaPoll).
const DefaultQuotaPoll = time.Second

// tunnelMeter tells the quota an open tunnel's bytes as they pass (from
// the kernel's count of its upstream socket, never by reading them) and
// cuts the tunnel once the quota refuses more: a quota reached while a
// tunnel is open does not wait for its end.
type tunnelMeter struct {
	stop, done chan struct{}
	// told up and down so far, and why it was cut (""): written by the
	// meter's goroutine only, read once it is done.
	up, down int64
	why      string
}

// meterTunnel starts the meter of a tunnel to up (nil: no quota, or an
// upstream whose bytes the kernel does not tell).
func (pc *proxyConn) meterTunnel(up net.Conn) *tunnelMeter {
	s := pc.s
	tc, ok := up.(*net.TCPConn)
	if s.cfg.Quota == nil || !ok {
		return nil
	}
	if _, _, ok := tcpBytes(tc); !ok {
		return nil
	}
	m := &tunnelMeter{stop: make(chan struct{}), done: make(chan struct{})}
	id := pc.who.SandboxID
	go func() {
		defer close(m.done)
		t := time.NewTicker(s.cfg.QuotaPoll)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			sent, recv, ok := tcpBytes(tc)
			if !ok {
				return
			}
			du, dd := max(0, sent-m.up), max(0, recv-m.down)
			m.up, m.down = m.up+du, m.down+dd
			s.moved(id, du, dd)
			if why := s.cfg.Quota.AdmitEgress(id); why != "" {
				m.why = why
				pc.c.Close()
				up.Close()
				return
			}
		}
	}()
	return m
}

// end stops the meter: what it told the quota, and why it cut the
// tunnel ("": it did not).
func (m *tunnelMeter) end() (up, down int64, why string) {
	close(m.stop)
	<-m.done
	return m.up, m.down, m.why
}
