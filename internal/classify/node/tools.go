package node

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/pkgrun"
)

// Handlers is the handler table of this group of programs.
func Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		"playwright": playwrightTool,
		"npm":        npmTool,
		"pnpm":       pnpmTool,
		"yarn":       yarnTool,
		"bun":        bunTool,
		"npx":        pkgrun.PackageRunner,
		"bunx":       pkgrun.PackageRunner,
		"pnpx":       pkgrun.PackageRunner,
		"node":       nodeTool,
		"deno":       denoTool,
		"tsc":        tscTool,
		"eslint":     func(c *engine.Call) { engine.Fixer(c, "eslint", "--fix", "--fix-dry-run") },
		"prettier":   prettierTool,
		"biome":      biomeTool,
	}
}
