package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"golang.org/x/net/dns/dnsmessage"
)

const (
	dnsTTL        = 30 // seconds: short, so that a policy change shows soon
	dnsMaxAnswers = 8  // keeps every answer under 512 bytes (no truncation)
)

// AnswerDNS answers one DNS query message (the payload of a UDP datagram,
// or of a TCP message without its length prefix) from a sandbox. Only A
// and AAAA queries for names the sandbox's policy allows are answered,
// with the addresses the host resolves that pass the same guards as
// connections; other types of an allowed name get an empty answer, and a
// name that is not allowed gets NXDOMAIN without any upstream being asked.
// Every query is recorded. The error is non-nil only for a message that
// cannot be answered at all (not a query); the caller drops it.
func (s *Service) AnswerDNS(ctx context.Context, query []byte, who Source) ([]byte, error) {
	return s.AnswerDNSOf(ctx, query, who.SandboxID, func() Source { return who })
}

// AnswerDNSOf is AnswerDNS with the source found only once the query is
// within the sandbox's rate and budget (see ServeProxyConnOf).
func (s *Service) AnswerDNSOf(ctx context.Context, query []byte, sandboxID string, source func() Source) ([]byte, error) {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if ok, rule, reason := s.admit(sandboxID, true); !ok {
		// Over the rate or the budget: refused before anything else is
		// done for it, and counted (not recorded one by one).
		s.refuse(ctx, Event{Kind: KindDNS, Source: Source{SandboxID: sandboxID}, Decision: "deny", Rule: rule, Reason: reason}, true)
		if err != nil || hdr.Response {
			return nil, errdefs.Wrap(errdefs.ErrLimitExceeded, "dns: %s", reason)
		}
		return refusedReply(hdr)
	}
	who := source()
	if err == nil && hdr.Response {
		err = errors.New("a response, not a query")
	}
	if err != nil {
		// Unanswerable, but still evidence of something trying.
		s.record(ctx, Event{Kind: KindDNS, Source: who, Decision: "deny", Rule: RuleParse, Reason: "malformed DNS message: " + err.Error()})
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "dns: %v", err)
	}
	qs, err := p.AllQuestions()
	ev := Event{Kind: KindDNS, Source: who, Decision: "deny", Rule: RuleParse}
	if err != nil || len(qs) != 1 {
		ev.Reason = "not exactly one question"
		return s.dnsReply(ctx, hdr, nil, dnsmessage.RCodeFormatError, nil, ev)
	}
	q := qs[0]
	ev.DNSType = strings.TrimPrefix(q.Type.String(), "Type")
	ev.Host = q.Name.String()
	if hdr.OpCode != 0 {
		ev.Reason = "only standard queries"
		return s.dnsReply(ctx, hdr, &q, dnsmessage.RCodeNotImplemented, nil, ev)
	}
	if q.Class != dnsmessage.ClassINET {
		ev.Reason = "only class IN"
		return s.dnsReply(ctx, hdr, &q, dnsmessage.RCodeRefused, nil, ev)
	}
	name := strings.TrimSuffix(q.Name.String(), ".")
	var t Target
	if strings.ContainsAny(name, ":[]") {
		err = errors.New("not a host name")
	} else if t, err = ParseTarget(name, 53); err == nil && t.IsIP() {
		err = errors.New("an address is not a name")
	}
	if err != nil {
		ev.Reason = err.Error()
		return s.dnsReply(ctx, hdr, &q, dnsmessage.RCodeNameError, nil, ev)
	}
	ev.Host = t.Host
	pol := s.policy(who.SandboxID)
	var d decision
	switch q.Type {
	case dnsmessage.TypeA:
		d = s.decide(ctx, pol, t, modeDNS, "ip4")
	case dnsmessage.TypeAAAA:
		d = s.decide(ctx, pol, t, modeDNS, "ip6")
	default:
		if s.cut.Load() {
			d = deny(RuleCut, "egress is switched off for every sandbox")
		} else {
			d, _ = pol.decideName(t, modeDNS)
		}
		d.addrs = nil
	}
	ev.Decision, ev.Rule, ev.Reason = decisionWord(d.allow), d.rule, d.reason
	if !d.allow {
		ev.Answers = d.addrs // the refused address, for the record
		if _, named := pol.decideName(t, modeDNS); named && !s.cut.Load() {
			// The name is allowed but resolved nowhere usable: an empty
			// answer, so that the other address family still counts.
			return s.dnsReply(ctx, hdr, &q, dnsmessage.RCodeSuccess, nil, ev)
		}
		return s.dnsReply(ctx, hdr, &q, dnsmessage.RCodeNameError, nil, ev)
	}
	var answers []netip.Addr
	for _, a := range d.addrs {
		if (q.Type == dnsmessage.TypeA) == a.Is4() && len(answers) < dnsMaxAnswers {
			answers = append(answers, a)
		}
	}
	ev.Answers = answers
	return s.dnsReply(ctx, hdr, &q, dnsmessage.RCodeSuccess, answers, ev)
}

// dnsReply records ev and builds the answer. If the record fails the
// answer is SERVFAIL with no addresses (fail closed).
func (s *Service) dnsReply(ctx context.Context, qh dnsmessage.Header, q *dnsmessage.Question, rcode dnsmessage.RCode, answers []netip.Addr, ev Event) ([]byte, error) {
	if err := s.record(ctx, ev); err != nil {
		rcode, answers = dnsmessage.RCodeServerFailure, nil
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), dnsmessage.Header{
		ID: qh.ID, Response: true, OpCode: qh.OpCode, RecursionDesired: qh.RecursionDesired,
		RecursionAvailable: true, RCode: rcode,
	})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if q != nil {
		if err := b.Question(*q); err != nil {
			return nil, fmt.Errorf("dns: %w", err)
		}
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, a := range answers {
		h := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		var err error
		if a.Is4() {
			h.Type = dnsmessage.TypeA
			err = b.AResource(h, dnsmessage.AResource{A: a.As4()})
		} else {
			h.Type = dnsmessage.TypeAAAA
			err = b.AAAAResource(h, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, fmt.Errorf("dns: %w", err)
		}
	}
	return b.Finish()
}

// refusedReply is REFUSED with no question echoed (the query was not read
// further).
func refusedReply(qh dnsmessage.Header) ([]byte, error) {
	b := dnsmessage.NewBuilder(make([]byte, 0, 12), dnsmessage.Header{
		ID: qh.ID, Response: true, OpCode: qh.OpCode, RecursionDesired: qh.RecursionDesired, RCode: dnsmessage.RCodeRefused,
	})
	return b.Finish()
}
