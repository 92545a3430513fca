package shelltools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// systemctlTool: enabling or starting a unit makes it run (now, at the
// next login or boot); status and list only read.
func systemctlTool(c *engine.Call) {
	_, pos := engine.Opts(c.Args, "-t", "--type", "-p", "--property", "-H", "--host", "-M", "--machine")
	verb := ""
	if len(pos) > 0 {
		verb = pos[0].Text
	}
	switch verb {
	case "", "status", "show", "cat", "list-units", "list-unit-files", "list-timers", "is-active", "is-enabled", "is-failed", "list-dependencies":
		c.Class(engine.Read, "systemctl "+verb+" only reads")
	case "enable", "reenable", "link", "edit", "add-wants", "add-requires", "set-property", "daemon-reload", "preset", "unmask":
		c.Persist("systemctl " + verb + " installs a service that runs later")
	case "start", "restart", "reload", "try-restart", "reload-or-restart":
		c.Class(engine.Unknown, "systemctl "+verb+" runs a service")
	default:
		c.Class(engine.Destructive, "systemctl "+verb+" stops or removes services")
	}
}

// atTool: at and batch queue commands (from their input) to run later.
func atTool(c *engine.Call) {
	if f, _ := engine.Opts(c.Args); engine.HasFlag(f, "-l", "-c") {
		c.Class(engine.Read, c.Name+" lists queued jobs")
		return
	}
	c.Persist(c.Name + " queues commands from its input to run later")
	c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "reads commands from its input")
}
