package policy

import "testing"

func TestDefaultsVersionIsTheDefaultsHash(t *testing.T) {
	d := Defaults()
	if got := d.computeVersion(); got != defaultsVersion || d.Version() != got {
		t.Fatalf("defaultsVersion is %s, the defaults hash to %s: set defaultsVersion = %q", defaultsVersion, got, got)
	}
}

// A template made from another (a snapshot of it) gets the other's
// section first; its own may tighten, never relax.
func TestForTemplatesLayersTheLineage(t *testing.T) {
	f, err := Parse([]byte("version: 1\ntemplates:\n  host:\n    classes: {network: deny}\n  loose:\n    classes: {network: allow}\n  strict:\n    classes: {build: deny}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.ForTemplates([]string{"host", "snap"})
	if err != nil || p.Classes[Network] != Deny {
		t.Fatalf("a snapshot of host with no section: network %s, %v", p.Classes[Network], err)
	}
	if p, err = f.ForTemplates([]string{"host", "strict"}); err != nil || p.Classes[Network] != Deny || p.Classes[Build] != Deny {
		t.Fatalf("a tightening section: %v %v", p.Classes, err)
	}
	if _, err = f.ForTemplates([]string{"host", "loose"}); err == nil {
		t.Fatal("a section relaxing its base's was applied")
	}
	if _, err = (*File)(nil).ForTemplates([]string{"host", "x"}); err != nil {
		t.Fatalf("no file: %v", err)
	}
	if _, err = f.ForTemplates(nil); err == nil {
		t.Fatal("no template at all: no error")
	}
}
