// Package classify says what a shell command line would do, from its text
// alone. Analyze parses a line with a real shell parser (mvdan.cc/sh) and
// classifies every simple command in it (through pipelines, lists,
// subshells, substitutions, nested `sh -c` strings and wrappers such as
// env, sudo, timeout and xargs) into Classes: read, verify, build, run,
// write, dependency, persist, network, destructive, secret, unknown, with
// the paths it writes, the hosts it names, the secrets it touches and
// tags a policy rule can match (catastrophic, force-push...). What cannot
// be known from the text (an unknown program, code that starts processes
// or builds code at run time, a command name computed at run time) is
// Unknown, never guessed safe.
//
// This package is the entry the rest of airlock imports. The work is done
// below it: internal/classify/engine walks the line and holds what is true
// whatever the program; the knowledge of programs is one package per
// group of ecosystems, one file per ecosystem in it: shelltools (shells,
// builtins and wrappers, coreutils, archives, network clients, services,
// system packages), inline (sed, perl, ruby -e...), git, node, python and
// devtools (go, cargo, java, dotnet, ruby, php, make, containers, cloud),
// with pkgrun (package runners and scripts) and secretnames (credential
// files and variables) shared. catalog.go wires them: the one table from
// program name to handler, and the programs of one class.
//
// The package is pure: no I/O, no clock, no globals that change. It
// decides nothing: internal/policy turns an Analysis into allow, ask or
// deny.
package classify
