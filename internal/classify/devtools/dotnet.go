package devtools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func dotnetTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args)
	switch sub {
	case "test":
		c.Class(engine.Verify, "dotnet test runs the tests")
	case "build", "publish", "pack", "run", "msbuild", "watch":
		c.Class(engine.Build, "dotnet "+sub+" builds")
	case "restore":
		c.Class(engine.Dependency, "dotnet restore installs packages")
	case "add", "remove":
		if strings.Contains(strings.Join(engine.Strs(rest), " "), "package") {
			c.Class(engine.Dependency, "dotnet "+sub+" package changes dependencies")
			return
		}
		c.Class(engine.Write, "dotnet "+sub+" changes the project")
	case "format":
		engine.Checker(c, "dotnet format", "--verify-no-changes")
	case "clean":
		c.Class(engine.Destructive, "dotnet clean deletes build output")
	case "new", "sln":
		c.Class(engine.Write, "dotnet "+sub+" writes project files")
	case "list", "--info", "--version", "--list-sdks", "help", "":
		c.Class(engine.Read, "dotnet "+sub+" only reads")
	case "tool", "workload", "nuget":
		c.Class(engine.Dependency, "dotnet "+sub+" changes installed packages")
	default:
		c.Class(engine.Unknown, "dotnet "+sub+" is not a command the analyser knows")
	}
}
