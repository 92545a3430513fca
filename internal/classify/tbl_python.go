package classify

// pythonHandlers is the handler table of this group of programs.
func pythonHandlers() map[string]handler {
	return map[string]handler{
		"twine": func(c *call) {
			if firstPos(c.args) == "check" {
				c.class(Verify, "twine check checks distributions")
				return
			}
			c.class(Network, "twine uploads packages to an index")
		},
		"pip": pipTool, "pip3": pipTool, "pipx": pipxTool, "uv": uvTool, "uvx": npxTool, "poetry": poetryTool,
		"pipenv": pipenvTool, "pdm": poetryTool, "hatch": poetryTool, "conda": condaTool, "mamba": condaTool,
		"micromamba": condaTool,
		"black":      func(c *call) { checker(c, "black", "--check", "--diff") },
		"isort":      func(c *call) { checker(c, "isort", "--check", "--check-only", "--diff", "-c") },
		"ruff":       ruffTool,
		"coverage": func(c *call) {
			if firstPos(c.args) == "run" {
				c.class(Verify, "coverage run measures tests")
				return
			}
			c.class(Read, "coverage reports")
		},
	}
}
