package python

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
)

func python(c *engine.Call) {
	for i := 0; i < len(c.Args); i++ {
		s := c.Args[i].Text
		switch {
		case s == "-m":
			if i+1 < len(c.Args) {
				pythonModuleRun(c, c.Args[i+1].Text, c.Args[i+2:])
				return
			}
		case strings.HasPrefix(s, "-m") && len(s) > 2:
			pythonModuleRun(c, s[2:], c.Args[i+1:])
			return
		case s == "-c":
			if i+1 < len(c.Args) && c.Args[i+1].Static {
				c.InlineCode(c.Name, c.Args[i+1].Text)
				return
			}
			c.Class(engine.Unknown, c.Name+" runs inline code")
			return
		case s == "-V" || s == "--version" || s == "-h" || s == "--help":
			c.Class(engine.Read, c.Name+" prints its version")
			return
		case s == "-W" || s == "-X":
			i++
		case s == "-":
			c.Class(engine.Unknown, c.Name+" reads code from its input")
			return
		case strings.HasPrefix(s, "-"):
		default:
			pythonScript(c, c.Args[i], c.Args[i+1:])
			return
		}
	}
	c.Class(engine.Unknown, c.Name+" reads code from its input")
}

func pythonScript(c *engine.Call, script engine.Word, rest []engine.Word) {
	base := script.Text
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	sub := engine.FirstPos(rest)
	switch base {
	case "manage.py":
		switch sub {
		case "test", "check":
			c.Class(engine.Verify, "manage.py "+sub+" checks the project")
			return
		case "makemigrations", "collectstatic", "compilemessages":
			c.Class(engine.Build, "manage.py "+sub+" generates files")
			return
		}
	case "setup.py":
		switch sub {
		case "test":
			c.Class(engine.Verify, "setup.py test runs the tests")
			return
		case "build", "build_ext", "sdist", "bdist_wheel", "bdist", "egg_info":
			c.Class(engine.Build, "setup.py "+sub+" builds")
			return
		case "install", "develop":
			c.Class(engine.Dependency, "setup.py "+sub+" installs")
			return
		}
	}
	c.RunFile(c.Name, script)
}

func pythonModuleRun(c *engine.Call, mod string, rest []engine.Word) {
	switch mod {
	case "pytest", "unittest", "doctest", "nose", "nose2", "tox", "mypy", "pyright", "flake8", "pylint",
		"pycodestyle", "pyflakes", "bandit", "compileall", "py_compile", "coverage":
		if mod == "compileall" || mod == "py_compile" {
			c.Class(engine.Build, "python -m "+mod+" compiles")
			return
		}
		if mod == "coverage" && engine.FirstPos(rest) != "run" {
			c.Class(engine.Read, "coverage reports")
			return
		}
		c.Class(engine.Verify, "python -m "+mod+" checks the code")
	case "pip":
		c.Exec(append([]engine.Word{{Text: "pip", Static: true}}, rest...))
	case "build":
		c.Class(engine.Build, "python -m build builds a package")
	case "venv", "virtualenv":
		c.Class(engine.Write, "python -m venv creates an environment")
	case "json.tool", "pydoc", "site", "platform", "sysconfig", "tokenize", "dis", "pstats", "this":
		c.Class(engine.Read, "python -m "+mod+" only reads")
	case "black", "isort", "ruff", "autopep8", "yapf", "poetry", "uv", "pipx", "twine":
		c.Exec(append([]engine.Word{{Text: mod, Static: true}}, rest...))
	case "http.server", "smtpd", "SimpleHTTPServer", "xmlrpc.server", "ftplib", "smtplib", "telnetlib", "webbrowser", "ensurepip", "code", "pdb":
		c.Class(engine.Unknown, "python -m "+mod+" serves, connects or runs code interactively")
	default:
		if strings.HasPrefix(mod, "-") || strings.ContainsAny(mod, "$`/") {
			c.Class(engine.Unknown, "python -m "+mod+" runs a module the analyser does not know")
			return
		}
		c.Class(engine.Run, "python -m "+mod+" runs a module of the project or its environment")
	}
}

func pipTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "--index-url", "-i", "--proxy", "--cache-dir", "--log")
	switch sub {
	case "install", "uninstall", "wheel":
		if sub == "wheel" {
			c.Class(engine.Build, "pip wheel builds wheels")
			return
		}
		c.Class(engine.Dependency, "pip "+sub+" changes dependencies")
		if f := engine.FlagValue(rest, "-r", "--requirement"); f != nil && f.Text != "" {
			c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "from "+f.Text)
		}
	case "download", "search", "index":
		c.Class(engine.Network, "pip "+sub+" talks to the index")
	case "list", "show", "freeze", "check", "config", "help", "--version", "-V", "debug", "inspect", "hash", "":
		if sub == "config" && (engine.FirstPos(rest) == "set" || engine.FirstPos(rest) == "unset") {
			c.Persist("pip config changes where later installs come from")
			return
		}
		c.Class(engine.Read, "pip "+sub+" only reads")
	case "cache":
		if engine.FirstPos(rest) == "purge" || engine.FirstPos(rest) == "remove" {
			c.Class(engine.Destructive, "pip cache purge deletes the cache")
			return
		}
		c.Class(engine.Read, "pip cache inspects")
	default:
		c.Class(engine.Unknown, "pip "+sub+" is not a command the analyser knows")
	}
}

func pipxTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args)
	switch sub {
	case "run":
		pkgrun.RunPackage(c, rest)
	case "list", "environment", "":
		c.Class(engine.Read, "pipx "+sub+" only reads")
	default:
		c.Class(engine.Dependency, "pipx "+sub+" changes installed tools")
	}
}

func uvTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "--directory", "--project", "-p", "--python", "--cache-dir", "--config-file")
	switch sub {
	case "add", "remove", "sync", "lock", "export":
		if sub == "export" {
			c.Class(engine.Read, "uv export prints requirements")
			return
		}
		c.Class(engine.Dependency, "uv "+sub+" changes dependencies")
	case "pip":
		switch engine.FirstPos(rest) {
		case "list", "show", "freeze", "check", "tree":
			c.Class(engine.Read, "uv pip "+engine.FirstPos(rest)+" only reads")
		default:
			c.Class(engine.Dependency, "uv pip "+engine.FirstPos(rest)+" changes dependencies")
		}
	case "tool":
		switch engine.FirstPos(rest) {
		case "run":
			pkgrun.RunPackage(c, engine.SkipN(rest, 1))
		case "list", "dir":
			c.Class(engine.Read, "uv tool lists")
		default:
			c.Class(engine.Dependency, "uv tool "+engine.FirstPos(rest)+" changes installed tools")
		}
	case "python":
		if engine.FirstPos(rest) == "list" || engine.FirstPos(rest) == "find" || engine.FirstPos(rest) == "dir" {
			c.Class(engine.Read, "uv python lists")
			return
		}
		c.Class(engine.Dependency, "uv python installs interpreters")
	case "run":
		_, r := engine.LeadingCommand(rest, "--with", "--python", "-p", "--package", "--extra", "--group", "--env-file", "--directory", "--project", "--with-requirements", "--index")
		if f := engine.FlagValue(rest, "--env-file"); f != nil {
			c.Class(engine.Secret, "uv run loads an env file")
			c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, f.Text)
		}
		if engine.FlagValue(rest, "--with") != nil {
			c.Class(engine.Dependency, "uv run --with installs packages")
		}
		c.Exec(r)
	case "build":
		c.Class(engine.Build, "uv build builds a package")
	case "venv", "init":
		c.Class(engine.Write, "uv "+sub+" creates files")
	case "tree", "version", "--version", "help", "":
		c.Class(engine.Read, "uv "+sub+" only reads")
	case "publish":
		c.Class(engine.Network, "uv publish uploads")
	case "cache":
		if engine.FirstPos(rest) == "clean" || engine.FirstPos(rest) == "prune" {
			c.Class(engine.Destructive, "uv cache clean deletes the cache")
			return
		}
		c.Class(engine.Read, "uv cache inspects")
	default:
		c.Class(engine.Unknown, "uv "+sub+" is not a command the analyser knows")
	}
}

func poetryTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "-C", "--directory", "-P", "--project")
	switch sub {
	case "add", "remove", "install", "update", "lock", "sync":
		c.Class(engine.Dependency, c.Name+" "+sub+" changes dependencies")
	case "run":
		c.Exec(rest)
	case "build":
		c.Class(engine.Build, c.Name+" build builds a package")
	case "show", "check", "env", "version", "about", "config", "search", "list", "":
		if sub == "check" {
			c.Class(engine.Verify, c.Name+" check validates the project")
			return
		}
		c.Class(engine.Read, c.Name+" "+sub+" only reads")
	case "publish":
		c.Class(engine.Network, c.Name+" publish uploads")
	case "test":
		c.Class(engine.Verify, c.Name+" test runs the tests")
	case "fmt", "format":
		c.Class(engine.Write, c.Name+" formats files")
	case "lint":
		c.Class(engine.Verify, c.Name+" lints")
	case "new", "init":
		c.Class(engine.Write, c.Name+" "+sub+" creates a project")
	case "shell":
		c.Class(engine.Unknown, c.Name+" shell starts a shell")
	default:
		c.Class(engine.Unknown, c.Name+" "+sub+" is not a command the analyser knows")
	}
}

func pipenvTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args)
	switch sub {
	case "install", "uninstall", "update", "lock", "sync", "upgrade", "clean":
		c.Class(engine.Dependency, "pipenv "+sub+" changes dependencies")
	case "run":
		c.Exec(rest)
	case "graph", "check", "requirements", "--venv", "--where", "--py", "":
		c.Class(engine.Read, "pipenv "+sub+" only reads")
	case "shell":
		c.Class(engine.Unknown, "pipenv shell starts a shell")
	default:
		c.Class(engine.Unknown, "pipenv "+sub+" is not a command the analyser knows")
	}
}

func condaTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args)
	switch sub {
	case "install", "remove", "uninstall", "update", "upgrade", "create":
		c.Class(engine.Dependency, c.Name+" "+sub+" changes packages")
	case "run":
		_, r := engine.LeadingCommand(rest, "-n", "--name", "-p", "--prefix")
		c.Exec(r)
	case "list", "info", "search", "config", "env", "":
		c.Class(engine.Read, c.Name+" "+sub+" only reads")
	case "activate", "deactivate":
		c.Class(engine.Read, c.Name+" "+sub+" sets up the shell")
	case "clean":
		c.Class(engine.Destructive, c.Name+" clean deletes caches")
	default:
		c.Class(engine.Unknown, c.Name+" "+sub+" is not a command the analyser knows")
	}
}

func ruffTool(c *engine.Call) {
	sub, _, _ := engine.Subcommand(c.Args, "--config")
	flags, _ := engine.Opts(c.Args)
	switch sub {
	case "format":
		engine.Checker(c, "ruff format", "--check", "--diff")
	case "check", "":
		if engine.HasFlag(flags, "--fix", "--unsafe-fixes") {
			c.Class(engine.Write, "ruff check --fix rewrites files")
			return
		}
		c.Class(engine.Verify, "ruff checks the code")
	default:
		c.Class(engine.Verify, "ruff checks the code")
	}
}

// Family returns the handler of Python interpreters of any version
// (python3.12, pypy3), which no table names.
func Family(name string) engine.Handler {
	if engine.IsPython(name) {
		return python
	}
	return nil
}
