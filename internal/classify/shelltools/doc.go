// Package shelltools is the classifier's knowledge of the shell's own
// programs: shells, builtins and wrappers (shell.go), coreutils and file
// tools (coreutils.go), archives, network clients (network.go), services
// and queues, system package managers. tools.go is its handler table,
// which internal/classify merges into the catalogue.
package shelltools
