package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// leafCommands finds every command of the CLI as its help lists it: the
// top-level verbs, and for a group its sub-commands ("usage: airlock G
// <a|b>" or a "commands:" section).
func leafCommands(t *testing.T) [][]string {
	t.Helper()
	var leaves [][]string
	alt := regexp.MustCompile(`^usage: airlock \S+ <([a-z-]+(?:\|[a-z-]+)+)>`)
	sub := regexp.MustCompile(`^usage: airlock \S+ ([a-z][a-z-]*)[ \n]`)
	for _, v := range verbs() {
		var out, errOut bytes.Buffer
		if code := dispatch([]string{v.name, "--help"}, &out, &errOut); code != 0 {
			t.Errorf("airlock %s --help: exit %d, %q", v.name, code, errOut.String())
			continue
		}
		help := out.String()
		var subs []string
		if m := alt.FindStringSubmatch(help); m != nil {
			subs = strings.Split(m[1], "|")
		} else if m := sub.FindStringSubmatch(help); m != nil {
			subs = []string{m[1]}
		} else if _, list, ok := strings.Cut(help, "\ncommands:\n"); ok {
			for _, line := range strings.Split(list, "\n") {
				if !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") {
					if strings.TrimSpace(line) == "" {
						break
					}
					continue
				}
				subs = append(subs, strings.Fields(line)[0])
			}
		}
		if len(subs) == 0 {
			leaves = append(leaves, []string{v.name})
		}
		for _, s := range subs {
			leaves = append(leaves, []string{v.name, s})
		}
	}
	return leaves
}

// Every command, given a flag it does not have, fails with status 2 and
// names a help command that exists (the hint used to name commands such as
// 'airlock sandbox approve --help'), and its error prefix names it once
// ('airlock approve approve:' was one).
func TestBadFlagNamesRealHelp(t *testing.T) {
	leaves := leafCommands(t)
	if len(leaves) < 40 {
		t.Fatalf("found only %d commands: %v", len(leaves), leaves)
	}
	hint := regexp.MustCompile(`run 'airlock ([a-z -]+) --help'`)
	for _, cmd := range leaves {
		name := strings.Join(cmd, " ")
		var out, errOut bytes.Buffer
		code := dispatch(append(cmd[:len(cmd):len(cmd)], "--no-such-flag"), &out, &errOut)
		if code != 2 {
			t.Errorf("airlock %s --no-such-flag: exit %d, want 2 (%q)", name, code, errOut.String())
			continue
		}
		m := hint.FindStringSubmatch(errOut.String())
		if m == nil {
			t.Errorf("airlock %s --no-such-flag names no help command: %q", name, errOut.String())
			continue
		}
		if m[1] != name {
			t.Errorf("airlock %s --no-such-flag names 'airlock %s --help'", name, m[1])
		}
		var hout, herr bytes.Buffer
		if code := dispatch(append(strings.Fields(m[1]), "--help"), &hout, &herr); code != 0 || !strings.HasPrefix(hout.String(), "usage: airlock "+cmd[0]) {
			t.Errorf("the named 'airlock %s --help': exit %d, %q %q", m[1], code, hout.String(), herr.String())
		}
	}
	// the prefix of an error names the command once
	for _, c := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"approve"}, "airlock approve: "},
		{[]string{"deny", "ap-1"}, "airlock deny: "},
		{[]string{"breakglass", "sb-1"}, "airlock breakglass: "},
		{[]string{"approvals", "x"}, "airlock approvals: "},
		{[]string{"purge"}, "airlock purge: "},
		{[]string{"mcp", "x"}, "airlock mcp: "},
		{[]string{"task", "exec"}, "airlock task exec: "},
		{[]string{"task", "exec", "t-1"}, "airlock task exec: "},
		{[]string{"policy", "check"}, "airlock policy check: "},
		{[]string{"sandbox", "get"}, "airlock sandbox get: "},
		{[]string{"apikey", "rm"}, "airlock apikey rm: "},
		{[]string{"apikey", "rotate"}, "airlock apikey rotate: "},
		{[]string{"apikey", "rotate", "k-1", "--overlap", "-1h"}, "airlock apikey rotate: "},
		{[]string{"apikey", "create", "--role", "operator"}, "airlock apikey create: "},
		{[]string{"project", "rm"}, "airlock project rm: "},
		{[]string{"project", "create", "a", "b"}, "airlock project create: "},
	} {
		var out, errOut bytes.Buffer
		if code := dispatch(c.args, &out, &errOut); code != 2 || !strings.HasPrefix(errOut.String(), c.prefix) {
			t.Errorf("airlock %s: exit %d, %q; want 2 and an error that starts with %q", strings.Join(c.args, " "), code, errOut.String(), c.prefix)
		}
	}
}

