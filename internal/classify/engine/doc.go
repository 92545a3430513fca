// Package engine is the classifier's engine (see internal/classify, the
// entry the rest of airlock imports). Analyze walks a command line with a
// real shell parser: pipelines, lists, subshells, substitutions,
// heredocs, nested `sh -c` strings, functions and the variables the line
// sets. Each simple command becomes a Call, handed to the Handler its
// Catalog names for the program; the handler says what the command does
// through Call's methods (Class, Write, Exec, Shell...), with the option
// parsers of options.go and simple.go. What holds whatever the program is
// here too: the workspace's own code and inline code read (run.go), writes
// that change what runs later (persist.go), decoded payloads (decode.go),
// variables that name commands (env.go), environment dumps and recursive
// reads of ~ and / (envdump.go), loopback (loopback.go), build output
// (regen.go) and tags (tags.go).
//
// The package is pure: no I/O, no clock, no globals that change; it
// imports no knowledge package (they import it).
package engine
