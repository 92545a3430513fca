package classify

func dockerTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-H", "--host", "--context", "-c", "--config", "-l", "--log-level")
	switch sub {
	case "pull", "push", "search", "login", "logout":
		c.class(Network, c.name+" "+sub+" talks to a registry")
		if sub == "login" {
			c.class(Secret, c.name+" login handles registry credentials")
		}
	case "ps", "images", "inspect", "logs", "version", "info", "history", "top", "stats", "port", "diff", "events", "":
		c.class(Read, c.name+" "+sub+" only reads")
	case "rm", "rmi", "kill", "stop", "prune":
		c.class(Destructive, c.name+" "+sub+" deletes or stops containers")
	case "system", "volume", "network", "image", "container", "builder", "buildx":
		switch firstPos(rest) {
		case "prune", "rm", "remove":
			c.class(Destructive, c.name+" "+sub+" "+firstPos(rest)+" deletes")
		case "ls", "list", "inspect", "df", "info":
			c.class(Read, c.name+" "+sub+" "+firstPos(rest)+" only reads")
		case "build", "bake":
			dockerBuild(c)
		default:
			c.class(Unknown, c.name+" "+sub+" "+firstPos(rest))
		}
	case "build":
		dockerBuild(c)
	case "compose":
		dockerCompose(c, rest)
	default:
		c.class(Unknown, c.name+" "+sub+" runs a container")
	}
}

func dockerCompose(c *call, args []word) {
	sub, _, _ := subcommand(args, "-f", "--file", "-p", "--project-name", "--env-file", "--profile")
	switch sub {
	case "ps", "logs", "config", "ls", "images", "top", "version":
		c.class(Read, "compose "+sub+" only reads")
	case "down", "rm", "kill":
		c.class(Destructive, "compose "+sub+" stops and deletes containers")
	case "build":
		dockerBuild(c)
	case "pull", "push":
		c.class(Network, "compose "+sub+" talks to a registry")
	default:
		c.class(Unknown, "compose "+sub+" runs containers")
	}
}

// dockerBuild: a build runs the Dockerfile's RUN steps, which fetch base
// images and packages from the network, and whatever they download.
func dockerBuild(c *call) {
	c.class(Build, c.name+" builds an image")
	c.class(Network, c.name+" build pulls base images and runs the Dockerfile's RUN steps, with network")
}
