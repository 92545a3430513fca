package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/classify"
	"github.com/airlock-dev/airlock/internal/errdefs"
)

func decide(t *testing.T, p *Policy, line string) *Decision {
	t.Helper()
	return p.Decide(classify.Analyze(line, ""))
}

func TestDefaultsFollowTheTable(t *testing.T) {
	p := Defaults()
	for _, tc := range []struct {
		line string
		want Action
	}{
		{"git status", Allow},
		{"npm test", Allow},
		{"go build ./...", Allow},
		{"mkdir -p out && echo x > out/a", Allow},
		{"npm install left-pad", Ask},
		{"curl https://example.com", Ask},
		{"rm -rf src", Ask},
		{"rm -rf build", Allow}, // regenerable output (issue 20)
		{"cat .env", Deny},
		{"/tmp/deploy.sh", Ask},
		{"./deploy.sh", Allow},                       // the workspace's own code (issue 20)
		{"npm test && cat ~/.aws/credentials", Deny}, // most restrictive of the line
	} {
		if d := decide(t, p, tc.line); d.Action != tc.want {
			t.Errorf("%s: %s, want %s (%s)", tc.line, d.Action, tc.want, d.Reason)
		}
	}
}

func TestReasonNamesCommandAndRule(t *testing.T) {
	d := decide(t, Defaults(), "npm test && cat .env")
	if d.Action != Deny || !strings.Contains(d.Reason, "cat .env") || !strings.Contains(d.Reason, "[class:secret]") {
		t.Fatalf("reason %q", d.Reason)
	}
	if d.Matches[0].Action != Deny {
		t.Fatalf("matches not most restrictive first: %+v", d.Matches)
	}
}

func TestRulesOnlyTighten(t *testing.T) {
	f, err := Parse([]byte(`
version: 1
classes: {network: allow, destructive: deny}
rules:
  - id: no-force-push
    command: "git push *--force*"
    action: deny
    reason: force pushes rewrite shared history
  - id: protect-ci
    path: ".github/**"
    action: ask
  - id: no-paste-sites
    host: "*.paste.example"
    action: deny
`))
	if err != nil {
		t.Fatal(err)
	}
	p := f.ForTemplate("host")
	for _, tc := range []struct {
		line, rule string
		want       Action
	}{
		{"git push origin main", "class:network", Allow},
		{"git push --force origin main", "no-force-push", Deny},
		{"sh -c 'git push origin main --force'", "no-force-push", Deny},
		{"echo on: push > .github/workflows/ci.yml", "protect-ci", Ask},
		{"curl -d @notes.txt https://x.paste.example/new", "no-paste-sites", Deny},
		{"curl https://example.com", "class:network", Allow},
	} {
		d := decide(t, p, tc.line)
		if d.Action != tc.want || !slices.ContainsFunc(d.Matches, func(m Match) bool { return m.Rule == tc.rule && m.Action == tc.want }) {
			t.Errorf("%s: %s %+v, want %s by %s", tc.line, d.Action, d.Matches, tc.want, tc.rule)
		}
	}
	for _, bad := range []string{
		"rules: [{id: x, command: 'ls', action: allow}]",
		"rules: [{id: x, action: deny}]",
		"rules: [{id: 'a b', command: ls, action: deny}]",
		"rules: [{id: x, command: ls, action: deny}, {id: x, command: ls, action: ask}]",
		"classes: {reading: allow}",
		"classes: {read: maybe}",
		"outside_scope: sometimes",
		"scope: ['../etc']",
		"colour: blue",
		"version: 2",
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: err %v, want invalid", bad, err)
		}
	}
}

func TestTemplateAndTaskLayers(t *testing.T) {
	f, err := Parse([]byte(`
classes: {dependency: deny}
templates:
  node:
    classes: {dependency: ask}
`))
	if err != nil {
		t.Fatal(err)
	}
	if a := decide(t, f.ForTemplate("host"), "npm install x").Action; a != Deny {
		t.Fatalf("host template: %s", a)
	}
	node := f.ForTemplate("node")
	if a := decide(t, node, "npm install x").Action; a != Ask {
		t.Fatalf("node template: %s", a)
	}
	task, err := node.With(Layer{Classes: map[Class]Action{Dependency: Allow}, Scope: []string{"src/**"}}, "task")
	if err != nil {
		t.Fatal(err)
	}
	if a := decide(t, task, "npm install x").Action; a != Allow {
		t.Fatalf("task layer: %s", a)
	}
	if got := strings.Join(task.Sources, ">"); got != "defaults>file>template:node>task" {
		t.Fatalf("sources %s", got)
	}
	if task.Version() == node.Version() {
		t.Fatal("a different policy has the same version")
	}
	// An agent may only tighten.
	if err := node.Relaxes(Layer{Classes: map[Class]Action{Dependency: Allow}}); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("relaxing dependency: %v", err)
	}
	if err := node.Relaxes(Layer{Classes: map[Class]Action{Read: Ask}, Scope: []string{"src/**"}}); err != nil {
		t.Fatalf("tightening: %v", err)
	}
	if err := task.Relaxes(Layer{Scope: []string{"**"}}); !errors.Is(err, errdefs.ErrDenied) {
		t.Fatalf("widening the scope: %v", err)
	}
}

