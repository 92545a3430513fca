// Package h1 is the HTTP/1.x the egress proxy speaks with a sandbox and
// an upstream: request heads parsed strictly, proxy and tunnel request
// targets checked, one request forwarded and its response relayed, and
// refusals written. It decides nothing and records nothing: internal/egress
// calls it between its decisions.
//
//	raw, err := h1.PeekHead(br, limit) // then h1.ParseHead(raw)
//	rt, err := h1.ParseProxyTarget(h)  // or h1.CheckTunnelTarget(h, t) inside a tunnel
//	ex := h1.Exchange{Req: req, Client: c, Up: up, UpBr: br, UpLim: lim}
//	keep := ex.Run()
//
// Invariants:
//   - A request head is refused unless every parser would read it the
//     same way: no bare CR or LF, NUL or other control bytes, folded
//     lines, spaces around a field name or extra spaces in the request
//     line; HTTP/1.0 and 1.1 only; at most 100 fields; no framing two
//     parsers could read differently (Content-Length with
//     Transfer-Encoding, two Content-Lengths, a coding but chunked).
//   - A request names one destination: a Host field that names anything
//     else than the target is refused; inside a tunnel, a request may only
//     address the tunnel's host.
//   - Hop-by-hop fields (and Proxy-Authorization) never cross the proxy;
//     an upstream's response head, interim answers included, is bounded
//     (1 MiB) and its error text in the record too (1 KiB); a protocol
//     switch is not relayed.
//   - A refusal names its rule in X-Airlock-Rule and closes the
//     connection.
//   - A response body of 64 KiB or more with a Content-Length and nothing
//     to scrub, between a TCP upstream and a TCP client, goes socket to
//     socket (splice(2)) once its head has gone back: exactly its length,
//     the bytes already buffered first, counted like any other.
//
// It imports nothing of airlock's but netpolicy (targets).
package h1
