package classify

// inlineHandlers is the handler table of this group of programs.
func inlineHandlers() map[string]handler {
	return map[string]handler{
		"sed":  sedTool,
		"perl": perlTool,
		"ruby": interpTool("-e"), "php": interpTool("-r"), "ts-node": interpTool("-e", "--eval"),
		"tsx": interpTool("-e", "--eval"), "java": interpTool(),
	}
}
