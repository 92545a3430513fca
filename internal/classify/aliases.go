package classify

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/classify/secretnames"
)

// The classifier's vocabulary, defined by the engine (see its doc
// comments). These are aliases, not copies: a classify.Analysis is an
// engine.Analysis.
type (
	Class    = engine.Class
	Command  = engine.Command
	Analysis = engine.Analysis
)

// The classes.
const (
	Read        = engine.Read
	Verify      = engine.Verify
	Build       = engine.Build
	Run         = engine.Run
	Write       = engine.Write
	Dependency  = engine.Dependency
	Persist     = engine.Persist
	Network     = engine.Network
	Destructive = engine.Destructive
	Secret      = engine.Secret
	Unknown     = engine.Unknown
)

// Classes lists every class in a fixed order.
var Classes = engine.Classes

// The tags a policy rule can match besides the classes (see engine).
const (
	TagCatastrophic   = engine.TagCatastrophic
	TagForcePush      = engine.TagForcePush
	TagDeleteBranch   = engine.TagDeleteBranch
	TagHistoryRewrite = engine.TagHistoryRewrite
)

// Home is the default sandbox user's home directory; ~ and $HOME resolve
// to it unless an analysis names another (AnalyzeArgvIn).
const Home = engine.Home

// DefaultCwd is where commands run when no directory is given.
const DefaultCwd = engine.DefaultCwd

// JoinArgv quotes argv as one shell line, for display and for matching.
func JoinArgv(argv []string) string { return engine.JoinArgv(argv) }

// Scratch reports whether an absolute sandbox path is scratch space that
// any command may write whatever the write scope (see engine.Scratch).
func Scratch(abs string) bool { return engine.Scratch(abs) }

// SortClasses returns the classes of cs once each, in Classes order.
func SortClasses(cs []Class) []Class { return engine.SortClasses(cs) }

// SecretName reports whether an environment variable's name says it holds
// a credential.
func SecretName(name string) bool { return secretnames.Var(name) }
