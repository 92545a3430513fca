package git

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handlers is the handler table of this group of programs.
func Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		"git": gitTool,
	}
}
