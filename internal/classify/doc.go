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
// The knowledge of programs is one file per ecosystem: git.go and
// gitcfg.go, node.go (npm, yarn, pnpm, bun, npx, deno), golang.go,
// cargo.go, python.go (pip, uv, poetry, pipenv, conda), java.go, dotnet.go,
// ruby.go, php.go, make.go, shell.go (shells, builtins and wrappers),
// coreutils.go, archives.go, sed.go, perl.go, network.go, containers.go,
// cloud.go, syspkg.go; tools.go is the table from program name to handler.
// Across programs: run.go (the workspace's own code, inline code read),
// persist.go (what changes what runs later, and written content that
// runs later), decode.go (payloads decoded on the line, variables set on
// it), envdump.go (environment dumps, recursive reads of ~ and /),
// loopback.go, regen.go (build output), tags.go.
//
// The package is pure: no I/O, no clock, no globals that change. It
// decides nothing: internal/policy turns an Analysis into allow, ask or
// deny.
package classify
