package classify

// nodeHandlers is the handler table of this group of programs.
func nodeHandlers() map[string]handler {
	return map[string]handler{
		"playwright": playwrightTool,
		"npm":        npmTool,
		"pnpm":       pnpmTool,
		"yarn":       yarnTool,
		"bun":        bunTool,
		"npx":        npxTool,
		"bunx":       npxTool,
		"pnpx":       npxTool,
		"node":       nodeTool,
		"deno":       denoTool,
		"tsc":        tscTool,
		"eslint":     func(c *call) { fixer(c, "eslint", []string{"--fix", "--fix-dry-run"}, nil) },
		"prettier":   prettierTool,
		"biome":      biomeTool,
	}
}
