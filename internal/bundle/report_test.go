package bundle

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/report.golden.html from Report")

func intp(n int) *int { return &n }

// sampleContents is one realistic run: the agent fixed a rounding bug, a
// first test run failed and a second passed, it touched a CI file outside
// its scope, added a dependency with an approval, ran curl by break-glass,
// left an .env file with a secret, and one command printed a script tag
// and terminal colours.
func sampleContents() *Contents {
	t0 := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	decided := at(95)
	patch := `diff --git a/src/cart/discount.go b/src/cart/discount.go
index 3b18e51..a2c4f9d 100644
--- a/src/cart/discount.go
+++ b/src/cart/discount.go
@@ -8,9 +8,10 @@ import "math"
 // Apply returns price after a discount of pct (0.1 is 10%).
 func Apply(price, pct float64) float64 {
-	return price * (1 - pct)
+	return roundCents(price * (1 - pct))
 }
 
-// TODO: rounding
+// roundCents rounds half away from zero, as the till does.
+func roundCents(v float64) float64 { return math.Round(v*100) / 100 }
 
 // Total sums the lines.
 func Total(lines []Line) float64 {
diff --git a/tests/discount_test.go b/tests/discount_test.go
new file mode 100644
index 0000000..5d1e0c2
--- /dev/null
+++ b/tests/discount_test.go
@@ -0,0 +1,9 @@
+package tests
+
+import "testing"
+
+func TestApplyRounds(t *testing.T) {
+	if got := cart.Apply(9.99, 0.15); got != 8.49 {
+		t.Errorf("Apply = %v, want 8.49 /* \u202e admin */", got)
+	}
+}
diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml
index 77aa01b..8e2f3c4 100644
--- a/.github/workflows/ci.yml
+++ b/.github/workflows/ci.yml
@@ -12,3 +12,3 @@ jobs:
       - uses: actions/checkout@v4
-      - run: go test ./...
+      - run: go test ./... || true
       - run: go vet ./...
diff --git a/go.sum b/go.sum
index 1c2d3e4..5f6a7b8 100644
--- a/go.sum
+++ b/go.sum
@@ -1,2 +1,4 @@
 github.com/google/go-cmp v0.6.0 h1:ofyhxvXcZhMsU5ulbFiLKl/XBFqE1GSq7atu8tAmTRI=
 github.com/google/go-cmp v0.6.0/go.mod h1:17dUlkBOakJ0+DkrSSNjCkIjxS6bF9zb3elmeNGIjoY=
+golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ=
+golang.org/x/text v0.14.0/go.mod h1:18ZOQIKpY8NJVqYksKHtTdi31H5itFRjB5/qKTNYzSU=
`
	// The test file's line hides a right-to-left override (a "Trojan Source" trick).
	patch = strings.Replace(patch, `\u202e`, "\u202e", 1)
	fail := "=== RUN   TestApplyRounds\n    discount_test.go:7: Apply = 8.4915, want 8.49\n--- FAIL: TestApplyRounds (0.00s)\nFAIL\nFAIL\texample.com/shop/tests\t0.004s\n"
	pass := "ok  \texample.com/shop/src/cart\t0.003s\nok  \texample.com/shop/tests\t0.004s\n"
	return &Contents{
		Manifest: Manifest{
			Task: "task-41: round discounted prices to cents", Sandbox: "sbx-7f3a9c", Repo: "https://git.example.com/shop/web.git",
			Ref: "main", Commit: "9f1c2e7d4b5a6c8e0f1a2b3c4d5e6f708192a3b4",
			Prompt:   "Discounted prices show fractions of a cent (8.4915).\nRound them to cents, half away from zero, and add a test.",
			Scope:    []string{"src/cart/**", "tests/**"},
			Test:     "go test ./...",
			Template: "go-1.26", TemplateVersion: "3", Backend: "native", Policy: "policy-2026-11-01",
			Created: t0, Finished: at(300),
			Chain: ChainHead{Seq: 1187, Hash: "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
				PublicKey: "9Qy4mN2vX8kLp3rT6wZ1aB5cD7eF0gH2iJ4kL6mN8oQ="},
		},
		Patch: patch,
		Files: []File{
			{Path: "src/cart/discount.go", Status: "modified", InScope: true},
			{Path: "tests/discount_test.go", Status: "added", InScope: true},
			{Path: ".github/workflows/ci.yml", Status: "modified", InScope: false},
			{Path: "go.sum", Status: "modified", InScope: true},
		},
		OutOfScope: []string{".github/workflows/ci.yml"},
		Commands: []Command{
			{ExecID: "e1", Argv: []string{"go", "test", "./..."}, Cwd: "/workspace", Started: at(10), Ended: at(14), ExitCode: intp(1),
				Policy: &PolicySummary{Action: "allow", Classes: []string{"verify"}}, StdoutBytes: len(fail) + 47},
			{ExecID: "e2", Argv: []string{"sed", "-i", "s/return price \\* (1 - pct)/return roundCents(price * (1 - pct))/", "src/cart/discount.go"},
				Cwd: "/workspace", Started: at(40), Ended: at(41), ExitCode: intp(0),
				Policy: &PolicySummary{Action: "allow", Classes: []string{"write"}}, Writes: []string{"src/cart/discount.go"}},
			{ExecID: "e3", Argv: []string{"go", "get", "golang.org/x/text@v0.14.0"}, Cwd: "/workspace", Started: at(96), Ended: at(99), ExitCode: intp(0),
				Policy:      &PolicySummary{Action: "allow", Classes: []string{"dependency", "network"}, Rules: []string{"class:dependency"}, Grant: []string{"g-5"}},
				StderrBytes: 61, Writes: []string{"go.mod", "go.sum"}},
			{ExecID: "e4", Argv: []string{"go", "test", "./..."}, Cwd: "/workspace", Started: at(120), Ended: at(123), ExitCode: intp(0),
				Policy: &PolicySummary{Action: "allow", Classes: []string{"verify"}}, StdoutBytes: len(pass)},
			{ExecID: "e5", Argv: []string{"curl", "-sS", "https://paste.example.net/upload", "--data-binary", "@coverage.out"}, Cwd: "/workspace",
				Started: at(200), Ended: at(201), ExitCode: intp(0),
				Policy: &PolicySummary{Action: "allow", Classes: []string{"network"}, Rules: []string{"deny-uploads"}, BreakGlass: "bg-12"}},
			{ExecID: "e6", Argv: []string{"rm", "-rf", "/"}, Cwd: "/workspace", Started: at(210),
				Error: "denied by policy: rm -rf / is destructive (rule class:destructive)", Policy: &PolicySummary{Action: "deny", Classes: []string{"destructive"}, Rules: []string{"class:destructive"}}},
			{ExecID: "e7", Argv: []string{"sleep", "infinity"}, Cwd: "/workspace", Started: at(220), Ended: at(280), Limit: "timeout", Signal: "SIGKILL",
				Policy: &PolicySummary{Action: "allow", Classes: []string{"read"}}},
		},
		Outputs: map[string][2][]byte{
			"e1": {[]byte(fail + "\x1b[31mFAIL\x1b[0m <script>alert(1)</script>\n"), nil},
			"e3": {nil, []byte("go: downloading golang.org/x/text v0.14.0\ngo: added golang.org/x/text v0.14.0\n")},
			"e4": {[]byte(pass), nil},
			"e9": {[]byte("output of an exec the record has no command for\n"), nil},
		},
		Tests: []TestRun{
			{ExecID: "e1", Command: "go test ./...", Passed: false, ExitCode: 1, Started: at(10), Finished: at(14), Summary: ParseTestOutput(fail)},
			{ExecID: "e4", Command: "go test ./...", Passed: true, ExitCode: 0, Started: at(120), Finished: at(123), Summary: ParseTestOutput(pass)},
		},
		Approvals: []Approval{
			{ID: "ap-3", State: "approved", Command: "go get golang.org/x/text@v0.14.0", Classes: []string{"dependency", "network"},
				Effect: "adds golang.org/x/text to go.mod", RequestedBy: "agent:claude", Created: at(60), DecidedBy: "alice@example.com",
				Decided: &decided, Reason: "needed for currency formatting", Grant: "g-5"},
		},
		Network: []NetworkRequest{
			{Time: at(97), ExecID: "e3", Host: "goproxy.example.test", Port: 443, Method: "GET", Status: 200, Decision: "allow", Rule: "go-proxy", BytesOut: 512, BytesIn: 180344},
			{Time: at(98), ExecID: "e3", Host: "sumdb.example.test", Port: 443, Method: "GET", Status: 200, Decision: "allow", Rule: "go-proxy", BytesOut: 300, BytesIn: 4200},
			{Time: at(98), ExecID: "e3", Host: "goproxy.example.test", Port: 443, Method: "GET", Status: 200, Decision: "allow", Rule: "go-proxy", BytesOut: 480, BytesIn: 2100},
			{Time: at(200), ExecID: "e5", Host: "paste.example.net", Port: 443, Method: "POST", Decision: "deny", Rule: "default-deny", BytesOut: 0, BytesIn: 0},
		},
		Dependencies: Dependencies{
			Changes: []DependencyChange{{Manager: "go", Name: "golang.org/x/text", To: "v0.14.0", Change: "added", Integrity: "h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ="},
				{Manager: "go", Name: "golang.org/x/sys", From: "v0.16.0", To: "v0.16.0", Change: "rehashed", Integrity: "h1:xWw16ngr6ZMtmxDyKyIgsE93KNKz5HKmMa3b8ALHidU="}},
			Lockfiles: []string{"go.sum"},
		},
		Artifacts: []Artifact{
			{Path: "coverage.out", Size: 2048, Type: "text", Included: true},
			{Path: ".env.local", Size: 96, Type: "text", Findings: []string{"aws-access-key"}},
			{Path: "bin/shop", Size: 14 << 20, Type: "executable", Large: true},
		},
		ArtifactData: map[string][]byte{"coverage.out": []byte("mode: set\n")},
	}
}

