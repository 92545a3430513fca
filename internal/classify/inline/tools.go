package inline

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handler is the handler of the program name in this group, or nil. A
// switch costs nothing at start or on first use: the map it replaces,
// built on first use, cost a policy check (a process of its own) more
// than classifying its command.
func Handler(name string) engine.Handler {
	switch name {
	case "sed":
		return sedTool
	case "perl":
		return perlTool
	case "ruby":
		return interpTool("-e")
	case "php":
		return interpTool("-r")
	case "ts-node", "tsx":
		return interpTool("-e", "--eval")
	case "java":
		return interpTool()
	}
	return nil
}
