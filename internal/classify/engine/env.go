package engine

import (
	"path"
	"strings"
)

// Environment variables that name a command or load code. Setting one
// (X=… cmd, env, sudo, cross-env, export, go env -w) hands a program
// something to run: shell text is classified like the line itself; what
// cannot be seen (a preloaded library, a startup file, another git
// directory) is unknown.

// envCommandVars hold a command line that some program runs.
var envCommandVars = SetOf(`GIT_EXTERNAL_DIFF GIT_EDITOR GIT_SEQUENCE_EDITOR EDITOR VISUAL
GIT_SSH_COMMAND GIT_SSH GIT_PAGER PAGER MANPAGER SYSTEMD_PAGER GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS
GIT_PROXY_COMMAND LESSOPEN LESSCLOSE BROWSER PROMPT_COMMAND CC CXX CPP FC
npm_config_script_shell NPM_CONFIG_SCRIPT_SHELL`)

// envHiddenVars load code, configuration or a repository the analyser
// does not see.
var envHiddenVars = SetOf(`BASH_ENV ENV ZDOTDIR PYTHONSTARTUP PYTHONHOME GCONV_PATH HOME
XDG_CONFIG_HOME GIT_DIR GIT_COMMON_DIR GIT_WORK_TREE GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM
GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_EXEC_PATH GIT_TEMPLATE_DIR`)

// envHiddenPrefixes: the dynamic loader's variables, exported bash
// functions, and git's numbered configuration.
var envHiddenPrefixes = []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"}

// trustedPathDirs are where PATH may point without making a command name
// mean a program of the workspace.
var trustedPathDirs = SetOf(`/bin /usr/bin /sbin /usr/sbin /usr/local/bin /usr/local/sbin
/usr/local/go/bin /usr/lib/go/bin ~/go/bin ~/.cargo/bin ~/.local/bin ~/.bun/bin ~/.deno/bin
node_modules/.bin ./node_modules/.bin $PATH ${PATH}`)

