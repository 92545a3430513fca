// Package policy decides what an agent's command may do before it reaches a
// sandbox. Analyze parses a command line with a real shell parser and
// classifies every simple command in it (through pipelines, lists,
// subshells, substitutions, nested `sh -c` strings and wrappers such as env,
// sudo, timeout and xargs); Policy.Decide turns the classes, rules and write
// scope into allow, ask or deny, explaining which rules matched and why.
//
// The package is pure: no I/O, no clock (callers pass the time in), no
// globals that change. Any package may import it; it imports nothing of
// airlock's but errdefs.
package policy
