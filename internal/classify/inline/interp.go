package inline

import (
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// interpTool is an interpreter whose code flags (ruby -e, php -r) take
// inline code and whose first other word is the script it runs. Its
// other flags' values (ruby -rnet/http) are read with the code.
func interpTool(codeFlags ...string) engine.Handler {
	return func(c *engine.Call) {
		var code []string
		for i := 0; i < len(c.Args); i++ {
			s := c.Args[i]
			switch {
			case slices.Contains(codeFlags, s.Text) && i+1 < len(c.Args):
				i++
				if !c.Args[i].Static {
					c.Class(engine.Unknown, c.Name+" runs code computed at run time")
					return
				}
				code = append(code, c.Args[i].Text)
			case s.Text == "-v" || s.Text == "--version" || s.Text == "-version" || s.Text == "-h" || s.Text == "--help":
				if len(code) == 0 {
					c.Class(engine.Read, c.Name+" prints its version or help")
					return
				}
			case s.Text == "-jar" || s.Text == "-cp" || s.Text == "-classpath" || s.Text == "-I":
				if s.Text == "-jar" && i+1 < len(c.Args) && len(code) == 0 {
					c.RunFile(c.Name, c.Args[i+1])
					return
				}
				i++
			case strings.HasPrefix(s.Text, "-"):
				code = append(code, s.Text)
			case len(code) > 0 && slices.ContainsFunc(code, func(x string) bool { return !strings.HasPrefix(x, "-") }):
				i = len(c.Args) // arguments of the inline code
			default:
				if c.Name == "java" {
					c.Class(engine.Run, "java runs the class "+s.Text)
					return
				}
				c.RunFile(c.Name, s)
				return
			}
		}
		if len(code) == 0 || !slices.ContainsFunc(code, func(x string) bool { return !strings.HasPrefix(x, "-") }) {
			c.Class(engine.Unknown, c.Name+" reads code from its input")
			return
		}
		c.InlineCode(c.Name, strings.Join(code, "\n"))
	}
}
