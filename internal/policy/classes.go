package policy

import "github.com/airlock-dev/airlock/internal/classify"

// The classifier's vocabulary as the policy speaks it: a rule and a layer
// name classes, a decision carries the analysis it decided. These are
// aliases, not copies, so a classify.Analysis is a policy.Analysis.
type (
	Class    = classify.Class
	Command  = classify.Command
	Analysis = classify.Analysis
)

// The classes (see classify).
const (
	Read        = classify.Read
	Verify      = classify.Verify
	Build       = classify.Build
	Run         = classify.Run
	Write       = classify.Write
	Dependency  = classify.Dependency
	Persist     = classify.Persist
	Network     = classify.Network
	Destructive = classify.Destructive
	Secret      = classify.Secret
	Unknown     = classify.Unknown
)

// DefaultCwd is where commands run when no directory is given; scope
// globs are relative to it.
const DefaultCwd = classify.DefaultCwd

// AnalyzeArgv, FileAnalysis and SecretName forward to classify for the
// manager's existing call sites (issue 18 item 5 moved the classifier);
// new code calls classify directly.

// AnalyzeArgv is classify.AnalyzeArgv.
func AnalyzeArgv(argv []string, cwd string) *Analysis { return classify.AnalyzeArgv(argv, cwd) }

// FileAnalysis is classify.FileAnalysis.
func FileAnalysis(cmd Command) *Analysis { return classify.FileAnalysis(cmd) }

// AnalyzeArgv is classify.AnalyzeArgv in the sandbox p is for: ~ and
// $HOME are its user's home (WithHome), so what is judged of the home is
// judged of that one. A sandbox's commands are decided with this.
func (p *Policy) AnalyzeArgv(argv []string, cwd string) *Analysis {
	return classify.AnalyzeArgvIn(argv, cwd, p.home)
}

// FileAnalysis is classify.FileAnalysis in the sandbox p is for (see
// Policy.AnalyzeArgv).
func (p *Policy) FileAnalysis(cmd Command) *Analysis { return classify.FileAnalysisIn(cmd, p.home) }

// SecretName is classify.SecretName.
func SecretName(name string) bool { return classify.SecretName(name) }
