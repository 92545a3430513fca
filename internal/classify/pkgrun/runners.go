package pkgrun

import (
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// PackageRunner handles npx-style runners (npx, bunx, pnpx, uvx): a known
// tool is that tool; anything else is a package fetched and run.
func PackageRunner(c *engine.Call) {
	_, rest := engine.LeadingCommand(c.Args, "-p", "--package", "-c", "--call", "--node-options", "--cache", "--from", "--with", "--python")
	PackageFlags(c, c.Args)
	if f := engine.FlagValue(c.Args, "-c", "--call"); f != nil {
		c.Shell(*f)
		return
	}
	RunPackage(c, rest)
}

var npxKnown = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"jest": true, "vitest": true, "mocha": true, "tsc": true, "eslint": true, "prettier": true, "playwright": true,
		"cypress": true, "ava": true, "c8": true, "nyc": true, "next": true, "vite": true, "webpack": true,
		"rollup": true, "esbuild": true, "tsup": true, "babel": true, "turbo": true, "nx": true, "lerna": true,
		"rimraf": true, "tsx": true, "ts-node": true, "biome": true, "stylelint": true, "vue-tsc": true,
		"svelte-check": true, "markdownlint": true, "node-gyp": true, "cross-env": true, "dotenv": true,
		"env-cmd": true, "ruff": true, "black": true, "mypy": true, "pytest": true, "sass": true,
		"tailwindcss": true, "postcss": true, "typedoc": true, "karma": true, "tap": true, "concurrently": true,
		"isort": true, "pyright": true, "flake8": true, "pylint": true,
	}
})

// PackageFlags classifies a runner's -p/--package (uvx: --from, --with):
// they fetch a package before the command runs, whatever the command is.
func PackageFlags(c *engine.Call, args []engine.Word) {
	for i, w := range args {
		if !strings.HasPrefix(w.Text, "-") {
			break // the command starts
		}
		for _, f := range []string{"-p", "--package", "--from", "--with"} {
			if v, ok := strings.CutPrefix(w.Text, f+"="); ok {
				c.Class(engine.Dependency, c.Name+" "+f+" fetches the package "+v)
			} else if w.Text == f && i+1 < len(args) {
				c.Class(engine.Dependency, c.Name+" "+f+" fetches the package "+args[i+1].Text)
			}
		}
	}
}

// RunPackage classifies a runner running rest: a tool the catalogue
// knows (or a well-known one) is classified as that tool, anything else
// is a package downloaded and run (Dependency); a version pinned on the
// package fetches it too.
func RunPackage(c *engine.Call, rest []engine.Word) {
	if len(rest) == 0 {
		c.Class(engine.Unknown, c.Name+" without a package")
		return
	}
	pkg := rest[0].Text
	name := pkg
	if i := strings.LastIndex(name, "@"); i > 0 {
		name = name[:i]
		c.Class(engine.Dependency, c.Name+" fetches "+pkg+" (a version of its own)")
	}
	switch {
	case npxKnown()[name]:
		c.Exec(append([]engine.Word{{Text: name, Static: rest[0].Static}}, rest[1:]...))
	case c.Known(name) && name != "open":
		c.Exec(append([]engine.Word{{Text: name, Static: rest[0].Static}}, rest[1:]...))
	default:
		c.Class(engine.Dependency, c.Name+" downloads and runs the package "+pkg)
	}
}
