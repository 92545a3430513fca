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

// AnalyzeArgvIn is AnalyzeArgv in a sandbox whose user's home is home
// ("": Home, the default user's): ~ and $HOME are it, and what is judged
// of the home (its startup files, its credentials, its removal) is
// judged of it.
func AnalyzeArgvIn(argv []string, cwd, home string) *Analysis {
	return engine.AnalyzeArgvIn(argv, cwd, home, catalog())
}

// FileAnalysisIn is FileAnalysis in a sandbox whose user's home is home
// ("": Home).
func FileAnalysisIn(cmd Command, home string) *Analysis {
	return engine.FileAnalysisIn(cmd, home, catalog())
}

// FileAnalysis wraps one file operation (the daemon's file API) as an
// analysis, so the same policy decides it: a credential file is secret
// access, a write is checked against the scope.
func FileAnalysis(cmd Command) *Analysis { return engine.FileAnalysis(cmd, catalog()) }
