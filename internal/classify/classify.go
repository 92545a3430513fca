package classify

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Analyze classifies a shell command line run in cwd ("" means
// DefaultCwd).
func Analyze(line, cwd string) *Analysis { return engine.Analyze(line, cwd, catalog()) }

// AnalyzeArgv classifies an argv as the sandbox would run it (no shell
// around it, unless argv itself is one).
func AnalyzeArgv(argv []string, cwd string) *Analysis {
	return engine.AnalyzeArgv(argv, cwd, catalog())
}

// FileAnalysis wraps one file operation (the daemon's file API) as an
// analysis, so the same policy decides it: a credential file is secret
// access, a write is checked against the scope.
func FileAnalysis(cmd Command) *Analysis { return engine.FileAnalysis(cmd, catalog()) }
