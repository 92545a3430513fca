package engine

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Regenerable output: what a build, a test run or a tool cache
// produces, which the next build makes again. Deleting it (rm -rf
// build/, make clean, find . -name '*.pyc' -delete) is a local write,
// not a destruction of work. node_modules is not among them: putting it
// back is a dependency install.

var regenDirs = SetOf(`build dist target out .next .nuxt .svelte-kit .turbo .parcel-cache .cache
__pycache__ .pytest_cache .mypy_cache .ruff_cache .tox .nox htmlcov coverage .coverage .nyc_output
.gradle .eslintcache .angular .docusaurus .vite storybook-static`)

var regenExts = []string{".pyc", ".pyo", ".o", ".obj", ".class", ".tsbuildinfo", ".egg-info", ".test", ".prof"}

var regenFiles = SetOf(`coverage.out coverage.txt coverage.xml cover.out .coverage lcov.info junit.xml`)

// Regenerable reports whether the resolved path p is build output inside
// the workspace (or scratch space).
func Regenerable(p string) bool {
	if !InWorkspace(p) || p == DefaultCwd || strings.ContainsAny(p, "$`*?[") || strings.Contains(p, "…") {
		return false
	}
	base := path.Base(p)
	if regenFiles.Has(base) {
		return true
	}
	for _, e := range regenExts {
		if strings.HasSuffix(base, e) {
			return true
		}
	}
	rel := strings.TrimPrefix(p, DefaultCwd+"/")
	if strings.HasPrefix(rel, "node_modules/.cache") {
		return true
	}
	for _, el := range strings.Split(rel, "/") {
		if regenDirs.Has(el) {
			return true
		}
		if el == "node_modules" || el == ".git" {
			return false
		}
	}
	return false
}

// AllRegenerable reports whether every word names regenerable output.
func (c *Call) AllRegenerable(ws []Word) bool {
	for _, w := range ws {
		if !w.Static || !Regenerable(c.Resolve(w)) {
			return false
		}
	}
	return len(ws) > 0
}

// FindsRegenerable reports whether find's -name patterns all select build output
// (find . -name '*.pyc' -delete, find . -name __pycache__ -exec rm -rf).
func FindsRegenerable(args []Word) bool {
	n := 0
	for i := 0; i+1 < len(args); i++ {
		switch args[i].Text {
		case "-name", "-iname":
			n++
			pat := strings.TrimPrefix(args[i+1].Text, "*")
			if !regenDirs.Has(pat) && !regenFiles.Has(pat) && !strings.HasSuffix(pat, ".pyc") && !strings.HasSuffix(pat, ".pyo") &&
				!strings.HasSuffix(pat, ".o") && !strings.HasSuffix(pat, ".class") {
				return false
			}
		case "-path", "-ipath", "-regex", "-iregex", "-wholename", "-o", "-or", "-not", "!":
			return false
		}
	}
	return n > 0
}

// truncates: a redirect that writes nothing (> file, : > file) empties
// an existing file, work lost unless it is scratch or build output.
func (a *analyzer) truncates(c *Command, op syntax.RedirOperator, p string) {
	if op != syntax.RdrOut && op != syntax.RdrClob || len(c.Argv) > 0 && c.Argv[0] != ":" && c.Argv[0] != "true" {
		return
	}
	if !path.IsAbs(p) || a.scratch(p) || Regenerable(p) || strings.HasSuffix(p, ".log") || strings.HasPrefix(p, "/dev/") {
		return
	}
	c.Classes = AddClass(c.Classes, Destructive)
	c.Why = JoinWhy(c.Why, "empties "+p)
}
