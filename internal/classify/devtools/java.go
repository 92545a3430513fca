package devtools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func mavenTool(c *engine.Call) {
	_, pos := engine.Opts(c.Args, "-pl", "--projects", "-f", "--file", "-P", "-T", "-s", "-gs", "-rf", "-D", "-l", "-e")
	if len(pos) == 0 {
		c.Class(engine.Build, "mvn builds")
		return
	}
	for _, w := range pos {
		goal := strings.ToLower(w.Text)
		switch {
		case goal == "test" || goal == "verify" || goal == "integration-test" || strings.Contains(goal, "checkstyle") || strings.Contains(goal, "spotbugs") || strings.HasSuffix(goal, ":check"):
			c.Class(engine.Verify, "mvn "+goal+" runs checks")
		case goal == "clean":
			c.Class(engine.Destructive, "mvn clean deletes the build directory")
		case goal == "deploy" || goal == "release:perform":
			c.Class(engine.Network, "mvn deploy uploads")
		case strings.HasPrefix(goal, "dependency:") && goal != "dependency:tree" && goal != "dependency:list" && goal != "dependency:analyze":
			c.Class(engine.Dependency, "mvn "+goal+" changes dependencies")
		case goal == "dependency:tree" || goal == "dependency:list" || goal == "dependency:analyze" || goal == "help:effective-pom":
			c.Class(engine.Read, "mvn "+goal+" only reads")
		case strings.HasPrefix(goal, "versions:"):
			c.Class(engine.Dependency, "mvn "+goal+" changes versions")
		case strings.HasSuffix(goal, ":apply"):
			c.Class(engine.Write, "mvn "+goal+" rewrites files")
		default:
			c.Class(engine.Build, "mvn "+goal+" builds")
		}
	}
}

func gradleTool(c *engine.Call) {
	_, pos := engine.Opts(c.Args, "-p", "--project-dir", "-x", "--exclude-task", "-P", "-D", "-b", "--build-file", "-c", "--settings-file", "-I", "--init-script")
	if len(pos) == 0 {
		c.Class(engine.Build, c.Name+" runs the default tasks")
		return
	}
	for _, w := range pos {
		task := w.Text
		if i := strings.LastIndex(task, ":"); i >= 0 {
			task = task[i+1:]
		}
		t := strings.ToLower(task)
		switch {
		case t == "test" || t == "check" || strings.HasPrefix(t, "lint") || strings.HasSuffix(t, "check") || strings.HasSuffix(t, "test") || strings.HasPrefix(t, "test"):
			c.Class(engine.Verify, c.Name+" "+task+" runs checks")
		case t == "clean":
			c.Class(engine.Destructive, c.Name+" clean deletes the build directory")
		case t == "dependencies" || t == "tasks" || t == "projects" || t == "properties" || t == "help" || t == "dependencyinsight":
			c.Class(engine.Read, c.Name+" "+task+" only reads")
		case strings.HasPrefix(t, "publish") || t == "uploadarchives":
			c.Class(engine.Network, c.Name+" "+task+" uploads")
		case strings.HasSuffix(t, "apply") || t == "ktlintformat" || t == "format":
			c.Class(engine.Write, c.Name+" "+task+" rewrites files")
		case t == "wrapper" || t == "init":
			c.Class(engine.Write, c.Name+" "+task+" writes build files")
		default:
			c.Class(engine.Build, c.Name+" "+task+" builds")
		}
	}
}
