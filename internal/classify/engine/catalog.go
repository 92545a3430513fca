package engine

// Handler classifies one command of a program it knows (see Call).
type Handler func(*Call)

// Catalog is what the analyser knows of programs. The analyses only read
// it, so one value serves them all at once.
type Catalog struct {
	// Handler returns the handler of a program, or nil.
	Handler func(name string) Handler
	// ReadOnly reports whether a program only inspects, whatever its
	// arguments (asked after Handler).
	ReadOnly func(name string) bool
	// Simple returns the one class a program has whatever its arguments,
	// or "" (asked after ReadOnly).
	Simple func(name string) Class
	// Family, if set, returns the handler of a program named by a pattern
	// (python3.12), or nil; it is asked after every table.
	Family func(name string) Handler
}

// noPrograms is the catalogue of an analysis that does not carry one.
var noPrograms = &Catalog{}

// handler is c.Handler(name), or nil without a Handler.
func (c *Catalog) handler(name string) Handler {
	if c.Handler == nil {
		return nil
	}
	return c.Handler(name)
}

func (c *Catalog) readOnly(name string) bool { return c.ReadOnly != nil && c.ReadOnly(name) }

func (c *Catalog) simple(name string) Class {
	if c.Simple == nil {
		return ""
	}
	return c.Simple(name)
}
