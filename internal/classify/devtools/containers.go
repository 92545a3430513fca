package devtools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func dockerTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "-H", "--host", "--context", "-c", "--config", "-l", "--log-level")
	switch sub {
	case "pull", "push", "search", "login", "logout":
		c.Class(engine.Network, c.Name+" "+sub+" talks to a registry")
		if sub == "login" {
			c.Class(engine.Secret, c.Name+" login handles registry credentials")
		}
	case "ps", "images", "inspect", "logs", "version", "info", "history", "top", "stats", "port", "diff", "events", "":
		c.Class(engine.Read, c.Name+" "+sub+" only reads")
	case "rm", "rmi", "kill", "stop", "prune":
		c.Class(engine.Destructive, c.Name+" "+sub+" deletes or stops containers")
	case "system", "volume", "network", "image", "container", "builder", "buildx":
		switch engine.FirstPos(rest) {
		case "prune", "rm", "remove":
			c.Class(engine.Destructive, c.Name+" "+sub+" "+engine.FirstPos(rest)+" deletes")
		case "ls", "list", "inspect", "df", "info":
			c.Class(engine.Read, c.Name+" "+sub+" "+engine.FirstPos(rest)+" only reads")
		case "build", "bake":
			dockerBuild(c)
		default:
			c.Class(engine.Unknown, c.Name+" "+sub+" "+engine.FirstPos(rest))
		}
	case "build":
		dockerBuild(c)
	case "compose":
		dockerCompose(c, rest)
	default:
		c.Class(engine.Unknown, c.Name+" "+sub+" runs a container")
	}
}

func dockerCompose(c *engine.Call, args []engine.Word) {
	sub, _, _ := engine.Subcommand(args, "-f", "--file", "-p", "--project-name", "--env-file", "--profile")
	switch sub {
	case "ps", "logs", "config", "ls", "images", "top", "version":
		c.Class(engine.Read, "compose "+sub+" only reads")
	case "down", "rm", "kill":
		c.Class(engine.Destructive, "compose "+sub+" stops and deletes containers")
	case "build":
		dockerBuild(c)
	case "pull", "push":
		c.Class(engine.Network, "compose "+sub+" talks to a registry")
	default:
		c.Class(engine.Unknown, "compose "+sub+" runs containers")
	}
}

// dockerBuild: a build runs the Dockerfile's RUN steps, which fetch base
// images and packages from the network, and whatever they download.
func dockerBuild(c *engine.Call) {
	c.Class(engine.Build, c.Name+" builds an image")
	c.Class(engine.Network, c.Name+" build pulls base images and runs the Dockerfile's RUN steps, with network")
}
