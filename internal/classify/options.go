package classify

import "strings"

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(s) {
		m[f] = true
	}
	return m
}

func skipN(ws []word, n int) []word {
	if len(ws) < n {
		return nil
	}
	return ws[n:]
}

func firstPos(args []word) string {
	for _, a := range args {
		if !strings.HasPrefix(a.s, "-") {
			return a.s
		}
	}
	return ""
}

func flagValue(args []word, names ...string) *word {
	for i, w := range args {
		for _, n := range names {
			if w.s == n && i+1 < len(args) {
				return &args[i+1]
			}
			if v, ok := strings.CutPrefix(w.s, n+"="); ok && strings.HasPrefix(n, "--") {
				return &word{s: v, static: w.static, params: w.params}
			}
		}
	}
	return nil
}

// fixer: a linter that rewrites files with one of fixFlags, else verifies.
func fixer(c *call, name string, fixFlags []string, _ []string) {
	flags, _ := opts(c.args)
	if hasFlag(flags, fixFlags...) {
		c.class(Write, name+" rewrites files to fix them")
		return
	}
	c.class(Verify, name+" checks the code")
}

// checker: a formatter that rewrites files unless a check flag is given.
func checker(c *call, name string, checkFlags ...string) {
	var flags []string
	for _, w := range c.args { // after -- too: cargo fmt -- --check
		flags = append(flags, w.s)
	}
	if hasFlag(flags, checkFlags...) {
		c.class(Verify, name+" checks formatting")
		return
	}
	if onlyAsksVersion(c.args) {
		c.class(Read, name+" prints its version")
		return
	}
	c.class(Write, name+" rewrites files")
}

// subcommand skips global options (withArg ones take a value) and returns
// the subcommand and the words after it.
func subcommand(args []word, withArg ...string) (string, []word, []string) {
	var flags []string
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if s == "--" {
			if i+1 < len(args) {
				return args[i+1].s, args[i+2:], flags
			}
			return "", nil, flags
		}
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			flags = append(flags, s)
			if !strings.Contains(s, "=") && contains(withArg, s) && i+1 < len(args) {
				flags = append(flags, args[i+1].s)
				i++
			}
			continue
		}
		return s, args[i+1:], flags
	}
	return "", nil, flags
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// optValue finds an option's value: -oVAL, -o VAL, --long=VAL, --long VAL
// (short or long may be "").
func optValue(args []word, short, long string) *word {
	for i, w := range args {
		s := w.s
		switch {
		case s == "--":
			return nil
		case (s == short || s == long) && s != "" && i+1 < len(args):
			return &args[i+1]
		case long != "" && strings.HasPrefix(s, long+"="):
			return &word{s: s[len(long)+1:], static: w.static, params: w.params}
		case short != "" && strings.HasPrefix(s, short) && len(s) > len(short) && !strings.HasPrefix(s, "--"):
			return &word{s: s[len(short):], static: w.static, params: w.params}
		}
	}
	return nil
}
