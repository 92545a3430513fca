package egress

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func dnsQuery(t testing.TB, name, qtype string) []byte {
	t.Helper()
	types := map[string]dnsmessage.Type{"A": dnsmessage.TypeA, "AAAA": dnsmessage.TypeAAAA, "TXT": dnsmessage.TypeTXT, "HTTPS": 65}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 4242, RecursionDesired: true})
	b.StartQuestions()
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	n, err := dnsmessage.NewName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: n, Type: types[qtype], Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func askDNS(t testing.TB, e *env, name, qtype string) (string, []netip.Addr) {
	return askDNSAs(t, e, e.who, name, qtype)
}

func askDNSAs(t testing.TB, e *env, who Source, name, qtype string) (string, []netip.Addr) {
	t.Helper()
	reply, err := e.svc.AnswerDNS(context.Background(), dnsQuery(t, name, qtype), who)
	if err != nil {
		t.Fatal(err)
	}
	return parseReply(t, reply)
}

func parseReply(t testing.TB, reply []byte) (string, []netip.Addr) {
	t.Helper()
	var p dnsmessage.Parser
	h, err := p.Start(reply)
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != 4242 || !h.Response {
		t.Fatalf("reply header %+v", h)
	}
	p.SkipAllQuestions()
	var addrs []netip.Addr
	for {
		rh, err := p.AnswerHeader()
		if err != nil {
			break
		}
		switch rh.Type {
		case dnsmessage.TypeA:
			r, _ := p.AResource()
			addrs = append(addrs, netip.AddrFrom4(r.A))
		case dnsmessage.TypeAAAA:
			r, _ := p.AAAAResource()
			addrs = append(addrs, netip.AddrFrom16(r.AAAA))
		default:
			p.SkipAnswer()
		}
	}
	return h.RCode.String(), addrs
}

func TestDNS(t *testing.T) {
	res := newResolver("api.example.test", "198.51.100.0,2001:db8::1,127.0.0.1",
		"pub.example.test", "192.0.2.1")
	e := newEnv(t, res, Config{})
	e.setPolicy(t, Policy{Rules: []Rule{
		{ID: "api", Action: Allow, Hosts: []string{"*.example.test"}},
		// The documentation ranges are reserved; open them exactly, as a
		// real policy would open an internal range.
		{ID: "doc", Action: Allow, CIDRs: []string{"198.51.100.0/24", "2001:db8::/32"}},
		{ID: "no-pub", Action: Deny, Hosts: []string{"pub.example.test"}},
	}})
	rcode, addrs := askDNS(t, e, "api.example.test.", "A")
	if rcode != "RCodeSuccess" || len(addrs) != 1 || addrs[0].String() != "198.51.100.0" {
		t.Errorf("A: %s %v (loopback must be dropped)", rcode, addrs)
	}
	rcode, addrs = askDNS(t, e, "API.example.test.", "AAAA")
	if rcode != "RCodeSuccess" || len(addrs) != 1 || addrs[0].String() != "2001:db8::1" {
		t.Errorf("AAAA: %s %v", rcode, addrs)
	}
	if rcode, addrs = askDNS(t, e, "api.example.test.", "TXT"); rcode != "RCodeSuccess" || len(addrs) != 0 {
		t.Errorf("TXT of an allowed name: %s %v", rcode, addrs)
	}
	before := len(res.lookups())
	for _, c := range []struct{ name, qtype string }{
		{"pub.example.test.", "A"},                                             // deny rule
		{"c2VjcmV0LWRhdGE.attacker.test.", "A"},                                // exfiltration: not allowed
		{"c2VjcmV0LWRhdGE.attacker.test.", "TXT"},                              // any type
		{"c2VjcmV0LWRhdGE.attacker.test.", "HTTPS"},                            // any type
		{"169.254.169.254.", "A"},                                              // an address as a name
		{strings.Repeat("a", 63) + ".x" + strings.Repeat(".b", 80) + ".", "A"}, // too long once normalised? still not allowed
	} {
		rcode, addrs := askDNS(t, e, c.name, c.qtype)
		if rcode != "RCodeNameError" || len(addrs) != 0 {
			t.Errorf("%s %s: %s %v, want NXDOMAIN", c.qtype, c.name, rcode, addrs)
		}
	}
	if got := res.lookups()[before:]; len(got) != 0 {
		t.Errorf("denied names were resolved: %v", got)
	}
	evs := e.rec.find(t, KindDNS, 9)
	last := evs[len(evs)-1]
	if last.Decision != "deny" || last.SandboxID != "sb1" || last.DNSType == "" {
		t.Errorf("dns event: %+v", last)
	}
	first := evs[0]
	if first.Decision != "allow" || first.Rule != "api" || first.DNSType != "A" || len(first.Answers) != 1 || first.Host != "api.example.test" {
		t.Errorf("dns event: %+v", first)
	}
	// No policy: NXDOMAIN, nothing resolved.
	if rcode, _ := askDNSAs(t, e, Source{SandboxID: "other"}, "api.example.test.", "A"); rcode != "RCodeNameError" {
		t.Errorf("sandbox without a policy: %s", rcode)
	}
}

func TestDNSMalformed(t *testing.T) {
	e := newEnv(t, newResolver(), Config{})
	if _, err := e.svc.AnswerDNS(context.Background(), []byte{1, 2, 3}, e.who); err == nil {
		t.Errorf("garbage answered")
	}
	if ev := e.rec.find(t, KindDNS, 1)[0]; ev.Rule != RuleParse || ev.SandboxID != "sb1" {
		t.Errorf("malformed query recorded as %+v", ev)
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 4242})
	b.StartQuestions()
	for _, n := range []string{"a.example.test.", "b.example.test."} {
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(n), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	}
	msg, _ := b.Finish()
	reply, err := e.svc.AnswerDNS(context.Background(), msg, e.who)
	if err != nil {
		t.Fatal(err)
	}
	if rcode, _ := parseReply(t, reply); rcode != "RCodeFormatError" {
		t.Errorf("two questions: %s", rcode)
	}
}
