package review

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/lazyre"
	"github.com/airlock-dev/airlock/internal/store"
)

var lockfiles = map[string]string{"package-lock.json": "npm", "npm-shrinkwrap.json": "npm", "yarn.lock": "yarn", "pnpm-lock.yaml": "pnpm",
	"go.sum": "go", "Cargo.lock": "cargo", "poetry.lock": "pip", "Pipfile.lock": "pip", "uv.lock": "pip", "composer.lock": "composer",
	"Gemfile.lock": "bundler", "requirements.txt": "pip"}

var (
	goRequireRE = lazyre.New(`^([+-])\s*(?:require\s+)?([a-zA-Z0-9.\-_/~]+\.[a-z]{2,}[a-zA-Z0-9.\-_/~]*)\s+(v[0-9][^\s/]*)(\s*//.*)?$`)
	npmDepRE    = lazyre.New(`^([+-])\s*"(@?[a-zA-Z0-9._\-/]+)":\s*"([^"]+)",?$`)
	pipReqRE    = lazyre.New(`^([+-])([A-Za-z0-9_.\-\[\]]+)\s*(?:==|>=|~=|<=|>|<)?\s*([A-Za-z0-9_.*\-]*)\s*$`)
)

// dependencies reads dependency changes from the patch: lines added and
// removed in go.mod, package.json dependency blocks and requirements
// files, and which lockfiles changed.
func dependencies(patch string) bundle.Dependencies {
	deps := bundle.Dependencies{Changes: []bundle.DependencyChange{}, Lockfiles: []string{}}
	type key struct{ mgr, name string }
	seen := map[key]*bundle.DependencyChange{}
	var order []key
	file := ""
	for _, line := range strings.Split(patch, "\n") {
		if strings.HasPrefix(line, "+++ ") {
			file = strings.TrimPrefix(strings.TrimPrefix(line, "+++ "), "b/")
			if _, ok := lockfiles[path.Base(file)]; ok {
				deps.Lockfiles = append(deps.Lockfiles, file)
			}
			continue
		}
		if strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "diff ") {
			continue
		}
		mgr, m := dependencyLine(file, line)
		if m == nil {
			continue
		}
		k := key{mgr, m[2]}
		ch := seen[k]
		if ch == nil {
			ch = &bundle.DependencyChange{Manager: mgr, Name: m[2]}
			seen[k] = ch
			order = append(order, k)
		}
		if m[1] == "+" {
			ch.To = m[3]
		} else {
			ch.From = m[3]
		}
	}
	for _, k := range order {
		if ch := seen[k]; classify(ch) {
			deps.Changes = append(deps.Changes, *ch)
		}
	}
	return deps
}

// dependencyLine reads one line of file's diff: its manager and the
// match (sign, name, version), or nil when it names no dependency.
func dependencyLine(file, line string) (mgr string, m []string) {
	switch base := path.Base(file); {
	case base == "go.mod":
		return "go", goRequireRE().FindStringSubmatch(line)
	case base == "package.json":
		m = npmDepRE().FindStringSubmatch(line)
		if m != nil && (m[2] == "version" || m[2] == "name" || m[2] == "main" || strings.HasPrefix(m[3], "node ") || strings.Contains(m[3], " ")) {
			m = nil // not a dependency line
		}
		return "npm", m
	case strings.HasPrefix(base, "requirements") && strings.HasSuffix(base, ".txt"):
		return "pip", pipReqRE().FindStringSubmatch(line)
	}
	return "", nil
}

// classify names ch's change (added, removed, changed); false: it is
// none (the same version removed and added back).
func classify(ch *bundle.DependencyChange) bool {
	switch {
	case ch.From == "":
		ch.Change = "added"
	case ch.To == "":
		ch.Change = "removed"
	case ch.From == ch.To:
		return false
	default:
		ch.Change = "changed"
	}
	return true
}

// packageRecords adds to d what the sandbox's dependency commands put on
// the record: install scripts (package.change) and flagged writes
// (package.writes).
func (r *Review) packageRecords(ctx context.Context, sandboxID string, d *bundle.Dependencies) error {
	events, err := r.c.AuditLog().Query(ctx, store.AuditFilter{SandboxID: sandboxID, Kind: "package"})
	if err != nil {
		return err
	}
	for _, e := range events {
		var p struct {
			Command        string   `json:"command"`
			Writes         []string `json:"writes"`
			InstallScripts *struct {
				Packages []string `json:"packages"`
				Ran      bool     `json:"ran"`
				Override bool     `json:"override"`
			} `json:"install_scripts"`
		}
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		for _, w := range p.Writes {
			d.FlaggedWrites = append(d.FlaggedWrites, bundle.FlaggedWrite{ExecID: e.ExecID, Command: p.Command, Path: w})
		}
		if s := p.InstallScripts; s != nil {
			for _, pkg := range s.Packages {
				d.InstallScripts = append(d.InstallScripts, bundle.InstallScript{ExecID: e.ExecID, Command: p.Command, Package: pkg, Ran: s.Ran, Override: s.Override})
			}
		}
	}
	return nil
}