// policy check exits 1 for "ask": a check that could not be made must not
// look like one. It exits 4.
func TestPolicyCheckFailureIsNotAsk(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("classes: [not, a, map]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"policy", "check", "--policy", filepath.Join(dir, "missing.yaml"), "--", "ls"},
		{"policy", "check", "--policy", bad, "--", "ls"},
		{"policy", "check", "--socket", filepath.Join(dir, "no.sock"), "--sandbox", "sb-1", "--", "ls"},
	} {
		var out, errOut bytes.Buffer
		if code := dispatch(args, &out, &errOut); code != 4 || !strings.HasPrefix(errOut.String(), "airlock policy check: ") {
			t.Errorf("airlock %s: exit %d, %q; want 4", strings.Join(args, " "), code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := dispatch([]string{"policy", "check", "--", "rm -rf /workspace/x"}, &out, &errOut); code != 1 {
		t.Errorf("a held command: exit %d, want 1 (%q)", code, errOut.String())
	}
	out.Reset()
	if code := dispatch([]string{"policy", "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "4 if the check itself failed") {
		t.Errorf("policy --help does not document exit 4: %q", out.String())
	}
}

// A TTL is bounded by the daemon's --max-lifetime: help that offers a TTL
// says so rather than "never".
func TestTTLHelpNamesMaxLifetime(t *testing.T) {
	for _, cmd := range [][]string{{"sandbox", "create"}, {"sandbox", "timeout"}, {"task", "start"}} {
		var out, errOut bytes.Buffer
		if code := dispatch(append(cmd, "--help"), &out, &errOut); code != 0 {
			t.Fatalf("%v --help: %d", cmd, code)
		}
		if h := out.String(); !strings.Contains(h, "--max-lifetime") || strings.Contains(h, "(default: never)") {
			t.Errorf("airlock %s --help does not say that the daemon's --max-lifetime bounds a TTL: %q", strings.Join(cmd, " "), h)
		}
	}
}

// Every flag the README shows with a command exists in that command's
// --help.
func TestREADMEFlagsExist(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmdRe := regexp.MustCompile(`airlock ([a-z-]+)((?: [a-z][a-z-]*)?)([^|;&#]*)`)
	flagRe := regexp.MustCompile(`(?:^|[\s\[(])--([a-z][a-z0-9-]*)`)
	help := map[string]string{}
	helpOf := func(path []string) string {
		k := strings.Join(path, " ")
		if h, ok := help[k]; ok {
			return h
		}
		var out, errOut bytes.Buffer
		if dispatch(append(path[:len(path):len(path)], "--help"), &out, &errOut) != 0 {
			out.Reset()
		}
		help[k] = out.String()
		return help[k]
	}
	inCode, checked := false, 0
	var block []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			// `airlock ...` spans in the text
			for _, span := range regexp.MustCompile("`(airlock [^`]*)`").FindAllStringSubmatch(line, -1) {
				block = append(block, span[1])
			}
			continue
		}
		if strings.HasPrefix(line, " ") && len(block) > 0 && strings.Contains(line, "--") && !strings.Contains(line, "airlock ") {
			block[len(block)-1] += " " + strings.SplitN(line, "#", 2)[0] // a continued synopsis
			continue
		}
		block = append(block, strings.SplitN(line, "#", 2)[0])
	}
	for _, text := range block {
		for _, m := range cmdRe.FindAllStringSubmatch(text, -1) {
			path := []string{m[1]}
			rest := m[3]
			if sub := strings.TrimSpace(m[2]); sub != "" {
				if h := helpOf([]string{m[1], sub}); h != "" && !strings.HasPrefix(h, helpOf([]string{m[1]})) {
					path = append(path, sub)
				} else {
					rest = m[2] + rest
				}
			}
			h := helpOf(path)
			if h == "" {
				t.Errorf("README names 'airlock %s', which has no --help", strings.Join(path, " "))
				continue
			}
			for _, f := range flagRe.FindAllStringSubmatch(rest, -1) {
				checked++
				if !regexp.MustCompile(`(?m)(^\s+|[\s\[])-{1,2}` + regexp.QuoteMeta(f[1]) + `\b`).MatchString(h) {
					t.Errorf("README shows 'airlock %s --%s', which its --help does not have (%q)", strings.Join(path, " "), f[1], text)
				}
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked only %d flags of the README", checked)
	}
}
