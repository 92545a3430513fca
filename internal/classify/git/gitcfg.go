package git

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// What a git configuration value does when git reads it. Many keys name a
// command git runs (an editor, a pager, a filter, an fsmonitor hook...):
// setting one, for one command (-c) or for good (git config), runs that
// command later, so it is classified like the command itself.
type gitValue int

const (
	gitInert   gitValue = iota
	gitCommand          // shell text git runs
	gitBoolCmd          // a boolean, or else shell text (core.fsmonitor, pager.*)
	gitBangCmd          // "!shell text" runs it; else git arguments (aliases, submodule.*.update)
	gitHelper           // credential helper: "!text", a path, or git credential-NAME
	gitHidden           // names a directory or file whose content decides (hooks, includes)
)

var gitCommandKeys = engine.SetOf(`core.editor sequence.editor core.pager core.sshcommand core.askpass
core.gitproxy core.alternaterefscommand diff.external gpg.program gpg.ssh.defaultkeycommand
gpg.ssh.program gpg.x509.program gpg.openpgp.program sendemail.sendmailcmd sendemail.smtpserver
sendemail.tocmd sendemail.cccmd uploadpack.packobjectshook web.browser`)

var gitHiddenKeys = engine.SetOf(`core.hookspath core.worktree include.path protocol.allow
init.templatedir core.attributesfile`)

// gitKey says what kind of value a key takes. Section and variable names
// are case-insensitive (subsections are not, but lowering them only makes
// more keys match).
func gitKey(key string) gitValue {
	k := strings.ToLower(key)
	if gitCommandKeys.Has(k) {
		return gitCommand
	}
	if gitHiddenKeys.Has(k) {
		return gitHidden
	}
	if k == "core.fsmonitor" {
		return gitBoolCmd
	}
	sec, _, _ := strings.Cut(k, ".")
	last := k[strings.LastIndexByte(k, '.')+1:]
	switch sec {
	case "pager":
		return gitBoolCmd
	case "alias":
		return gitBangCmd
	case "includeif":
		return gitHidden
	case "credential":
		if last == "helper" {
			return gitHelper
		}
	case "protocol":
		if last == "allow" {
			return gitHidden // protocol.ext.allow lets an ext:: URL run a command
		}
	case "submodule":
		if last == "update" {
			return gitBangCmd
		}
	}
	switch last {
	case "clean", "smudge", "process":
		if sec == "filter" {
			return gitCommand
		}
	case "textconv", "command":
		if sec == "diff" || sec == "trailer" {
			return gitCommand
		}
	case "driver":
		if sec == "merge" {
			return gitCommand
		}
	case "cmd", "path":
		switch sec {
		case "mergetool", "difftool", "man", "browser", "guitool", "trailer":
			return gitCommand
		}
	case "uploadpack", "receivepack":
		if sec == "remote" {
			return gitCommand
		}
	}
	return gitInert
}

func gitBool(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// gitSetting classifies setting key to val (one command's -c, or git
// config): what the value hands git to run is classified like a command
// of the line.
func gitSetting(c *engine.Call, key string, val engine.Word) {
	kind := gitKey(key)
	v := val.Text
	switch kind {
	case gitInert:
		return
	case gitHidden:
		c.Class(engine.Unknown, "git config "+key+" names a file or directory whose content the analyser does not see")
		return
	case gitBoolCmd:
		if gitBool(v) && val.Static {
			return
		}
	case gitBangCmd:
		rest, ok := strings.CutPrefix(v, "!")
		if !ok {
			if strings.HasPrefix(strings.ToLower(key), "alias.") {
				v = "git " + v // an alias expands to git's own arguments
			} else {
				return
			}
		} else {
			v = rest
		}
	case gitHelper:
		if rest, ok := strings.CutPrefix(v, "!"); ok {
			v = rest
		} else if v != "" && !strings.Contains(strings.Fields(v + " x")[0], "/") {
			v = "git credential-" + v
		}
	}
	if v == "" && val.Static {
		return
	}
	c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "git config "+key+" runs a command")
	c.Shell(engine.Word{Text: v, Static: val.Static, Params: val.Params})
	c.Keep()
}

