package classify

import "strings"

func python(c *call) {
	for i := 0; i < len(c.args); i++ {
		s := c.args[i].s
		switch {
		case s == "-m":
			if i+1 < len(c.args) {
				pythonModuleRun(c, c.args[i+1].s, c.args[i+2:])
				return
			}
		case strings.HasPrefix(s, "-m") && len(s) > 2:
			pythonModuleRun(c, s[2:], c.args[i+1:])
			return
		case s == "-c":
			if i+1 < len(c.args) && c.args[i+1].static {
				c.inlineCode(c.name, c.args[i+1].s)
				return
			}
			c.class(Unknown, c.name+" runs inline code")
			return
		case s == "-V" || s == "--version" || s == "-h" || s == "--help":
			c.class(Read, c.name+" prints its version")
			return
		case s == "-W" || s == "-X":
			i++
		case s == "-":
			c.class(Unknown, c.name+" reads code from its input")
			return
		case strings.HasPrefix(s, "-"):
		default:
			pythonScript(c, c.args[i], c.args[i+1:])
			return
		}
	}
	c.class(Unknown, c.name+" reads code from its input")
}

func pythonScript(c *call, script word, rest []word) {
	base := script.s
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	sub := firstPos(rest)
	switch base {
	case "manage.py":
		switch sub {
		case "test", "check":
			c.class(Verify, "manage.py "+sub+" checks the project")
			return
		case "makemigrations", "collectstatic", "compilemessages":
			c.class(Build, "manage.py "+sub+" generates files")
			return
		}
	case "setup.py":
		switch sub {
		case "test":
			c.class(Verify, "setup.py test runs the tests")
			return
		case "build", "build_ext", "sdist", "bdist_wheel", "bdist", "egg_info":
			c.class(Build, "setup.py "+sub+" builds")
			return
		case "install", "develop":
			c.class(Dependency, "setup.py "+sub+" installs")
			return
		}
	}
	c.runFile(c.name, script)
}

func pythonModuleRun(c *call, mod string, rest []word) {
	switch mod {
	case "pytest", "unittest", "doctest", "nose", "nose2", "tox", "mypy", "pyright", "flake8", "pylint",
		"pycodestyle", "pyflakes", "bandit", "compileall", "py_compile", "coverage":
		if mod == "compileall" || mod == "py_compile" {
			c.class(Build, "python -m "+mod+" compiles")
			return
		}
		if mod == "coverage" && firstPos(rest) != "run" {
			c.class(Read, "coverage reports")
			return
		}
		c.class(Verify, "python -m "+mod+" checks the code")
	case "pip":
		c.exec(append([]word{{s: "pip", static: true}}, rest...))
	case "build":
		c.class(Build, "python -m build builds a package")
	case "venv", "virtualenv":
		c.class(Write, "python -m venv creates an environment")
	case "json.tool", "pydoc", "site", "platform", "sysconfig", "tokenize", "dis", "pstats", "this":
		c.class(Read, "python -m "+mod+" only reads")
	case "black", "isort", "ruff", "autopep8", "yapf", "poetry", "uv", "pipx", "twine":
		c.exec(append([]word{{s: mod, static: true}}, rest...))
	case "http.server", "smtpd", "SimpleHTTPServer", "xmlrpc.server", "ftplib", "smtplib", "telnetlib", "webbrowser", "ensurepip", "code", "pdb":
		c.class(Unknown, "python -m "+mod+" serves, connects or runs code interactively")
	default:
		if strings.HasPrefix(mod, "-") || strings.ContainsAny(mod, "$`/") {
			c.class(Unknown, "python -m "+mod+" runs a module the analyser does not know")
			return
		}
		c.class(Run, "python -m "+mod+" runs a module of the project or its environment")
	}
}

func pipTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--index-url", "-i", "--proxy", "--cache-dir", "--log")
	switch sub {
	case "install", "uninstall", "wheel":
		if sub == "wheel" {
			c.class(Build, "pip wheel builds wheels")
			return
		}
		c.class(Dependency, "pip "+sub+" changes dependencies")
		if f := flagValue(rest, "-r", "--requirement"); f != nil && f.s != "" {
			c.cmd.Why = joinWhy(c.cmd.Why, "from "+f.s)
		}
	case "download", "search", "index":
		c.class(Network, "pip "+sub+" talks to the index")
	case "list", "show", "freeze", "check", "config", "help", "--version", "-V", "debug", "inspect", "hash", "":
		if sub == "config" && (firstPos(rest) == "set" || firstPos(rest) == "unset") {
			c.persist("pip config changes where later installs come from")
			return
		}
		c.class(Read, "pip "+sub+" only reads")
	case "cache":
		if firstPos(rest) == "purge" || firstPos(rest) == "remove" {
			c.class(Destructive, "pip cache purge deletes the cache")
			return
		}
		c.class(Read, "pip cache inspects")
	default:
		c.class(Unknown, "pip "+sub+" is not a command the analyser knows")
	}
}

func pipxTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "run":
		npxRun(c, rest)
	case "list", "environment", "":
		c.class(Read, "pipx "+sub+" only reads")
	default:
		c.class(Dependency, "pipx "+sub+" changes installed tools")
	}
}

