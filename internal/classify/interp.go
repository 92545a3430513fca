package classify

import (
	"slices"
	"strings"
)

// interpTool is an interpreter whose code flags (ruby -e, php -r) take
// inline code and whose first other word is the script it runs. Its
// other flags' values (ruby -rnet/http) are read with the code.
func interpTool(codeFlags ...string) handler {
	return func(c *call) {
		var code []string
		for i := 0; i < len(c.args); i++ {
			s := c.args[i]
			switch {
			case slices.Contains(codeFlags, s.s) && i+1 < len(c.args):
				i++
				if !c.args[i].static {
					c.class(Unknown, c.name+" runs code computed at run time")
					return
				}
				code = append(code, c.args[i].s)
			case s.s == "-v" || s.s == "--version" || s.s == "-version" || s.s == "-h" || s.s == "--help":
				if len(code) == 0 {
					c.class(Read, c.name+" prints its version or help")
					return
				}
			case s.s == "-jar" || s.s == "-cp" || s.s == "-classpath" || s.s == "-I":
				if s.s == "-jar" && i+1 < len(c.args) && len(code) == 0 {
					c.runFile(c.name, c.args[i+1])
					return
				}
				i++
			case strings.HasPrefix(s.s, "-"):
				code = append(code, s.s)
			case len(code) > 0 && slices.ContainsFunc(code, func(x string) bool { return !strings.HasPrefix(x, "-") }):
				i = len(c.args) // arguments of the inline code
			default:
				if c.name == "java" {
					c.class(Run, "java runs the class "+s.s)
					return
				}
				c.runFile(c.name, s)
				return
			}
		}
		if len(code) == 0 || !slices.ContainsFunc(code, func(x string) bool { return !strings.HasPrefix(x, "-") }) {
			c.class(Unknown, c.name+" reads code from its input")
			return
		}
		c.inlineCode(c.name, strings.Join(code, "\n"))
	}
}