// gitGlobal reads git's options before the subcommand: -c and
// --config-env settings, and the options that point git at another
// repository, configuration or programs.
func gitGlobal(c *engine.Call) {
	args := c.Args
	for i := 0; i < len(args); i++ {
		s := args[i].Text
		name, val, hasVal := strings.Cut(s, "=")
		if !strings.HasPrefix(s, "-") || s == "--" {
			return
		}
		next := func() (engine.Word, bool) {
			if hasVal {
				return engine.Word{Text: val, Static: args[i].Static, Params: args[i].Params}, true
			}
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return engine.Word{}, false
		}
		switch name {
		case "-c":
			if w, ok := next(); ok && !hasVal {
				k, v, _ := strings.Cut(w.Text, "=")
				gitSetting(c, k, engine.Word{Text: v, Static: w.Static, Params: w.Params})
			}
		case "--config-env":
			if w, ok := next(); ok {
				k, env, _ := strings.Cut(w.Text, "=")
				if gitKey(k) != gitInert {
					c.Class(engine.Unknown, "git --config-env sets "+k+" from $"+env+", known only at run time")
				}
			}
		case "--git-dir", "--work-tree":
			next()
			c.Class(engine.Unknown, "git "+name+" points git at another repository, whose configuration may run commands")
		case "--exec-path":
			if hasVal {
				c.Class(engine.Unknown, "git --exec-path runs git's commands from "+val)
			}
		case "-C", "--namespace", "--super-prefix", "--list-cmds", "--attr-source":
			next()
		}
	}
}

// gitGrepPager: git grep -O<cmd> / --open-files-in-pager=<cmd> runs cmd
// on the files found (bare -O runs the configured pager).
func gitGrepPager(c *engine.Call, rest []engine.Word) {
	withArg := "ABCefm" // short options whose value follows
	for _, w := range rest {
		s := w.Text
		if s == "--" {
			return
		}
		if v, ok := strings.CutPrefix(s, "--open-files-in-pager="); ok {
			c.Shell(engine.Word{Text: v, Static: w.Static, Params: w.Params})
			c.Keep()
			continue
		}
		if !strings.HasPrefix(s, "-") || strings.HasPrefix(s, "--") {
			continue
		}
		for j := 1; j < len(s); j++ {
			if strings.IndexByte(withArg, s[j]) >= 0 {
				break
			}
			if s[j] == 'O' {
				if v := s[j+1:]; v != "" {
					c.Shell(engine.Word{Text: v, Static: w.Static, Params: w.Params})
					c.Keep()
				}
				break
			}
		}
	}
}

// gitNewRepo: git init and git clone write the new repository's
// directory (and a separate git dir); a template directory brings hooks,
// and clone's -c settings go into the new repository's configuration.
func gitNewRepo(c *engine.Call, rest []engine.Word, isClone bool) {
	withArg := []string{"--template", "--separate-git-dir", "-b", "--initial-branch", "--object-format", "--ref-format",
		"--shared", "-o", "--origin", "-u", "--upload-pack", "--reference", "--reference-if-able", "--depth",
		"--shallow-since", "--shallow-exclude", "-c", "--config", "-j", "--jobs", "--filter", "--bundle-uri", "--branch"}
	_, pos := engine.Opts(rest, withArg...)
	if t := engine.FlagValue(rest, "--template"); t != nil {
		c.Class(engine.Unknown, "git --template copies hooks from "+t.Text)
	}
	if d := engine.FlagValue(rest, "--separate-git-dir"); d != nil {
		c.Write(*d)
	}
	if u := engine.FlagValue(rest, "-u", "--upload-pack"); u != nil {
		c.Shell(*u)
		c.Keep()
	}
	for i, w := range rest {
		v, ok := strings.CutPrefix(w.Text, "--config=")
		if !ok && (w.Text == "-c" || w.Text == "--config") && i+1 < len(rest) {
			v, ok = rest[i+1].Text, true
			w = rest[i+1]
		}
		if ok {
			k, val, _ := strings.Cut(v, "=")
			gitSetting(c, k, engine.Word{Text: val, Static: w.Static, Params: w.Params})
		}
	}
	switch {
	case !isClone && len(pos) > 0:
		c.Write(pos[0]) // git init DIR
	case isClone && len(pos) > 1:
		c.Write(pos[1]) // git clone URL DIR
	}
}

// persistKey reports whether git config key redirects where git fetches
// or pushes, or what it runs (besides the command keys gitKey knows).
func persistKey(key string) bool {
	k := strings.ToLower(key)
	sec, _, _ := strings.Cut(k, ".")
	last := k[strings.LastIndexByte(k, '.')+1:]
	switch {
	case sec == "url" && (last == "insteadof" || last == "pushinsteadof"):
		return true
	case sec == "remote" && (last == "url" || last == "pushurl" || last == "proxy"):
		return true
	case sec == "http" && (last == "proxy" || last == "sslverify" || last == "sslcainfo"):
		return true
	}
	return gitKey(key) != gitInert
}