func TestReportGolden(t *testing.T) {
	got, err := Report(sampleContents())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.html")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestReportGolden -update-golden to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Report differs from %s (run with -update-golden to accept, then review the diff)", golden)
	}
}

func TestReportDeterministic(t *testing.T) {
	a, err := Report(sampleContents())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // map iteration order differs from run to run
		b, _ := Report(sampleContents())
		if !bytes.Equal(a, b) {
			t.Fatal("two reports of the same contents differ")
		}
	}
}

// verdicts maps each question to its verdict word in a rendered page.
var verdictRE = regexp.MustCompile(`<h3>([^<]+?)\s*<span class="verdict (\w+)">([^<]+)</span></h3>`)

func verdicts(page string) map[string]string {
	v := map[string]string{}
	for _, m := range verdictRE.FindAllStringSubmatch(page, -1) {
		v[m[1]] = m[3]
	}
	return v
}

func TestReportVerdicts(t *testing.T) {
	render := func(t *testing.T, c *Contents) string {
		t.Helper()
		b, err := Report(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const (
		qTests     = "Did tests run and pass?"
		qScope     = "Were files outside the scope changed?"
		qDeps      = "Were dependencies added or changed?"
		qGenerated = "Were generated files rewritten?"
		qNetwork   = "Was the network contacted, and where?"
		qApprovals = "Which approvals were given, and by whom?"
		qArtifacts = "Are there large or sensitive artifacts?"
	)
	for _, tc := range []struct {
		name     string
		change   func(c *Contents)
		want     map[string]string
		contains []string
	}{
		{"sample", func(*Contents) {}, map[string]string{qTests: "passed", qScope: "yes", qDeps: "yes", qGenerated: "yes",
			qNetwork: "yes", qApprovals: "break-glass used", qArtifacts: "yes"},
			[]string{"Earlier runs: 1 failed, 0 passed.", "lockfile: go.sum", "BREAK-GLASS: curl -sS"}},
		{"nothing happened", func(c *Contents) {
			*c = Contents{Manifest: Manifest{Task: "t", Scope: []string{"src/**"}}, Network: []NetworkRequest{}}
		}, map[string]string{qTests: "not run", qScope: "no", qDeps: "no", qGenerated: "no", qNetwork: "no", qApprovals: "none", qArtifacts: "no"},
			[]string{"No tests were run.", "The patch is empty", "No network request was made.", "No command was run."}},
		{"network not recorded", func(c *Contents) { c.Network = nil }, map[string]string{qNetwork: "not recorded"},
			[]string{"cannot say whether the network was contacted"}},
		{"last run failed", func(c *Contents) { c.Tests = c.Tests[:1] }, map[string]string{qTests: "failed"},
			[]string{"The only test run (go test ./..., exec e1", "failed, exit code 1.", "failed: TestApplyRounds"}},
		{"passed without tests", func(c *Contents) {
			c.Tests = []TestRun{{ExecID: "e4", Command: "pytest", Passed: true, Summary: &TestSummary{Framework: "pytest"}}}
		}, map[string]string{qTests: "passed, but no tests"}, []string{"nothing was tested"}},
		{"files written after the tests", func(c *Contents) { c.Commands[4].Writes = []string{"src/cart/discount.go"} },
			map[string]string{qTests: "passed"}, []string{"1 command(s) wrote files after the last test run"}},
		{"no scope", func(c *Contents) { c.Manifest.Scope, c.OutOfScope = nil, nil; c.Files[2].InScope = true },
			map[string]string{qScope: "no scope set"}, nil},
		{"scope from files alone", func(c *Contents) { c.OutOfScope = nil }, map[string]string{qScope: "yes"},
			[]string{"1 changed file(s) lie outside the task&#39;s scope"}},
		{"lockfile without recorded change", func(c *Contents) { c.Dependencies = Dependencies{} },
			map[string]string{qDeps: "files changed"}, []string{"lockfile: go.sum"}},
		{"approval without break-glass", func(c *Contents) { c.Commands = c.Commands[:4] },
			map[string]string{qApprovals: "1 given"}, []string{"1 approval(s) requested, 1 given (by alice@example.com)."}},
		{"only a large artifact", func(c *Contents) { c.Artifacts = c.Artifacts[2:] }, map[string]string{qArtifacts: "yes"}, nil},
		{"plain artifacts", func(c *Contents) { c.Artifacts = c.Artifacts[:1] }, map[string]string{qArtifacts: "no"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sampleContents()
			tc.change(c)
			page := render(t, c)
			got := verdicts(page)
			if len(got) != 7 {
				t.Errorf("%d questions on the page, want 7: %v", len(got), got)
			}
			for q, want := range tc.want {
				if got[q] != want {
					t.Errorf("%q: verdict %q, want %q", q, got[q], want)
				}
			}
			for _, s := range tc.contains {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q", s)
				}
			}
		})
	}
}

// hostile puts markup, terminal escapes and invisible characters in every
// string the record holds.
func TestReportHostileRecord(t *testing.T) {
	const evil = "</title></style><script>alert(1)</script><img src=x onerror=alert(2)>\x1b]8;;http://evil.example/\x07link\u202e\u200b\x00\xff\u3164\u2800\ufe0f"
	c := sampleContents()
	m := &c.Manifest
	m.Task, m.Sandbox, m.Repo, m.Ref, m.Commit, m.Prompt = evil, evil, evil, evil, evil, evil
	m.Scope, m.Test, m.Template, m.TemplateVersion, m.Backend, m.Policy = []string{evil}, evil, evil, evil, evil, evil
	m.Chain.Hash, m.Chain.PublicKey = evil, evil
	c.Patch = "diff --git a/" + evil + " b/" + evil + "\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-" + evil + "\n+" + evil + "\n"
	c.Files = append(c.Files, File{Path: evil, Status: evil})
	c.OutOfScope = append(c.OutOfScope, evil)
	cmd := &c.Commands[0]
	cmd.ExecID, cmd.Argv, cmd.Cwd, cmd.Signal, cmd.Limit, cmd.Error, cmd.Writes = evil, []string{evil}, evil, evil, evil, evil, []string{evil}
	cmd.Policy = &PolicySummary{Action: evil, Classes: []string{evil}, Rules: []string{evil}, Grant: []string{evil}, BreakGlass: evil}
	c.Outputs[evil] = [2][]byte{[]byte(evil), []byte(evil)}
	c.Tests = append(c.Tests, TestRun{ExecID: evil, Command: evil, Summary: &TestSummary{Framework: evil, Failures: []string{evil}}})
	c.Approvals = append(c.Approvals, Approval{ID: evil, State: evil, Command: evil, Classes: []string{evil}, Effect: evil,
		RequestedBy: evil, DecidedBy: evil, Reason: evil, Grant: evil})
	c.Network = append(c.Network, NetworkRequest{Host: evil, Method: evil, Decision: evil, Rule: evil})
	c.Dependencies.Changes = append(c.Dependencies.Changes, DependencyChange{Manager: evil, Name: evil, From: evil, To: evil, Change: evil})
	c.Dependencies.Lockfiles = append(c.Dependencies.Lockfiles, evil)
	c.Artifacts = append(c.Artifacts, Artifact{Path: evil, Type: "executable", Findings: []string{evil}})

	b, err := Report(c)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"<script", "<img", "href=\"http"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u200b", "\x00", "\xff", "\u3164", "\u2800", "\ufe0f"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q raw", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `<span class="esc">\x1b</span>`, `\u202e\u200b\x00\xff\u3164\u2800\ufe0f`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<style>"); n != 1 {
		t.Errorf("%d style elements, want 1", n)
	}
}

