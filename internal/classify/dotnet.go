package classify

import "strings"

func dotnetTool(c *call) {
	sub, rest, _ := subcommand(c.args)
	switch sub {
	case "test":
		c.class(Verify, "dotnet test runs the tests")
	case "build", "publish", "pack", "run", "msbuild", "watch":
		c.class(Build, "dotnet "+sub+" builds")
	case "restore":
		c.class(Dependency, "dotnet restore installs packages")
	case "add", "remove":
		if strings.Contains(strings.Join(strs(rest), " "), "package") {
			c.class(Dependency, "dotnet "+sub+" package changes dependencies")
			return
		}
		c.class(Write, "dotnet "+sub+" changes the project")
	case "format":
		checker(c, "dotnet format", "--verify-no-changes")
	case "clean":
		c.class(Destructive, "dotnet clean deletes build output")
	case "new", "sln":
		c.class(Write, "dotnet "+sub+" writes project files")
	case "list", "--info", "--version", "--list-sdks", "help", "":
		c.class(Read, "dotnet "+sub+" only reads")
	case "tool", "workload", "nuget":
		c.class(Dependency, "dotnet "+sub+" changes installed packages")
	default:
		c.class(Unknown, "dotnet "+sub+" is not a command the analyser knows")
	}
}
