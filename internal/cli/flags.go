package cli

import (
	"fmt"
	"net/netip"

	"github.com/airlock-dev/airlock/internal/egress"
)

// PrefixFlag is a repeatable NAT64 prefix flag.
type PrefixFlag []netip.Prefix

func (l *PrefixFlag) String() string { return fmt.Sprint([]netip.Prefix(*l)) }
func (l *PrefixFlag) Set(v string) error {
	p, err := netip.ParsePrefix(v)
	if err != nil || !egress.ValidNAT64Prefix(p.Masked()) {
		return fmt.Errorf("%q: an IPv6 prefix of length 32, 40, 48, 56, 64 or 96", v)
	}
	*l = append(*l, p.Masked())
	return nil
}