func uvTool(c *call) {
	sub, rest, _ := subcommand(c.args, "--directory", "--project", "-p", "--python", "--cache-dir", "--config-file")
	switch sub {
	case "add", "remove", "sync", "lock", "export":
		if sub == "export" {
			c.class(Read, "uv export prints requirements")
			return
		}
		c.class(Dependency, "uv "+sub+" changes dependencies")
	case "pip":
		switch firstPos(rest) {
		case "list", "show", "freeze", "check", "tree":
			c.class(Read, "uv pip "+firstPos(rest)+" only reads")
		default:
			c.class(Dependency, "uv pip "+firstPos(rest)+" changes dependencies")
		}
	case "tool":
		switch firstPos(rest) {
		case "run":
			npxRun(c, skipN(rest, 1))
		case "list", "dir":
			c.class(Read, "uv tool lists")
		default:
			c.class(Dependency, "uv tool "+firstPos(rest)+" changes installed tools")
		}
	case "python":
		if firstPos(rest) == "list" || firstPos(rest) == "find" || firstPos(rest) == "dir" {
			c.class(Read, "uv python lists")
			return
		}
		c.class(Dependency, "uv python installs interpreters")
	case "run":
		_, r := leadingCommand(rest, "--with", "--python", "-p", "--package", "--extra", "--group", "--env-file", "--directory", "--project", "--with-requirements", "--index")
		if f := flagValue(rest, "--env-file"); f != nil {
			c.class(Secret, "uv run loads an env file")
			c.cmd.Secrets = appendUniq(c.cmd.Secrets, f.s)
		}
		if flagValue(rest, "--with") != nil {
			c.class(Dependency, "uv run --with installs packages")
		}
		c.exec(r)
	case "build":
		c.class(Build, "uv build builds a package")
	case "venv", "init":
		c.class(Write, "uv "+sub+" creates files")
	case "tree", "version", "--version", "help", "":
		c.class(Read, "uv "+sub+" only reads")
	case "publish":
		c.class(Network, "uv publish uploads")
	case "cache":
		if firstPos(rest) == "clean" || firstPos(rest) == "prune" {
			c.class(Destructive, "uv cache clean deletes the cache")
			return
		}
		c.class(Read, "uv cache inspects")
	default:
		c.class(Unknown, "uv "+sub+" is not a command the analyser knows")
	}
}

func poetryTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-C", "--directory", "-P", "--project")
	switch sub {
	case "add", "remove", "install", "update", "lock", "sync":
		c.class(Dependency, c.name+" "+sub+" changes dependencies")
	case "run":
		c.exec(rest)
	case "build":
		c.class(Build, c.name+" build builds a package")
	case "show", "check", "env", "version", "about", "config", "search", "list", "":
		if sub == "check" {
			c.class(Verify, c.name+" check validates the project")
			return
		}
		c.class(Read, c.name+" "+sub+" only reads")
	case "publish":
		c.class(Network, c.name+" publish uploads")
	case "test":
		c.class(Verify, c.name+" test runs the tests")
	case "fmt", "format":
		c.class(Write, c.name+" formats files")
	case "lint":
		c.class(Verify, c.name+" lints")
	case "new", "init":
		c.class(Write, c.name+" "+sub+" creates a project")
	case "shell":
		c.class(Unknown, c.name+" shell starts a shell")
	default:
		c.class(Unknown, c.name+" "+sub+" is not a command the analyser knows")
	}
}

func pipenvTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "install", "uninstall", "update", "lock", "sync", "upgrade", "clean":
		c.class(Dependency, "pipenv "+sub+" changes dependencies")
	case "run":
		c.exec(rest)
	case "graph", "check", "requirements", "--venv", "--where", "--py", "":
		c.class(Read, "pipenv "+sub+" only reads")
	case "shell":
		c.class(Unknown, "pipenv shell starts a shell")
	default:
		c.class(Unknown, "pipenv "+sub+" is not a command the analyser knows")
	}
}

func condaTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "install", "remove", "uninstall", "update", "upgrade", "create":
		c.class(Dependency, c.name+" "+sub+" changes packages")
	case "run":
		_, r := leadingCommand(rest, "-n", "--name", "-p", "--prefix")
		c.exec(r)
	case "list", "info", "search", "config", "env", "":
		c.class(Read, c.name+" "+sub+" only reads")
	case "activate", "deactivate":
		c.class(Read, c.name+" "+sub+" sets up the shell")
	case "clean":
		c.class(Destructive, c.name+" clean deletes caches")
	default:
		c.class(Unknown, c.name+" "+sub+" is not a command the analyser knows")
	}
}

func ruffTool(c *call) {
	sub, _, _ := subcommand(c.args, "--config")
	flags, _ := opts(c.args)
	switch sub {
	case "format":
		checker(c, "ruff format", "--check", "--diff")
	case "check", "":
		if hasFlag(flags, "--fix", "--unsafe-fixes") {
			c.class(Write, "ruff check --fix rewrites files")
			return
		}
		c.class(Verify, "ruff checks the code")
	default:
		c.class(Verify, "ruff checks the code")
	}
}

// pythonFamily returns the handler of Python interpreters of any version
// (python3.12, pypy3), which no table names.
func pythonFamily(name string) handler {
	if IsPython(name) {
		return python
	}
	return nil
}
