package python

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
)

// Handlers is the handler table of this group of programs.
func Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		"twine": func(c *engine.Call) {
			if engine.FirstPos(c.Args) == "check" {
				c.Class(engine.Verify, "twine check checks distributions")
				return
			}
			c.Class(engine.Network, "twine uploads packages to an index")
		},
		"pip": pipTool, "pip3": pipTool, "pipx": pipxTool, "uv": uvTool, "uvx": pkgrun.PackageRunner, "poetry": poetryTool,
		"pipenv": pipenvTool, "pdm": poetryTool, "hatch": poetryTool, "conda": condaTool, "mamba": condaTool,
		"micromamba": condaTool,
		"black":      func(c *engine.Call) { engine.Checker(c, "black", "--check", "--diff") },
		"isort":      func(c *engine.Call) { engine.Checker(c, "isort", "--check", "--check-only", "--diff", "-c") },
		"ruff":       ruffTool,
		"coverage": func(c *engine.Call) {
			if engine.FirstPos(c.Args) == "run" {
				c.Class(engine.Verify, "coverage run measures tests")
				return
			}
			c.Class(engine.Read, "coverage reports")
		},
	}
}
