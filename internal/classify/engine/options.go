package engine

import (
	"strings"
	"sync"
)

// Set is a set of words (program names, paths, variables), kept as the
// words' text until first asked: the policy check runs as its own short
// process, and building every table at start-up cost it more than
// classifying its command (issue 20).
type Set struct {
	words string
	once  sync.Once
	m     map[string]bool
}

// SetOf is the set of the space-separated words of s.
func SetOf(s string) *Set { return &Set{words: s} }

// Has reports whether w is in the set (never, in a nil set).
func (s *Set) Has(w string) bool {
	if s == nil {
		return false
	}
	s.once.Do(func() {
		f := strings.Fields(s.words)
		s.m = make(map[string]bool, len(f))
		for _, w := range f {
			s.m[w] = true
		}
	})
	return s.m[w]
}

// SkipN returns ws without its first n words (nil if it has fewer).
func SkipN(ws []Word, n int) []Word {
	if len(ws) < n {
		return nil
	}
	return ws[n:]
}

// FirstPos returns the first word that is not a flag ("" if none).
func FirstPos(args []Word) string {
	for _, a := range args {
		if !strings.HasPrefix(a.Text, "-") {
			return a.Text
		}
	}
	return ""
}

// FlagValue returns the value of the first of the flags names that is
// given (-f VALUE, --flag VALUE or --flag=VALUE), or nil.
func FlagValue(args []Word, names ...string) *Word {
	for i, w := range args {
		for _, n := range names {
			if w.Text == n && i+1 < len(args) {
				return &args[i+1]
			}
			if v, ok := strings.CutPrefix(w.Text, n+"="); ok && strings.HasPrefix(n, "--") {
				return &Word{Text: v, Static: w.Static, Params: w.Params}
			}
		}
	}
	return nil
}

// Fixer classifies a linter that rewrites files with one of fixFlags,
// and else verifies.
func Fixer(c *Call, name string, fixFlags ...string) {
	flags, _ := Opts(c.Args)
	if HasFlag(flags, fixFlags...) {
		c.Class(Write, name+" rewrites files to fix them")
		return
	}
	c.Class(Verify, name+" checks the code")
}

// Checker classifies a formatter that rewrites files unless one of
// checkFlags is given.
func Checker(c *Call, name string, checkFlags ...string) {
	var flags []string
	for _, w := range c.Args { // after -- too: cargo fmt -- --check
		flags = append(flags, w.Text)
	}
	if HasFlag(flags, checkFlags...) {
		c.Class(Verify, name+" checks formatting")
		return
	}
	if OnlyAsksVersion(c.Args) {
		c.Class(Read, name+" prints its version")
		return
	}
	c.Class(Write, name+" rewrites files")
}

// Subcommand skips global options (withArg ones take a value) and returns
// the subcommand and the words after it.
func Subcommand(args []Word, withArg ...string) (string, []Word, []string) {
	var flags []string
	for i := 0; i < len(args); i++ {
		s := args[i].Text
		if s == "--" {
			if i+1 < len(args) {
				return args[i+1].Text, args[i+2:], flags
			}
			return "", nil, flags
		}
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			flags = append(flags, s)
			if !strings.Contains(s, "=") && contains(withArg, s) && i+1 < len(args) {
				flags = append(flags, args[i+1].Text)
				i++
			}
			continue
		}
		return s, args[i+1:], flags
	}
	return "", nil, flags
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// OptValue finds an option's value: -oVAL, -o VAL, --long=VAL, --long VAL
// (short or long may be "").
func OptValue(args []Word, short, long string) *Word {
	for i, w := range args {
		s := w.Text
		switch {
		case s == "--":
			return nil
		case (s == short || s == long) && s != "" && i+1 < len(args):
			return &args[i+1]
		case long != "" && strings.HasPrefix(s, long+"="):
			return &Word{Text: s[len(long)+1:], Static: w.Static, Params: w.Params}
		case short != "" && strings.HasPrefix(s, short) && len(s) > len(short) && !strings.HasPrefix(s, "--"):
			return &Word{Text: s[len(short):], Static: w.Static, Params: w.Params}
		}
	}
	return nil
}
