//go:build !airlock_noyaml

package policy

import "github.com/airlock-dev/airlock/internal/netpolicy"

// EgressPolicy is a layer's egress section (and a file's fetch section):
// netpolicy's policy. The front, built with airlock_noyaml, reads no
// policy files and so has none (egress_none.go).
type EgressPolicy = netpolicy.Policy

const egressDeny = netpolicy.Deny
