package python

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
)

// Handler is the handler of the program name in this group, or nil. A
// switch costs nothing at start or on first use: the map it replaces,
// built on first use, cost a policy check (a process of its own) more
// than classifying its command.
func Handler(name string) engine.Handler {
	switch name {
	case "twine":
		return func(c *engine.Call) {
			if engine.FirstPos(c.Args) == "check" {
				c.Class(engine.Verify, "twine check checks distributions")
				return
			}
			c.Class(engine.Network, "twine uploads packages to an index")
		}
	case "pip", "pip3":
		return pipTool
	case "pipx":
		return pipxTool
	case "uv":
		return uvTool
	case "uvx":
		return pkgrun.PackageRunner
	case "poetry":
		return poetryTool
	case "pipenv":
		return pipenvTool
	case "pdm", "hatch":
		return poetryTool
	case "conda", "mamba", "micromamba":
		return condaTool
	case "black":
		return func(c *engine.Call) { engine.Checker(c, "black", "--check", "--diff") }
	case "isort":
		return func(c *engine.Call) { engine.Checker(c, "isort", "--check", "--check-only", "--diff", "-c") }
	case "ruff":
		return ruffTool
	case "coverage":
		return func(c *engine.Call) {
			if engine.FirstPos(c.Args) == "run" {
				c.Class(engine.Verify, "coverage run measures tests")
				return
			}
			c.Class(engine.Read, "coverage reports")
		}
	}
	return nil
}
