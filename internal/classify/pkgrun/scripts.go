package pkgrun

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// ScriptClass guesses what a package script does from its name.
func ScriptClass(name string) (engine.Class, bool) {
	n := strings.ToLower(name)
	base, _, _ := strings.Cut(n, ":")
	switch {
	case n == "":
		return engine.Read, true
	case base == "test" || base == "tests" || strings.HasSuffix(n, ":test") || base == "spec" || base == "e2e" ||
		base == "coverage" || base == "cov" || base == "vet" || base == "unit" || base == "integration" || strings.HasPrefix(base, "test-") || strings.HasPrefix(base, "test_"):
		return engine.Verify, true
	case strings.HasPrefix(base, "lint") && !strings.Contains(n, "fix"), base == "typecheck", base == "type-check",
		base == "types", base == "tsc", base == "check", base == "validate", base == "verify", base == "ci",
		(base == "format" || base == "fmt" || base == "prettier") && strings.Contains(n, "check"):
		return engine.Verify, true
	case base == "format", base == "fmt", base == "prettier", strings.Contains(n, "fix"):
		return engine.Write, true
	case base == "build", strings.HasPrefix(base, "build-"), base == "dev", base == "start", base == "serve",
		base == "compile", base == "generate", base == "gen", base == "codegen", base == "bundle", base == "watch",
		base == "preview", base == "prepare", base == "docs", base == "storybook", base == "prebuild", base == "postbuild":
		return engine.Build, true
	case base == "clean":
		return engine.Write, true // removes build output (see regen.go)
	case base == "reset", base == "nuke", base == "purge":
		return engine.Destructive, true
	case base == "deploy", base == "release", base == "publish":
		return engine.Network, true
	case base == "install", base == "bootstrap", base == "setup", base == "deps":
		return engine.Dependency, true
	}
	return engine.Unknown, false
}

// ExtraFix classifies the arguments after -- that reach the script:
// --fix (and the like) makes it write.
func ExtraFix(c *engine.Call, rest []engine.Word) {
	dd := false
	for _, w := range rest {
		if w.Text == "--" {
			dd = true
		} else if dd && (w.Text == "--fix" || w.Text == "--write" || w.Text == "-u" || w.Text == "--updateSnapshot") {
			c.Class(engine.Write, "passes "+w.Text+" to the script")
		}
	}
}

// RunScript classifies tool running the package script named script,
// by its name (ScriptClass): a name it does not know is Unknown, "" lists
// the scripts.
func RunScript(c *engine.Call, tool, script string) {
	cl, ok := ScriptClass(script)
	if !ok {
		c.Class(engine.Unknown, tool+" runs the script "+script+", whose content the analyser does not read")
		return
	}
	if script == "" {
		c.Class(engine.Read, tool+" run lists the scripts")
		return
	}
	c.Class(cl, tool+" runs the script "+script+" ("+cl.Describe()+")")
}
