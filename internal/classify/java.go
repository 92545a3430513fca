package classify

import "strings"

func mavenTool(c *call) {
	_, pos := opts(c.args, "-pl", "--projects", "-f", "--file", "-P", "-T", "-s", "-gs", "-rf", "-D", "-l", "-e")
	if len(pos) == 0 {
		c.class(Build, "mvn builds")
		return
	}
	for _, w := range pos {
		goal := strings.ToLower(w.s)
		switch {
		case goal == "test" || goal == "verify" || goal == "integration-test" || strings.Contains(goal, "checkstyle") || strings.Contains(goal, "spotbugs") || strings.HasSuffix(goal, ":check"):
			c.class(Verify, "mvn "+goal+" runs checks")
		case goal == "clean":
			c.class(Destructive, "mvn clean deletes the build directory")
		case goal == "deploy" || goal == "release:perform":
			c.class(Network, "mvn deploy uploads")
		case strings.HasPrefix(goal, "dependency:") && goal != "dependency:tree" && goal != "dependency:list" && goal != "dependency:analyze":
			c.class(Dependency, "mvn "+goal+" changes dependencies")
		case goal == "dependency:tree" || goal == "dependency:list" || goal == "dependency:analyze" || goal == "help:effective-pom":
			c.class(Read, "mvn "+goal+" only reads")
		case strings.HasPrefix(goal, "versions:"):
			c.class(Dependency, "mvn "+goal+" changes versions")
		case strings.HasSuffix(goal, ":apply"):
			c.class(Write, "mvn "+goal+" rewrites files")
		default:
			c.class(Build, "mvn "+goal+" builds")
		}
	}
}

func gradleTool(c *call) {
	_, pos := opts(c.args, "-p", "--project-dir", "-x", "--exclude-task", "-P", "-D", "-b", "--build-file", "-c", "--settings-file", "-I", "--init-script")
	if len(pos) == 0 {
		c.class(Build, c.name+" runs the default tasks")
		return
	}
	for _, w := range pos {
		task := w.s
		if i := strings.LastIndex(task, ":"); i >= 0 {
			task = task[i+1:]
		}
		t := strings.ToLower(task)
		switch {
		case t == "test" || t == "check" || strings.HasPrefix(t, "lint") || strings.HasSuffix(t, "check") || strings.HasSuffix(t, "test") || strings.HasPrefix(t, "test"):
			c.class(Verify, c.name+" "+task+" runs checks")
		case t == "clean":
			c.class(Destructive, c.name+" clean deletes the build directory")
		case t == "dependencies" || t == "tasks" || t == "projects" || t == "properties" || t == "help" || t == "dependencyinsight":
			c.class(Read, c.name+" "+task+" only reads")
		case strings.HasPrefix(t, "publish") || t == "uploadarchives":
			c.class(Network, c.name+" "+task+" uploads")
		case strings.HasSuffix(t, "apply") || t == "ktlintformat" || t == "format":
			c.class(Write, c.name+" "+task+" rewrites files")
		case t == "wrapper" || t == "init":
			c.class(Write, c.name+" "+task+" writes build files")
		default:
			c.class(Build, c.name+" "+task+" builds")
		}
	}
}
