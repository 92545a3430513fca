package classify

import "strings"

// npx-style runners: a known tool is that tool; anything else is a
// package fetched and run.
func npxTool(c *call) {
	_, rest := leadingCommand(c.args, "-p", "--package", "-c", "--call", "--node-options", "--cache", "--from", "--with", "--python")
	npxPackages(c, c.args)
	if f := flagValue(c.args, "-c", "--call"); f != nil {
		c.shell(*f)
		return
	}
	npxRun(c, rest)
}

var npxKnown = map[string]bool{
	"jest": true, "vitest": true, "mocha": true, "tsc": true, "eslint": true, "prettier": true, "playwright": true,
	"cypress": true, "ava": true, "c8": true, "nyc": true, "next": true, "vite": true, "webpack": true,
	"rollup": true, "esbuild": true, "tsup": true, "babel": true, "turbo": true, "nx": true, "lerna": true,
	"rimraf": true, "tsx": true, "ts-node": true, "biome": true, "stylelint": true, "vue-tsc": true,
	"svelte-check": true, "markdownlint": true, "node-gyp": true, "cross-env": true, "dotenv": true,
	"env-cmd": true, "ruff": true, "black": true, "mypy": true, "pytest": true, "sass": true,
	"tailwindcss": true, "postcss": true, "typedoc": true, "karma": true, "tap": true, "concurrently": true,
	"isort": true, "pyright": true, "flake8": true, "pylint": true,
}

// npxPackages: -p/--package (uvx: --from, --with) fetch a package before
// the command runs, whatever the command is.
func npxPackages(c *call, args []word) {
	for i, w := range args {
		if !strings.HasPrefix(w.s, "-") {
			break // the command starts
		}
		for _, f := range []string{"-p", "--package", "--from", "--with"} {
			if v, ok := strings.CutPrefix(w.s, f+"="); ok {
				c.class(Dependency, c.name+" "+f+" fetches the package "+v)
			} else if w.s == f && i+1 < len(args) {
				c.class(Dependency, c.name+" "+f+" fetches the package "+args[i+1].s)
			}
		}
	}
}

func npxRun(c *call, rest []word) {
	if len(rest) == 0 {
		c.class(Unknown, c.name+" without a package")
		return
	}
	pkg := rest[0].s
	name := pkg
	if i := strings.LastIndex(name, "@"); i > 0 {
		name = name[:i]
		c.class(Dependency, c.name+" fetches "+pkg+" (a version of its own)")
	}
	switch {
	case npxKnown[name]:
		c.exec(append([]word{{s: name, static: rest[0].static}}, rest[1:]...))
	case c.Known(name) && name != "open":
		c.exec(append([]word{{s: name, static: rest[0].static}}, rest[1:]...))
	default:
		c.class(Dependency, c.name+" downloads and runs the package "+pkg)
	}
}
