package presets

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

func TestDiscoverPresets(t *testing.T) {
	files := map[string]string{
		"/etc/apt/sources.list": "# comment\ndeb http://deb.mirror.example.test/debian bookworm main\n" +
			"deb [arch=amd64 signed-by=/x.gpg] https://secure.mirror.example.test/debian bookworm main\ndeb cdrom:/media stable main\n",
		"/etc/apt/sources.list.d/extra.sources": "Types: deb\nURIs: http://deb822.mirror.example.test/debian https://second.mirror.example.test/x\nSuites: bookworm\n",
		"/etc/pip.conf":                         "[global]\nindex-url = https://pypi.mirror.example.test/simple\nextra-index-url =\n    https://extra.pypi.example.test/simple\n    https://third.pypi.example.test:8443/simple\ntrusted-host = trusted.pypi.example.test\n",
		"/home/u/.cargo/config.toml":            "[source.crates-io]\nreplace-with = \"mirror\"\n\n[source.mirror]\nregistry = \"sparse+https://crates.mirror.example.test/index/\"\n[registries.corp]\nindex = \"https://corp.crates.example.test/git/index\"\n",
	}
	env := Env{
		Run: func(_ context.Context, name string, args ...string) (string, error) {
			switch name + " " + strings.Join(args, " ") {
			case "npm config get registry":
				return "https://npm.mirror.example.test/\n", nil
			case "go env GOPROXY GOSUMDB":
				return "https://goproxy.mirror.example.test|https://second.goproxy.example.test,direct\nsum.mirror.example.test+abcdef https://sumdb.mirror.example.test\n", nil
			}
			return "", errors.New("not found")
		},
		ReadFile: func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
		Glob: func(pat string) ([]string, error) {
			if strings.HasSuffix(pat, "*.sources") {
				return []string{"/etc/apt/sources.list.d/extra.sources"}, nil
			}
			return nil, nil
		},
		Getenv: func(k string) string {
			return map[string]string{"PIP_INDEX_URL": "http://env.pypi.example.test/simple"}[k]
		},
		Environ: func() []string { return []string{"CARGO_REGISTRIES_OTHER_INDEX=https://env.crates.example.test/index"} },
		Home:    "/home/u",
	}
	p, err := Discover(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := netpolicy.Presets{
		"npm":    {"npm.mirror.example.test:443"},
		"go":     {"goproxy.mirror.example.test:443", "second.goproxy.example.test:443", "sumdb.mirror.example.test:443"},
		"debian": {"deb.mirror.example.test:80", "secure.mirror.example.test:443", "deb822.mirror.example.test:80", "second.mirror.example.test:443"},
		"pypi":   {"env.pypi.example.test:80", "pypi.mirror.example.test:443", "extra.pypi.example.test:443", "third.pypi.example.test:8443", "trusted.pypi.example.test:443"},
		"crates": {"crates.mirror.example.test:443", "corp.crates.example.test:443", "env.crates.example.test:443"},
	}
	for k, v := range want {
		if !slices.Equal(p[k], v) {
			t.Errorf("%s: got %v, want %v", k, p[k], v)
		}
	}
	// The presets become rules named preset-<name>, ports from the URLs.
	c, err := netpolicy.Compile(&netpolicy.Policy{Presets: []string{"debian", "pypi"}}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Allow) != 2 || c.Allow[0].ID != "preset-debian" || !slices.Equal(c.Allow[0].Ports(netpolicy.ModeConnect), []int{80, 443}) || !c.Allow[0].MatchName("deb822.mirror.example.test") {
		t.Errorf("compiled presets: %+v", c.Allow[0])
	}
}

// On this machine: discovery runs and finds the Go module proxy the
// toolchain is configured with (unless it is off).
func TestDiscoverPresetsHere(t *testing.T) {
	p, err := Discover(context.Background(), Env{})
	t.Logf("presets found: %d npm, %d go, %d pypi, %d debian, %d crates (errors: %v)",
		len(p["npm"]), len(p["go"]), len(p["pypi"]), len(p["debian"]), len(p["crates"]), err)
	for name, hosts := range p {
		for _, h := range hosts {
			if _, err := netpolicy.ParseTarget(h, 0); err != nil {
				t.Errorf("preset %s: %q: %v", name, h, err)
			}
		}
	}
}
