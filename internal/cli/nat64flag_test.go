package cli

import "testing"

func TestNAT64PrefixFlag(t *testing.T) {
	var f PrefixFlag
	for _, ok := range []string{"2001:db8:64::/96", "2001:db8:64::1/96", "2001:db8::/32"} {
		if err := f.Set(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if f[1].String() != "2001:db8:64::/96" {
		t.Errorf("not masked: %v", f)
	}
	for _, bad := range []string{"2001:db8::/33", "10.0.0.0/8", "nonsense", "::ffff:0:0/96"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
