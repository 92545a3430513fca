package policy

import "testing"

func TestDefaultsVersionIsTheDefaultsHash(t *testing.T) {
	d := Defaults()
	if got := d.computeVersion(); got != defaultsVersion || d.Version() != got {
		t.Fatalf("defaultsVersion is %s, the defaults hash to %s: set defaultsVersion = %q", defaultsVersion, got, got)
	}
}