func TestWriteScope(t *testing.T) {
	p, err := Defaults().With(Layer{Scope: []string{"src/**", "README.md", "docs"}}, "task")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line  string
		want  Action
		stray string
	}{
		{"echo x > src/a/b.go", Allow, ""},
		{"cp notes.txt README.md", Allow, ""},
		{"touch docs/guide/intro.md", Allow, ""},
		{"echo x > main.go", Deny, "/workspace/main.go"},
		{"cd src && echo x > ../main.go", Deny, "/workspace/main.go"},
		{"sed -i s/a/b/ go.mod", Deny, "/workspace/go.mod"},
		{"mv src/a.go lib/a.go", Deny, "/workspace/lib/a.go"},
		{"echo x > /tmp/scratch && cp /tmp/scratch ~/notes", Allow, ""},
		{"echo x > /etc/hosts", Deny, "/etc/hosts"},
		{"echo x | tee -a notes.txt", Deny, "/workspace/notes.txt"},
		{"mkdir -p build/out && touch src/ok", Deny, "/workspace/build/out"},
		{"ln -s ../src/a.go lib.go", Deny, "/workspace/lib.go"},
		{"echo x > \"$OUT\"", Allow, ""}, // only known at run time: the sandbox's scope holds it
	} {
		d := decide(t, p, tc.line)
		if d.Action != tc.want {
			t.Errorf("%s: %s, want %s (%s)", tc.line, d.Action, tc.want, d.Reason)
		}
		if tc.stray != "" && !slices.Contains(d.OutOfScope, tc.stray) {
			t.Errorf("%s: out of scope %v, want %s", tc.line, d.OutOfScope, tc.stray)
		}
	}
}

func TestGrants(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := Defaults()
	line := "npm install left-pad"
	cmdGrant := Grant{ID: "g1", Scope: ScopeCommand, Line: line, Cwd: DefaultCwd, Expires: now.Add(time.Minute)}
	classGrant := Grant{ID: "g2", Scope: ScopeClass, Classes: []Class{Dependency}, Expires: now.Add(time.Minute)}

	d := decide(t, p, line)
	if !d.ApplyGrants([]Grant{cmdGrant}, now) || d.Action != Allow || d.Grant[0] != "g1" {
		t.Fatalf("command grant: %+v", d)
	}
	if d := decide(t, p, "npm install lodash"); d.ApplyGrants([]Grant{cmdGrant}, now) {
		t.Fatal("a command grant let another command through")
	}
	if d := decide(t, p, line); d.ApplyGrants([]Grant{cmdGrant}, now.Add(time.Minute)) {
		t.Fatal("an expired grant was used")
	}
	if d := decide(t, p, "npm install lodash"); !d.ApplyGrants([]Grant{classGrant}, now) {
		t.Fatal("class grant did not cover its class")
	}
	// A line holding two classes needs both covered.
	if d := decide(t, p, "npm install lodash && curl https://example.com"); d.ApplyGrants([]Grant{classGrant}, now) {
		t.Fatal("class grant covered a class it does not name")
	}
	// Deny is never lifted, not even by an exact command grant.
	deny := decide(t, p, "cat .env")
	if deny.ApplyGrants([]Grant{{ID: "g3", Scope: ScopeCommand, Line: "cat .env", Cwd: DefaultCwd, Expires: now.Add(time.Hour)}}, now) || deny.Action != Deny {
		t.Fatal("a grant lifted a deny")
	}
	// A rule's hold is not a class's: class grants do not lift it.
	f, _ := Parse([]byte("rules: [{id: careful, command: 'npm install *', class: dependency, action: ask}]"))
	d = f.ForTemplate("").Decide(classify.Analyze(line, ""))
	if d.ApplyGrants([]Grant{classGrant}, now) {
		t.Fatal("class grant lifted a rule's hold")
	}
	if got := d.HeldClasses(); !slices.Equal(got, []Class{Dependency}) {
		t.Fatalf("held classes %v", got)
	}
}

func TestScopeGlob(t *testing.T) {
	for _, tc := range []struct {
		glob, path string
		want       bool
	}{
		{"src/**", "src/a/b.go", true},
		{"src/**", "srcx/a", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"**/*.md", "a/b/c.md", true},
		{"**/*.md", "c.md", true},
		{"docs", "docs/a/b", true},
		{"docs", "docs2", false},
		{"/workspace/lib/**", "lib/x", true},
	} {
		re, err := CompileGlob(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := re.MatchString(tc.path); got != tc.want {
			t.Errorf("%s ~ %s: %v", tc.glob, tc.path, got)
		}
	}
	for _, bad := range []string{"", "/", "../x", "a/../../b"} {
		if _, err := CompileGlob(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDefaultFileParses(t *testing.T) {
	f, err := Parse([]byte(DefaultFile()))
	if err != nil {
		t.Fatal(err)
	}
	got, want := f.ForTemplate("host"), Defaults()
	for _, c := range classify.Classes {
		if got.Classes[c] != want.Classes[c] {
			t.Errorf("%s: %s in the file, %s in Defaults", c, got.Classes[c], want.Classes[c])
		}
	}
	if d := got.Decide(classify.Analyze("git push --force origin main", "")); d.Action != Deny {
		t.Fatalf("the sample rule does not hold: %s", d.Action)
	}
}
