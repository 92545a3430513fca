package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/template/hostileimage"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// complete runs the bash completion for words (the last one being
// completed) and returns what it offers.
func complete(t *testing.T, script string, env []string, words ...string) []string {
	t.Helper()
	// words go in as arguments, never into the script's text
	prog := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _airlock; printf '%s\n' "${COMPREPLY[@]}"`
	c := exec.Command("bash", append([]string{"-c", prog, "complete", script, airlockBin}, words...)...)
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("complete %q: %v %s", words, err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	d := t.TempDir()
	script := filepath.Join(d, "airlock.bash")
	out, err := exec.Command(airlockBin, "completion", "bash").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, out, 0o644); err != nil {
		t.Fatal(err)
	}
	// an imported template, for --template
	layer, err := hostileimage.Layer(hostileimage.Ent{Name: "hello.txt", Body: []byte("hi\n"), Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	img, err := hostileimage.Image(v1.Config{}, layer)
	if err != nil {
		t.Fatal(err)
	}
	if err := hostileimage.WriteLayout(filepath.Join(d, "layout"), img); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(d, "data")
	if out, err := exec.Command(airlockBin, "template", "import", "--data-dir", data, "tiny-img", filepath.Join(d, "layout")).CombinedOutput(); err != nil {
		t.Fatalf("import: %v %s", err, out)
	}
	env := []string{"AIRLOCK_DATA_DIR=" + data}
	for _, c := range []struct {
		words []string
		want  []string // each offered
		not   []string // none offered
	}{
		{[]string{"sa"}, []string{"sandbox"}, []string{"serve", "run"}},
		{[]string{""}, []string{"run", "policy", "template", "completion", "version"}, nil},
		{[]string{"sandbox", "cr"}, []string{"create"}, []string{"ls"}},
		{[]string{"template", ""}, []string{"import", "ls", "inspect", "rm", "gc"}, nil},
		{[]string{"project", ""}, []string{"create", "ls", "rm"}, nil},
		{[]string{"apikey", ""}, []string{"create", "ls", "rotate", "rm"}, nil},
		{[]string{"apikey", "create", "--r"}, []string{"--role"}, nil},
		{[]string{"run", "--t"}, []string{"--template", "--tmp", "--timeout"}, []string{"--memory"}},
		{[]string{"sandbox", "create", "--te"}, []string{"--template"}, nil},
		{[]string{"run", "--template", ""}, []string{"host", "tiny-img"}, nil},
		{[]string{"run", "--template", "ti"}, []string{"tiny-img"}, []string{"host"}},
		{[]string{"run", "--backend", ""}, []string{"native", "gvisor"}, nil},
		{[]string{"policy", "check", "--policy", filepath.Join(d, "airlock.b")}, []string{script}, nil},
		{[]string{"run", "--", filepath.Join(d, "lay")}, []string{filepath.Join(d, "layout")}, nil},
	} {
		got := complete(t, script, env, c.words...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("airlock %q<TAB>: %q, want %q among them", c.words, got, w)
			}
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("airlock %q<TAB>: %q offers %q", c.words, got, w)
			}
		}
	}
	// other shells: refused, not a bash script under another name
	if out, err := exec.Command(airlockBin, "completion", "fish").CombinedOutput(); err == nil || !strings.Contains(string(out), "unsupported") {
		t.Errorf("completion fish: %v %s", err, out)
	}
}
