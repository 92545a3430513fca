// Package hook is the contract between the sandbox core
// (internal/manager) and its feature modules: a Module attaches with the
// Core handle it is given, and each ability it has (the interfaces here,
// found by type assertion) is called by the core in module order. Set is
// the modules' abilities sorted at attach, with the loops the core runs
// over them. A module imports this package, not the core.
package hook
