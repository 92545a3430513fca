// Package guard knows the address ranges a sandbox's traffic never
// reaches unless a rule opens exactly that range: loopback, private,
// link-local, CGNAT, multicast, broadcast, unspecified, reserved and
// documentation space, and the cloud metadata services. internal/egress
// checks every address it would connect to or answer with:
//
//	g, guarded := guard.Classify(addr, nat64...) // refused as "guard-"+g.Kind
//	ok := guard.Unlocks(cidr, g, addr)           // unless an allow CIDR opens it
//
// Invariants:
//   - An address is judged in every spelling: an IPv6 address that
//     carries an IPv4 address (mapped, SIIT, IPv4-compatible, NAT64 under
//     the well-known, local-use or a configured prefix, 6to4, Teredo) is
//     judged by that IPv4 address first, and under the local-use prefix by
//     every layout that fits; a zone changes nothing.
//   - The narrowest range names the refusal (metadata before link-local).
//   - A CIDR opens a guarded address only if it contains it and lies
//     entirely within its range: 0.0.0.0/0 opens no guarded range, and an
//     IPv6 rule never opens an IPv4 range through an embedding.
//
// Pure: no I/O; it imports nothing of airlock's.
package guard
