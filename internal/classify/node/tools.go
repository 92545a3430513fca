package node

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
	case "playwright":
		return playwrightTool
	case "npm":
		return npmTool
	case "pnpm":
		return pnpmTool
	case "yarn":
		return yarnTool
	case "bun":
		return bunTool
	case "npx", "bunx", "pnpx":
		return pkgrun.PackageRunner
	case "node":
		return nodeTool
	case "deno":
		return denoTool
	case "tsc":
		return tscTool
	case "eslint":
		return func(c *engine.Call) { engine.Fixer(c, "eslint", "--fix", "--fix-dry-run") }
	case "prettier":
		return prettierTool
	case "biome":
		return biomeTool
	}
	return nil
}
