package cli

import "github.com/airlock-dev/airlock/internal/cli/clibase"

// What clibase holds, under the names the verbs have always used: the
// verbs import cli; the front binary imports clibase alone.
type (
	SubVerb    = clibase.SubVerb
	ListFlag   = clibase.ListFlag
	SizeFlag   = clibase.SizeFlag
	FlagErrors = clibase.FlagErrors
)

var (
	DispatchGroup     = clibase.DispatchGroup
	SplitDash         = clibase.SplitDash
	ParseInterspersed = clibase.ParseInterspersed
	ActorName         = clibase.ActorName
	PrintJSON         = clibase.PrintJSON
	Ago               = clibase.Ago
	HumanDuration     = clibase.HumanDuration
	NewFlagSet        = clibase.NewFlagSet
	ParseFlags        = clibase.ParseFlags
	Esc               = clibase.Esc
	ParseSize         = clibase.ParseSize
	FmtSize           = clibase.FmtSize
	ParseDuration     = clibase.ParseDuration
	FmtDuration       = clibase.FmtDuration
	DurationVar       = clibase.DurationVar
	Duration          = clibase.Duration
	EnvOr             = clibase.EnvOr
	FmtBytes          = clibase.FmtBytes
	CheckEnv          = clibase.CheckEnv

	// RawVerbs is clibase's map itself: an entry added here is seen there.
	RawVerbs = clibase.RawVerbs
)
