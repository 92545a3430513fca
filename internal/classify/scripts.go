package classify

import "strings"

// scriptClass guesses what a package script does from its name.
func scriptClass(name string) (Class, bool) {
	n := strings.ToLower(name)
	base, _, _ := strings.Cut(n, ":")
	switch {
	case n == "":
		return Read, true
	case base == "test" || base == "tests" || strings.HasSuffix(n, ":test") || base == "spec" || base == "e2e" ||
		base == "coverage" || base == "cov" || base == "vet" || base == "unit" || base == "integration" || strings.HasPrefix(base, "test-") || strings.HasPrefix(base, "test_"):
		return Verify, true
	case strings.HasPrefix(base, "lint") && !strings.Contains(n, "fix"), base == "typecheck", base == "type-check",
		base == "types", base == "tsc", base == "check", base == "validate", base == "verify", base == "ci",
		(base == "format" || base == "fmt" || base == "prettier") && strings.Contains(n, "check"):
		return Verify, true
	case base == "format", base == "fmt", base == "prettier", strings.Contains(n, "fix"):
		return Write, true
	case base == "build", strings.HasPrefix(base, "build-"), base == "dev", base == "start", base == "serve",
		base == "compile", base == "generate", base == "gen", base == "codegen", base == "bundle", base == "watch",
		base == "preview", base == "prepare", base == "docs", base == "storybook", base == "prebuild", base == "postbuild":
		return Build, true
	case base == "clean":
		return Write, true // removes build output (see regen.go)
	case base == "reset", base == "nuke", base == "purge":
		return Destructive, true
	case base == "deploy", base == "release", base == "publish":
		return Network, true
	case base == "install", base == "bootstrap", base == "setup", base == "deps":
		return Dependency, true
	}
	return Unknown, false
}

// extraFix: arguments after -- reach the script; --fix makes it write.
func extraFix(c *call, rest []word) {
	dd := false
	for _, w := range rest {
		if w.s == "--" {
			dd = true
		} else if dd && (w.s == "--fix" || w.s == "--write" || w.s == "-u" || w.s == "--updateSnapshot") {
			c.class(Write, "passes "+w.s+" to the script")
		}
	}
}

func runScript(c *call, tool, script string) {
	cl, ok := scriptClass(script)
	if !ok {
		c.class(Unknown, tool+" runs the script "+script+", whose content the analyser does not read")
		return
	}
	if script == "" {
		c.class(Read, tool+" run lists the scripts")
		return
	}
	c.class(cl, tool+" runs the script "+script+" ("+cl.Describe()+")")
}
