// Package git is the classifier's knowledge of git: its subcommands
// (git.go) and the configuration that makes it run commands (gitcfg.go:
// -c, git config, clone and init settings). tools.go is its handler table.
package git
