package classify

// gitHandlers is the handler table of this group of programs.
func gitHandlers() map[string]handler {
	return map[string]handler{
		"git": gitTool,
	}
}
