package engine

// Handler classifies one command of a program it knows (see Call).
type Handler func(*Call)

// Catalog is what the analyser knows of programs. The analyses only read
// it, so one value serves them all at once.
type Catalog struct {
	// Handlers classify the programs they are named by.
	Handlers map[string]Handler
	// ReadOnly programs only inspect, whatever their arguments (asked
	// after Handlers).
	ReadOnly *Set
	// Simple programs have one class whatever their arguments (asked
	// after ReadOnly).
	Simple map[string]Class
	// Family, if set, returns the handler of a program named by a pattern
	// (python3.12), or nil; it is asked after every table.
	Family func(name string) Handler
}

// noPrograms is the catalogue of an analysis that does not carry one.
var noPrograms = &Catalog{}
