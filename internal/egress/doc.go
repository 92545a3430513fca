// Package egress is the host side of a sandbox's network: an HTTP proxy
// (CONNECT and plain HTTP), a DNS filter and a secret broker, deciding
// every destination by the sandbox's Policy and recording every decision.
// The sandbox's network namespace has only loopback; the in-sandbox agent
// accepts connections on its 127.0.0.1:3128 and queries on 127.0.0.1:53
// and hands them to the host, which calls this package:
//
//	svc, err := egress.New(egress.Config{Recorder: rec, Presets: presets})
//	svc.SetPolicy(sandboxID, pol)                     // again at any time; RemoveSandbox at the end
//	pem, err := svc.CACert(sandboxID)                 // install in the sandbox's trust store
//	go svc.ServeProxyConn(ctx, conn, egress.Source{SandboxID: id, TaskID: t, ExecID: e})
//	reply, err := svc.AnswerDNS(ctx, query, who)      // one message, UDP payload or TCP without length
//	svc.CutAll(true)                                  // kill switch: every sandbox, open connections too
//
// Invariants:
//   - Default deny: a sandbox without a policy, a name no rule allows, a
//     port not allowed, the kill switch, or an event the Recorder could not
//     keep all refuse the destination before any byte goes upstream.
//   - Names are resolved only here, through Config.Resolver, and only once
//     they are allowed (a denied name is never resolved, so DNS cannot
//     carry data out). Every resolved address is checked against the
//     guarded ranges of internal/egress/guard (loopback, private,
//     link-local, CGNAT, multicast, unspecified, reserved, cloud metadata
//     in every IPv4 and IPv6 spelling); the proxy dials only the checked
//     addresses, never the name again. A guarded range opens only to an
//     allow CIDR inside that range.
//   - Hosts and requests are parsed strictly (ParseTarget, and
//     internal/egress/h1's request head parser, which refuses what two
//     parsers could read differently).
//   - A CONNECT tunnel must begin with a TLS ClientHello whose server name
//     is the target or another allowed host, unless its rule is opaque.
//   - One sandbox cannot flood the record (Limits): its DNS queries and
//     connections pass a token bucket (over it: refused at once), refusals
//     of one kind in a window are one event and a counted summary, and
//     once its events use up its audit budget its egress is cut.
//   - A quota (Config.Quota: a project's egress bytes a day) is asked
//     once the policy allows a destination and before the decision is
//     recorded: its refusal is the decision on record (rule "quota").
//     It is told each connection's bytes as it ends, and an open
//     tunnel's every QuotaPoll from the kernel's count (TCP_INFO, so the
//     relay still splices); a tunnel it then refuses is cut.
//   - A brokered secret's value never enters the sandbox: placeholders are
//     replaced in request headers only for the secret's own hosts, over TLS
//     the proxy terminates with the sandbox's CA and re-originates to the
//     real, verified host; a response that shows a value (in any form
//     internal/egress/broker knows) is refused or cut, never relayed.
//
// Events (Event, through Recorder) carry sandbox, task and exec, the
// destination, address, bytes each way, HTTP status or TLS server name,
// decision and rule id; the manager writes them to the audit log.
// DiscoverPresets (internal/egress/presets) reads the package registries
// this machine is configured to use, so that policies can name them (npm,
// go, pypi, debian, crates) without airlock naming any host. The rule model itself (Policy, Rule,
// Secret, Target, parsing, validation, matching) is internal/netpolicy,
// which internal/policy shares; the names here are aliases of it. What a
// brokered tunnel does to each request and response (the sandbox's CA,
// placeholders to values, the reflection check) is internal/egress/broker;
// this package owns the tunnel around it. The package imports nothing of
// airlock's but errdefs, netpolicy and its own sub-packages; only the
// daemon's manager (and `airlock run`) should use it.
package egress
