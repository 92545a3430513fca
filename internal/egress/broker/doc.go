// Package broker is what the egress proxy does inside a tunnel to a host
// with brokered secrets, request by request: the sandbox's CA that
// terminates the sandbox's TLS, the placeholders swapped for values in
// the request, and the check that the response hands no value back.
// internal/egress owns the tunnel (the decisions, the records, TLS to
// the real host, the request loop) and calls it:
//
//	cert, err := ca.Leaf(sandboxID, host, now, life) // for tls.Config.GetCertificate
//	uses := broker.Inject(req.Header, secrets)       // record each use before sending
//	if sc := broker.NewScrubber(secrets, host); sc != nil {
//		sc.Request(req.Header) // before it goes upstream
//		sc.Response(resp)      // before it goes back; sc.Refusal() says why it did not
//	}
//
// Invariants:
//   - A CA's key never leaves the host; its certificate is all the sandbox
//     gets. A leaf names one host and never outlives its CA.
//   - A value goes only into the header fields its secret names
//     (Authorization unless it names others): a placeholder anywhere else
//     (another field, the URL, the body) goes upstream as it is.
//   - A response whose head or body shows a value in any form the
//     reflector knows (the value, reversed, hex, base64, base32, at any
//     offset, ignoring case, HTML-, backslash- or percent-escaped, spaced
//     or UTF-16) is never relayed: a body up to ScanWhole is checked whole
//     and refused with a 502 (rule RuleReflected); a longer one is checked
//     as it streams and cut before the window showing the value goes back.
//     A response that cannot be checked (compressed although asked not to
//     be, too large to inflate, nested too deep) is refused the same way.
//   - Checking is bounded: a compressed body is read up to 8 MiB and
//     inflated up to three layers of 32 MiB, at most InflateSlots() at
//     once in the daemon, and a text is looked at in windows of 256 KiB.
//
// It imports nothing of airlock's but netpolicy (the compiled secrets).
package broker
