package policy

import (
	"slices"
	"testing"
)

// Cases from an adversarial review of the policy plane: what ran
// unattended under the default policy although it runs, deletes, installs
// or reaches out.

func TestWritesTheScopeCheckMissed(t *testing.T) {
	// "src" covers the directory itself (src/** only what is beneath it:
	// extracting into src is a write of src).
	p, err := Defaults().With(Layer{Scope: []string{"src"}}, "task")
	if err != nil {
		t.Fatal(err)
	}
	for line, stray := range map[string]string{
		`sed 'w /etc/x' src/a`:                      "/etc/x",
		`sed -n '/x/w out.txt' src/a`:               "/workspace/out.txt",
		`sed 's/a/b/w notes' src/a`:                 "/workspace/notes",
		`sed -e 's/a/b/gw /tmp/../etc/y' src/a`:     "/etc/y",
		`unzip x.zip -d lib`:                        "/workspace/lib",
		`unzip -dlib x.zip`:                         "/workspace/lib",
		`cd src && unzip x.zip -d ../lib`:           "/workspace/lib",
		`patch go.mod fix.diff`:                     "/workspace/go.mod",
		`patch -p1 -o out.go < fix.diff`:            "/workspace/out.go",
		`patch -d lib -p1 < fix.diff`:               "/workspace/lib",
		`split -l 10 src/a part-`:                   "/workspace/part-",
		`split src/a`:                               "/workspace/x",
		`csplit -f piece src/a /x/`:                 "/workspace/piece",
		`ssh-keygen -t ed25519 -f deploy_key -N ''`: "/workspace/deploy_key",
		`git apply --directory=lib fix.diff`:        "/workspace/lib",
		`git apply --directory lib fix.diff`:        "/workspace/lib",
		`git worktree add ../other`:                 "/other",
		`git worktree add -b topic wt main`:         "/workspace/wt",
		`git init other`:                            "/workspace/other",
		`git init --separate-git-dir=/srv/g src/x`:  "/srv/g",
		`perl -pi -e 's/a/b/' go.mod`:               "/workspace/go.mod",
		`tar -xf /tmp/x.tar`:                        "/workspace",
	} {
		d := decide(t, p, line)
		if d.Action != Deny || !slices.Contains(d.OutOfScope, stray) {
			t.Errorf("%s: %s, out of scope %v, want deny for %s (%s)", line, d.Action, d.OutOfScope, stray, d.Reason)
		}
	}
	for _, line := range []string{
		`sed -i 's/a/b/' src/a.go`,
		`sed -n 'w /dev/stdout' src/a`,
		`cd src && unzip /tmp/x.zip`,
		`unzip x.zip -d src/vendor`,
		`patch -p1 src/a.go < /tmp/fix.diff`,
		`split -l 10 src/a src/part-`,
		`git apply --directory=src fix.diff`,
		`tar -xf /tmp/x.tar -C src`,
		`perl -pi -e 's/a/b/' src/a.go`,
	} {
		if d := decide(t, p, line); d.Action != Allow {
			t.Errorf("%s: %s, want allow (%s)", line, d.Action, d.Reason)
		}
	}
}

// What agents do all day runs unattended under the default policy.
func TestOrdinaryWorkRunsUnattended(t *testing.T) {
	scoped, err := Defaults().With(Layer{Scope: []string{"src/**"}}, "task")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`git status`, `git diff`, `git diff --stat HEAD~1`, `git add -A && git commit -m 'fix: x'`, `git log --oneline -20`,
		`git -c color.ui=never diff HEAD`, `GIT_PAGER=cat git log -p -1`, `GIT_EDITOR=true git commit --amend --no-edit`,
		`git grep -n TODO -- '*.go'`, `git switch -c topic`, `git config user.email bot@example.com`,
		`go test ./...`, `go vet ./...`, `CGO_ENABLED=0 go build ./...`, `GOFLAGS=-mod=mod go build ./...`,
		`npm test`, `npx tsc -p .`, `npx jest`, `NODE_OPTIONS=--max-old-space-size=4096 npm run build`, `make`, `make test`,
		`sed -i 's/a/b/' src/x.go`, `sed -n '1,80p' src/x.go`,
		`tar -xf x.tar`, `tar -czf /tmp/dist.tar.gz src`, `perl -pi -e 's/a/b/' src/f`, `perl -pe 's/\s+$//' src/f`,
		`cat ~/.ssh/*.pub`, `cat ~/.ssh/id_ed25519.pub`, `ls .e*`, `cat *.json | jq .`, `echo .*`,
		`export PATH="$HOME/go/bin:$PATH"`, `CC=clang make`, `awk '/.*/' src/f`, `jq '.*' src/f.json`,
	} {
		for _, p := range []*Policy{Defaults(), scoped} {
			if p == scoped && line == `tar -xf x.tar` {
				continue // writes outside src: refused there, as it should be
			}
			if d := decide(t, p, line); d.Action != Allow {
				t.Errorf("%s (%s): %s, want allow (%s)", line, p.Sources, d.Action, d.Reason)
			}
		}
	}
}