func TestReportNil(t *testing.T) {
	if _, err := Report(nil); err == nil {
		t.Error("Report(nil) succeeded")
	}
}

func TestReportLongOutputAndPatch(t *testing.T) {
	c := sampleContents()
	c.Outputs["e1"] = [2][]byte{append([]byte("a"), bytes.Repeat([]byte("é"), maxOutputShown)...), nil} // the cut lands inside a character
	var p strings.Builder
	p.WriteString("diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1,6000 @@\n")
	for range 6000 {
		p.WriteString("+line\n")
	}
	c.Patch = p.String()
	b, err := Report(c)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"more bytes not shown: outputs/e1.stdout in the bundle has them all.",
		"1004 more line(s) of this file's diff are not shown", // 4 header lines and 6000 added, 5000 shown
		"(collapsed: open to read)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `\xc3`) {
		t.Error("the output was cut inside a character")
	}
}

func TestParsePatch(t *testing.T) {
	for _, tc := range []struct {
		name, patch string
		want        []patchFile // Path, OldPath, hint, Binary, Adds, Dels
	}{
		{"a removed line that looks like a header", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n--- a/y\n+++ b/y\n",
			[]patchFile{{Path: "x", OldPath: "x", Adds: 1, Dels: 1}}},
		{"plain diff -u, two files", "--- a/one.c\t2026-01-01 10:00:00\n+++ b/one.c\t2026-01-02 10:00:00\n@@ -1 +1 @@\n-a\n+b\n--- two.c\n+++ two.c\n@@ -1,0 +2 @@\n+c\n",
			[]patchFile{{Path: "one.c", OldPath: "one.c", Adds: 1, Dels: 1}, {Path: "two.c", OldPath: "two.c", Adds: 1}}},
		{"rename", "diff --git a/old name.go b/new name.go\nsimilarity index 90%\nrename from old name.go\nrename to new name.go\n",
			[]patchFile{{Path: "new name.go", OldPath: "old name.go", hint: "renamed"}}},
		{"deleted", "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
			[]patchFile{{Path: "gone.txt", OldPath: "gone.txt", hint: "deleted", Dels: 1}}},
		{"git binary patch", "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\nGIT binary patch\nliteral 12\nTcmZ?wbhEHbRA6LeU|<9Q0C)fb\n\nliteral 0\nHcmV?d00001\n\n",
			[]patchFile{{Path: "logo.png", OldPath: "logo.png", hint: "added", Binary: true}}},
		{"quoted names", "diff --git \"a/tab\\there.txt\" \"b/tab\\there.txt\"\n--- \"a/tab\\there.txt\"\n+++ \"b/tab\\there.txt\"\n@@ -1 +1 @@\n-a\n+b\n",
			[]patchFile{{Path: "tab\there.txt", OldPath: "tab\there.txt", Adds: 1, Dels: 1}}},
		{"no newline at end", "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n\\ No newline at end of file\n",
			[]patchFile{{Path: "f", OldPath: "f", Adds: 1, Dels: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, files := parsePatch(tc.patch)
			if len(files) != len(tc.want) {
				t.Fatalf("%d files, want %d", len(files), len(tc.want))
			}
			for i, f := range files {
				w := tc.want[i]
				if f.Path != w.Path || f.OldPath != w.OldPath || f.hint != w.hint || f.Binary != w.Binary || f.Adds != w.Adds || f.Dels != w.Dels {
					t.Errorf("file %d: got path %q old %q hint %q binary %v +%d -%d; want %q %q %q %v +%d -%d", i,
						f.Path, f.OldPath, f.hint, f.Binary, f.Adds, f.Dels, w.Path, w.OldPath, w.hint, w.Binary, w.Adds, w.Dels)
				}
			}
		})
	}
}

func TestGeneratedReason(t *testing.T) {
	for p, want := range map[string]bool{
		"api/v1/user.pb.go": true, "zz_generated.deepcopy.go": true, "web/dist/app.js": true, "vendor/x/y.go": true,
		"assets/app.min.js": true, "go.sum": true, "frontend/package-lock.json": true, "schema.gen.ts": true,
		"node_modules/left-pad/index.js": true, "src/build/output.o": true,
		"src/builder.go": false, "cmd/distance.go": false, "README.md": false, "go.mod": false, "src/generate.go": false,
	} {
		if got := generatedReason(p) != ""; got != want {
			t.Errorf("generatedReason(%q) = %q, want generated %v", p, generatedReason(p), want)
		}
	}
}

// findChromium returns Debian's chromium, or skips (fails under CI) when
// there is none.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no chromium or chromium-browser on PATH: the report's headless-browser test needs Debian's chromium (scripts/setup.sh installs it)"
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// TestReportInBrowser renders the sample in a real browser and checks the
// DOM it built: what the reviewer sees, not what the template wrote.
func TestReportInBrowser(t *testing.T) {
	chromium := findChromium(t)
	page, err := Report(sampleContents())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	// chromium's helpers may still be writing its profile when it exits: a
	// directory of its own, removed on a best-effort basis.
	profile, err := os.MkdirTemp("", "airlock-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+profile, "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--dump-dom", "file://"+file)
	cmd.Env = append(os.Environ(), "HOME="+profile)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("chromium --dump-dom took %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, lastLines(stderr.String(), 20))
	}
	dom := string(out)
	if !strings.Contains(dom, `<section id="diff">`) {
		t.Fatalf("chromium's DOM has no diff section:\n%.2000s\nstderr:\n%s", dom, lastLines(stderr.String(), 20))
	}

	// The diff: an added line, as text, in an added row.
	added := regexp.MustCompile(`<tr class="add"><td class="n"></td><td class="n">10</td><td class="m">\+</td><td>\s*return roundCents\(price \* \(1 - pct\)\)</td></tr>`)
	if !added.MatchString(dom) {
		t.Error("the added line return roundCents(price * (1 - pct)) is not in an added row of the DOM")
	}
	if !regexp.MustCompile(`<td class="m">-</td><td>\s*return price \* \(1 - pct\)</td>`).MatchString(dom) {
		t.Error("the removed line is not in the DOM")
	}

	// The questions, each with its verdict.
	want := map[string]string{
		"Did tests run and pass?":                  "passed",
		"Were files outside the scope changed?":    "yes",
		"Were dependencies added or changed?":      "yes",
		"Were generated files rewritten?":          "yes",
		"Was the network contacted, and where?":    "yes",
		"Which approvals were given, and by whom?": "break-glass used",
		"Are there large or sensitive artifacts?":  "yes",
	}
	got := verdicts(dom)
	for q, v := range want {
		if got[q] != v {
			t.Errorf("question %q: verdict %q in the DOM, want %q", q, got[q], v)
		}
	}
	if !regexp.MustCompile(`<p class="alert">BREAK-GLASS: curl -sS https://paste.example.net/upload --data-binary @coverage.out \(exec e5\) ran by operator override bg-12`).MatchString(dom) {
		t.Error("the break-glass command is not called out")
	}
	if !strings.Contains(dom, "<li class=\"mono\">.github/workflows/ci.yml</li>") {
		t.Error("the out-of-scope file is not listed")
	}

	// The record's script is text, and the page has no script at all.
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the script tag from the output does not appear as text")
	}
	if regexp.MustCompile(`(?i)<script`).MatchString(dom) {
		t.Error("the DOM holds a script element")
	}
	if !strings.Contains(dom, `<span class="esc">\x1b</span>[31mFAIL<span class="esc">\x1b</span>[0m`) || strings.Contains(dom, "\x1b") {
		t.Error("the terminal escape in the output is not shown as \\x1b")
	}
	if !strings.Contains(dom, `<span class="esc">\u202e</span>`) || strings.Contains(dom, "\u202e") {
		t.Error("the right-to-left override in the patch is not shown as \\u202e")
	}

	// The diff comes first.
	iDiff := strings.Index(dom, "roundCents(price * (1 - pct))")
	iQuestions := strings.Index(dom, `<section id="questions">`)
	iCommands := strings.Index(dom, `<section id="commands">`)
	if iDiff < 0 || iQuestions < 0 || iCommands < 0 || iDiff > iQuestions || iQuestions > iCommands {
		t.Errorf("document order: diff at %d, questions at %d, commands at %d; want diff, questions, commands", iDiff, iQuestions, iCommands)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(len(l)-n, 0):], "\n")
}
