package tasks

import (
	"context"
	"fmt"
	"testing"
)

// The diff's dependency evidence comes from the project's own lockfiles,
// base commit against workspace, as each lockfile pins them (issue 19:
// it read manifests inside node_modules, took a manifest's email, url and
// license for packages, and showed ranges for versions).
func TestDiffDependenciesFromTheProjectsLockfiles(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	lockV3 := func(deps string) string {
		return `{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"app","version":"1.0.0","dependencies":{"is-number":"^7.0.0"}},` + deps + `}}`
	}
	repo := gitRepo(t, map[string]string{
		"package.json":      `{"name":"app","version":"1.0.0","dependencies":{"is-number":"^6.0.0"}}`,
		"package-lock.json": lockV3(`"node_modules/is-number":{"version":"6.0.0","resolved":"https://registry.example.test/is-number/-/is-number-6.0.0.tgz","integrity":"sha512-a"}`),
		"go.mod":            "module example.test/m\n\ngo 1.22\n",
		"go.sum":            "github.com/google/uuid v1.5.0 h1:a=\ngithub.com/google/uuid v1.5.0/go.mod h1:b=\n",
		"requirements.txt":  "requests==2.31.0\nidna==3.6\n",
		"Cargo.lock":        "version = 3\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.200\"\n",
	})
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	id := task.SandboxID
	for p, data := range map[string]string{
		"package.json":      `{"name":"app","version":"1.0.0","author":{"email":"a@example.test","url":"https://example.test"},"license":"MIT","dependencies":{"is-number":"^7.0.0"}}`,
		"package-lock.json": lockV3(`"node_modules/is-number":{"version":"7.0.0","resolved":"https://registry.example.test/is-number/-/is-number-7.0.0.tgz","integrity":"sha512-b"},"node_modules/kind-of":{"version":"6.0.3"}`),
		// what an install leaves in node_modules is never read
		"node_modules/is-number/package.json": `{"name":"is-number","version":"7.0.0","license":"MIT","dependencies":{"evil":"*"}}`,
		"node_modules/.package-lock.json":     lockV3(`"node_modules/phantom":{"version":"1.0.0"}`),
		"go.sum":                              "github.com/google/uuid v1.6.0 h1:c=\ngithub.com/google/uuid v1.6.0/go.mod h1:d=\ngolang.org/x/text v0.14.0 h1:e=\n",
		"requirements.txt":                    "requests==2.32.3\n",
		"Cargo.lock":                          "not a lockfile at all [[",
	} {
		r.putP(t, id, p, data)
	}
	d, err := r.tk.Diff(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range d.Dependencies {
		got[c.Manager+" "+c.Name] = fmt.Sprintf("%s %v->%v in %s", c.Change, c.From, c.To, c.Lockfile)
	}
	want := map[string]string{
		"npm is-number":             "changed [6.0.0]->[7.0.0] in package-lock.json",
		"npm kind-of":               "added []->[6.0.3] in package-lock.json",
		"go github.com/google/uuid": "changed [v1.5.0]->[v1.6.0] in go.sum",
		"go golang.org/x/text":      "added []->[v0.14.0] in go.sum",
		"pip requests":              "changed [2.31.0]->[2.32.3] in requirements.txt",
		"pip idna":                  "removed [3.6]->[] in requirements.txt",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dependencies:\n%v\nwant\n%v", got, want)
	}
	if fmt.Sprint(d.UnreadableLockfiles) != "[Cargo.lock]" {
		t.Errorf("unreadable: %v", d.UnreadableLockfiles)
	}
}

// The bundle's dependency evidence is the lockfiles' (issue 19), not a
// reading of the patch.
func TestBundleDependenciesAreTheLockfiles(t *testing.T) {
	d := &Diff{Files: []ChangedFile{{Path: "package-lock.json", Status: "modified"}, {Path: "package.json", Status: "modified"}, {Path: "Cargo.lock", Status: "modified"}},
		Dependencies:        []DependencyChange{{Manager: "npm", Lockfile: "package-lock.json", Name: "is-number", From: []string{"6.0.0"}, To: []string{"7.0.0"}, Change: "changed"}},
		UnreadableLockfiles: []string{"Cargo.lock"}}
	b := bundleDeps(d)
	got := fmt.Sprintf("%+v %v %v", b.Changes, b.Lockfiles, b.Unreadable)
	want := "[{Manager:npm Name:is-number From:6.0.0 To:7.0.0 Change:changed Lockfile:package-lock.json Integrity:}] [package-lock.json Cargo.lock] [Cargo.lock]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The diff carries each new version's lockfile hash, and a version
// whose hash changed under it is a change of its own (issue 19:
// evidence with integrity).
func TestDiffDependenciesCarryIntegrity(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{
		"go.sum":    "github.com/google/uuid v1.5.0 h1:a=\ngithub.com/google/uuid v1.5.0/go.mod h1:b=\ngolang.org/x/text v0.14.0 h1:t=\n",
		"yarn.lock": "# yarn lockfile v1\n\nms@^2.1.0:\n  version \"2.1.2\"\n  integrity sha512-old\n",
	})
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	r.putP(t, task.SandboxID, "go.sum", "github.com/google/uuid v1.6.0 h1:c=\ngithub.com/google/uuid v1.6.0/go.mod h1:d=\ngolang.org/x/text v0.14.0 h1:T=\n")
	r.putP(t, task.SandboxID, "yarn.lock", "# yarn lockfile v1\n\nms@^2.1.0:\n  version \"2.1.3\"\n  integrity sha512-new\n\nis-number@^7:\n  version \"7.0.0\"\n")
	d, err := r.tk.Diff(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Dependencies {
		got = append(got, fmt.Sprintf("%s %s %s %v", c.Change, c.Name, c.To, c.Integrity))
	}
	want := "[changed github.com/google/uuid [v1.6.0] map[v1.6.0:h1:c=] rehashed golang.org/x/text [v0.14.0] map[v0.14.0:h1:T=] " +
		"added is-number [7.0.0] map[] changed ms [2.1.3] map[2.1.3:sha512-new]]"
	if fmt.Sprint(got) != want {
		t.Errorf("dependencies\n%v\nwant\n%v", got, want)
	}
	b := bundleDeps(d)
	var hs []string
	for _, c := range b.Changes {
		hs = append(hs, c.Name+"="+c.Integrity)
	}
	if fmt.Sprint(hs) != "[github.com/google/uuid=h1:c= golang.org/x/text=h1:T= is-number= ms=sha512-new]" {
		t.Errorf("bundle integrity %v", hs)
	}
}