// EnvWatched reports whether setting name may hand a program something
// to run (the value need not be looked at otherwise).
func EnvWatched(name string) bool {
	switch name {
	case "PATH", "GOFLAGS", "GOTOOLCHAIN", "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PS1", "PS2", "PS4":
		return true
	}
	if envCommandVars.Has(name) || envHiddenVars.Has(name) {
		return true
	}
	for _, p := range envHiddenPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// EnvEffect says what setting name to val does: the command lines it
// hands a program, or why it is unknown ("" and no commands: inert).
func EnvEffect(name string, val Word) (cmds []string, unknown string) {
	v := val.Text
	switch {
	case envCommandVars.Has(name):
		if v == "" && val.Static {
			return nil, ""
		}
		return []string{v}, ""
	case envHiddenVars.Has(name):
		if name == "HOME" && (v == "$HOME" || v == "${HOME}" || v == Home) {
			return nil, ""
		}
		if v == "" && val.Static {
			return nil, ""
		}
		return nil, name + " makes programs load code or configuration the analyser does not see"
	case name == "PATH":
		if v == "" && val.Static {
			return nil, ""
		}
		for _, d := range strings.Split(v, ":") {
			d = strings.TrimSuffix(strings.Replace(strings.Replace(d, "${HOME}", "~", 1), "$HOME", "~", 1), "/")
			if d == "" || !trustedPathDirs.Has(path.Clean(d)) && !trustedPathDirs.Has(d) { // "": the current directory
				return nil, "PATH=" + v + " may make a command name run a program of the workspace"
			}
		}
		return nil, ""
	case name == "GOFLAGS":
		for _, f := range strings.Fields(v) {
			f = strings.TrimLeft(f, "-")
			for _, opt := range []string{"toolexec=", "exec=", "vettool="} {
				if cmd, ok := strings.CutPrefix(f, opt); ok {
					cmds = append(cmds, cmd)
				}
			}
			if ld, ok := strings.CutPrefix(f, "ldflags="); ok && ExtLinker(ld) != "" {
				cmds = append(cmds, ExtLinker(ld))
			}
		}
		return cmds, ""
	case name == "GOTOOLCHAIN":
		if strings.HasPrefix(v, "go") || strings.Contains(v, "+") || !val.Static {
			return nil, "GOTOOLCHAIN=" + v + " may download a Go toolchain and run it"
		}
	case name == "NODE_OPTIONS":
		for _, f := range strings.Fields(v) {
			opt, _, _ := strings.Cut(f, "=")
			if strings.HasPrefix(opt, "-r") {
				opt = "-r" // -r./x.js
			}
			switch opt {
			case "-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file":
				return nil, "NODE_OPTIONS " + opt + " loads code into every node process"
			}
		}
	case name == "PERL5OPT" || name == "RUBYOPT":
		for _, f := range strings.Fields(v) {
			if strings.HasPrefix(f, "-M") || strings.HasPrefix(f, "-m") || strings.HasPrefix(f, "-d") || strings.HasPrefix(f, "-r") || strings.HasPrefix(f, "-I") {
				return nil, name + " " + f + " loads code into every process"
			}
		}
	case name == "JAVA_TOOL_OPTIONS" || name == "_JAVA_OPTIONS" || name == "JDK_JAVA_OPTIONS":
		if strings.Contains(v, "-javaagent") || strings.Contains(v, "-agentpath") || strings.Contains(v, "-agentlib") {
			return nil, name + " loads an agent into every JVM"
		}
	case name == "PS1" || name == "PS2" || name == "PS4":
		if strings.Contains(v, "$(") || strings.Contains(v, "`") {
			return nil, name + " runs a command substitution at every prompt or trace line"
		}
	default:
		for _, p := range envHiddenPrefixes {
			if strings.HasPrefix(name, p) && v != "" {
				return nil, name + " makes programs load code or configuration the analyser does not see"
			}
		}
	}
	if !val.Static && (name == "GOFLAGS" || name == "NODE_OPTIONS" || name == "PERL5OPT" || name == "RUBYOPT" || strings.HasSuffix(name, "JAVA_OPTIONS") || name == "JAVA_TOOL_OPTIONS") {
		return nil, name + " is computed at run time and may load code"
	}
	return nil, ""
}

// assign classifies setting an environment variable for the commands of
// the line: each command it hands a program is classified as one of the
// line's, and a variable whose effect cannot be seen is unknown.
func (a *analyzer) assign(name string, val Word, via []string, depth int) {
	if !EnvWatched(name) || name == "HOME" && val.Text == a.home {
		return
	}
	cmds, unknown := EnvEffect(name, val)
	if len(cmds) == 0 && unknown == "" {
		return
	}
	c := &Call{a: a, Name: name, via: via, depth: depth}
	c.Cmd.Argv = []string{name + "=" + val.Text}
	c.Cmd.Via = via
	if unknown != "" {
		c.Class(Unknown, unknown)
	}
	for _, s := range cmds {
		c.Cmd.Why = JoinWhy(c.Cmd.Why, name+" names a command that programs run")
		c.Shell(Word{Text: s, Static: val.Static, Params: val.Params})
	}
	if len(c.Cmd.Classes) > 0 {
		a.add(c.Cmd)
	}
}

// assignNamed is assign for a name that may be computed at run time (env
// "$N=x"): such a name may be any, LD_PRELOAD too.
func (a *analyzer) assignNamed(name string, val Word, via []string, depth int) {
	if strings.ContainsAny(name, "$`") || strings.Contains(name, "…") {
		a.add(Command{Argv: []string{name + "=" + val.Text}, Via: via, Classes: []Class{Unknown}, Why: "sets a variable whose name is known only at run time"})
		return
	}
	a.assign(name, val, via, depth)
}

// AssignArg handles a NAME=value argument (env, sudo, cross-env, go env
// -w); false if the word is not one.
func (c *Call) AssignArg(w Word) bool {
	name, v, ok := strings.Cut(w.Text, "=")
	if !ok || !validName(name) {
		return false
	}
	c.a.assignNamed(name, Word{Text: v, Static: w.Static, Params: w.Params}, c.viaMe(), c.depth+1)
	return true
}

// validName: env takes any name without '=' (BASH_FUNC_f%% too).
func validName(s string) bool {
	return s != "" && !strings.HasPrefix(s, "-") && !strings.ContainsAny(s, " \t\n/")
}

// startupFile reports whether p is read, and what it holds run, when a
// shell or an interpreter starts: shell startup files in the home
// directory or /etc, the loader's preload list, Python's .pth and
// sitecustomize files. A later bash -l or python runs what a write put
// there, unseen, so the write is unknown.
func startupFile(p, home string) bool {
	p = asDefaultHome(p, home)
	base := path.Base(p)
	switch path.Dir(p) {
	case Home:
		switch base {
		case ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
			".zprofile", ".zlogin", ".kshrc", ".mkshrc":
			return true
		}
	case "/etc":
		switch base {
		case "profile", "bash.bashrc", "environment", "ld.so.preload", "ld.so.conf", "zshrc", "zshenv":
			return true
		}
	}
	for _, pre := range []string{"/etc/profile.d/", "/etc/zsh/", "/etc/ld.so.conf.d/", Home + "/.config/fish/"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return strings.Contains(p, "-packages/") && (strings.HasSuffix(base, ".pth") || base == "sitecustomize.py" || base == "usercustomize.py")
}

// ExtLinker finds -extld in linker flags: the external linker the go
// linker runs.
func ExtLinker(ldflags string) string {
	f := strings.Fields(ldflags)
	for i, s := range f {
		s = strings.Trim(s, `'"`)
		if v, ok := strings.CutPrefix(strings.TrimPrefix(s, "-"), "-extld="); ok {
			return v
		}
		if v, ok := strings.CutPrefix(s, "-extld="); ok {
			return v
		}
		if (s == "-extld" || s == "--extld") && i+1 < len(f) {
			return strings.Trim(f[i+1], `'"`)
		}
	}
	return ""
}
