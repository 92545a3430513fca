package review

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// An agent's verify command is a test run when it runs a test runner; a
// formatter or linter (issue 19: gofmt counted as a test run) is not.
func TestWhichVerifyCommandsAreTestRuns(t *testing.T) {
	for line, want := range map[string]bool{
		"go test ./...": true, "go test -race -count=1 ./...": true, "sh -c cd src && go test ./...": true,
		"npm test": true, "npm run test": true, "pnpm test": true, "yarn test": true, "cargo test": true, "cargo +nightly test": true,
		"cargo nextest run": true, "python3 -m pytest -q": true, "pytest": true, "python -m unittest": true, "npx mocha": true,
		"npx jest --ci": true, "vitest run": true, "node --test": true, "make test": true, "make -C build check": true, "tox -e py311": true,
		"gofmt -l .": false, "go vet ./...": false, "golangci-lint run": false, "npx eslint .": false, "prettier --check .": false,
		"tsc --noEmit": false, "cargo clippy": false, "cargo check": false, "ruff check .": false, "black --check .": false, "go vet ./internal/test": false,
	} {
		if got := testRunnerRE().MatchString(line); got != want {
			t.Errorf("%q: %v, want %v", line, got, want)
		}
	}
}

// A dependency command's writes into .git, or outside the project and
// the managers' caches, are flagged; its project and cache writes are
// not.
func TestFlaggedWrites(t *testing.T) {
	fa := &runtime.FileActivity{Written: []string{"/workspace/node_modules/x/index.js", "/workspace/.git/hooks/pre-commit", "/home/sandbox/.npm/_cacache/x",
		"/home/sandbox/.bashrc", "/tmp/npm-1/x", "/home/sandbox/.cache/go-build/aa", "/home/sandbox/.config/autostart/x.desktop"}}
	got := flaggedWrites(fa)
	if fmt.Sprint(got) != "[/workspace/.git/hooks/pre-commit /home/sandbox/.bashrc /home/sandbox/.config/autostart/x.desktop]" {
		t.Errorf("flagged %q", got)
	}
	if flaggedWrites(nil) != nil {
		t.Error("no file activity")
	}
	for argv, want := range map[string]bool{"npm install --ignore-scripts=false": true, "npm install --ignore-scripts false": true, "npm install --ignore-scripts": false, "npm ci": false} {
		if got := scriptsOverride(strings.Fields(argv)); got != want {
			t.Errorf("%s: override %v", argv, got)
		}
	}
}
