package classify

// systemctlTool: enabling or starting a unit makes it run (now, at the
// next login or boot); status and list only read.
func systemctlTool(c *call) {
	_, pos := opts(c.args, "-t", "--type", "-p", "--property", "-H", "--host", "-M", "--machine")
	verb := ""
	if len(pos) > 0 {
		verb = pos[0].s
	}
	switch verb {
	case "", "status", "show", "cat", "list-units", "list-unit-files", "list-timers", "is-active", "is-enabled", "is-failed", "list-dependencies":
		c.class(Read, "systemctl "+verb+" only reads")
	case "enable", "reenable", "link", "edit", "add-wants", "add-requires", "set-property", "daemon-reload", "preset", "unmask":
		c.persist("systemctl " + verb + " installs a service that runs later")
	case "start", "restart", "reload", "try-restart", "reload-or-restart":
		c.class(Unknown, "systemctl "+verb+" runs a service")
	default:
		c.class(Destructive, "systemctl "+verb+" stops or removes services")
	}
}

// atTool: at and batch queue commands (from their input) to run later.
func atTool(c *call) {
	if f, _ := opts(c.args); hasFlag(f, "-l", "-c") {
		c.class(Read, c.name+" lists queued jobs")
		return
	}
	c.persist(c.name + " queues commands from its input to run later")
	c.cmd.Why = joinWhy(c.cmd.Why, "reads commands from its input")
}
