package lockfile

import (
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"package-lock.json", `{"lockfileVersion":3,"packages":{"":{"name":"app"},"node_modules/is-number":{"version":"7.0.0"},"node_modules/a/node_modules/is-number":{"version":"6.0.0"},"node_modules/@scope/x":{"version":"1.0.0"},"node_modules/ws":{"link":true}}}`,
			"map[@scope/x:[1.0.0] is-number:[6.0.0 7.0.0]]"},
		{"npm-shrinkwrap.json", `{"lockfileVersion":1,"dependencies":{"a":{"version":"1.0.0","dependencies":{"b":{"version":"2.0.0"}}}}}`, "map[a:[1.0.0] b:[2.0.0]]"},
		{"yarn.lock", "# yarn lockfile v1\n\n\"is-number@^7.0.0\", is-number@~7.0.0:\n  version \"7.0.0\"\n  resolved \"x\"\n\n\"@babel/core@^7.0.0\":\n  version \"7.24.0\"\n  dependencies:\n    version \"9\"\n", "map[@babel/core:[7.24.0] is-number:[7.0.0]]"},
		{"yarn.lock", "__metadata:\n  version: 8\n\n\"is-number@npm:^7.0.0\":\n  version: 7.0.0\n", "map[is-number:[7.0.0]]"},
		{"pnpm-lock.yaml", "lockfileVersion: '9.0'\npackages:\n  is-number@7.0.0:\n    resolution: {integrity: x}\n  '@scope/y@1.2.3(peer@1.0.0)':\n    resolution: {}\n  /old/4.5.6:\n    resolution: {}\nsnapshots:\n  z@9.9.9:\n", "map[@scope/y:[1.2.3] is-number:[7.0.0] old:[4.5.6]]"},
		{"go.sum", "github.com/google/uuid v1.6.0 h1:abc=\ngithub.com/google/uuid v1.6.0/go.mod h1:def=\ngolang.org/x/text v0.14.0/go.mod h1:x=\n", "map[github.com/google/uuid:[v1.6.0]]"},
		{"Cargo.lock", "version = 3\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.200\"\nsource = \"x\"\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\n \"serde\",\n]\n\n[metadata]\nname = \"no\"\n", "map[app:[0.1.0] serde:[1.0.200]]"},
		{"poetry.lock", "[[package]]\nname = \"requests\"\nversion = \"2.31.0\"\n\n[package.dependencies]\nidna = \">=2\"\n", "map[requests:[2.31.0]]"},
		{"requirements.txt", "Requests[socks]==2.31.0 ; python_version>'3'\nflask>=2\n# x==1\nidna==3.6 # pinned\n", "map[idna:[3.6] requests:[2.31.0]]"},
		{"Pipfile.lock", `{"default":{"Requests":{"version":"==2.31.0"}},"develop":{"pytest":{"version":"==8.0.0"}}}`, "map[pytest:[8.0.0] requests:[2.31.0]]"},
	} {
		p, err := Parse(c.name, []byte(c.data))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := fmt.Sprint(map[string][]string(p)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	for _, c := range [][2]string{{"package-lock.json", "{not json"}, {"go.sum", "only two\n"}, {"Pipfile.lock", "["}, {"README.md", ""},
		{"Cargo.lock", "not a lockfile at all [["}, {"uv.lock", "<html>\n"}} {
		if _, err := Parse(c[0], []byte(c[1])); err == nil {
			t.Errorf("%s %q: no error", c[0], c[1])
		}
	}
}

func TestDiff(t *testing.T) {
	before := Packages{"a": {"1.0.0"}, "b": {"1.0.0"}, "c": {"1.0.0", "2.0.0"}}
	after := Packages{"a": {"1.0.0"}, "b": {"1.1.0"}, "c": {"2.0.0"}, "d": {"0.1.0"}}
	got := fmt.Sprint(Diff(before, after))
	want := "[{b [1.0.0] [1.1.0] changed} {c [1.0.0 2.0.0] [2.0.0] changed} {d [] [0.1.0] added}]"
	if got != want {
		t.Errorf("diff %s, want %s", got, want)
	}
	if got := fmt.Sprint(Diff(after, Packages{})); got != "[{a [1.0.0] [] removed} {b [1.1.0] [] removed} {c [2.0.0] [] removed} {d [0.1.0] [] removed}]" {
		t.Errorf("all removed: %s", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("yarn.lock", "\"a@^1\":\n  version \"1\"\n")
	f.Add("pnpm-lock.yaml", "packages:\n  a@1:\n")
	f.Add("Cargo.lock", "[[package]]\nname=\"a\"\nversion=\"1\"\n")
	f.Add("package-lock.json", `{"packages":{"node_modules/a":{"version":"1"}}}`)
	f.Fuzz(func(t *testing.T, name, data string) {
		for _, n := range Names {
			p, err := Parse(n, []byte(data))
			if err == nil {
				for k, vs := range p {
					if k == "" || len(vs) == 0 {
						t.Fatalf("%s: empty entry %q %v", n, k, vs)
					}
				}
			}
		}
	})
}

func TestInstallScripts(t *testing.T) {
	npm := `{"lockfileVersion":3,"packages":{"":{"name":"app"},"node_modules/esbuild":{"version":"0.20.0","hasInstallScript":true},"node_modules/a/node_modules/core-js":{"version":"3.36.0","hasInstallScript":true},"node_modules/is-number":{"version":"7.0.0"},"../pkg":{"name":"has-script","version":"1.0.0","hasInstallScript":true},"node_modules/has-script":{"resolved":"../pkg","link":true}}}`
	got, ok, err := InstallScripts("package-lock.json", []byte(npm))
	if err != nil || !ok || fmt.Sprint(got) != "[core-js@3.36.0 esbuild@0.20.0 has-script@1.0.0]" {
		t.Errorf("npm: %v %v %v", got, ok, err)
	}
	pnpm := "lockfileVersion: '9.0'\npackages:\n  esbuild@0.20.0:\n    resolution: {integrity: x}\n    requiresBuild: true\n  is-number@7.0.0:\n    resolution: {integrity: y}\n"
	if got, ok, err := InstallScripts("pnpm-lock.yaml", []byte(pnpm)); err != nil || !ok || fmt.Sprint(got) != "[esbuild@0.20.0]" {
		t.Errorf("pnpm: %v %v %v", got, ok, err)
	}
	if got, ok, err := InstallScripts("go.sum", []byte("x v1 h1:a=\n")); got != nil || ok || err != nil {
		t.Errorf("go.sum says nothing of scripts: %v %v %v", got, ok, err)
	}
	if _, _, err := InstallScripts("package-lock.json", []byte("{")); err == nil {
		t.Error("a bad npm lockfile")
	}
}
