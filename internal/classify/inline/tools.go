package inline

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handlers is the handler table of this group of programs.
func Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		"sed":  sedTool,
		"perl": perlTool,
		"ruby": interpTool("-e"), "php": interpTool("-r"), "ts-node": interpTool("-e", "--eval"),
		"tsx": interpTool("-e", "--eval"), "java": interpTool(),
	}
}
