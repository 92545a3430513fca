package debian

import (
	"slices"
	"testing"
)

// Names that could reach mmdebstrap as options or shell words are
// refused before anything runs.
func TestCheckArgs(t *testing.T) {
	for _, o := range []Options{
		{Suite: "--aptopt=x"}, {Suite: "../x"}, {Suite: ""},
		{Suite: "bookworm", Packages: []string{"-oAPT::Foo=1"}},
		{Suite: "bookworm", Packages: []string{"a b"}},
		{Suite: "bookworm", Packages: []string{"git;rm"}},
		{Suite: "bookworm", Variant: "--hook-dir=/x"},
	} {
		if err := checkArgs(&o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
	o := Options{Suite: "bookworm", Packages: []string{"python3.11", "g++", "libc6-dev"}}
	if err := checkArgs(&o); err != nil || o.Variant != "minbase" {
		t.Errorf("good args: %v %+v", err, o)
	}
}

// Only installed packages are listed, with version and architecture.
func TestDpkgPackages(t *testing.T) {
	status := "Package: dpkg\nStatus: install ok installed\nVersion: 1.21.22\nArchitecture: amd64\nDescription: x\n continued line\n\n" +
		"Package: gone\nStatus: deinstall ok config-files\nVersion: 1\nArchitecture: amd64\n\n" +
		"Package: base-files\nStatus: install ok installed\nArchitecture: amd64\nVersion: 12.4+deb12u5\n"
	got, err := dpkgPackages([]byte(status))
	want := []string{"base-files=12.4+deb12u5 amd64", "dpkg=1.21.22 amd64"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q %v, want %q", got, err, want)
	}
	if _, err := dpkgPackages(nil); err == nil {
		t.Error("a root with no dpkg status: no error")
	}
}
