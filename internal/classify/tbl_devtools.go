package classify

// devtoolsHandlers is the handler table of this group of programs.
func devtoolsHandlers() map[string]handler {
	return map[string]handler{
		"go":    goTool,
		"gofmt": gofmtTool, "goimports": gofmtTool,
		"golangci-lint": func(c *call) {
			fixer(c, "golangci-lint", []string{"--fix"}, nil)
		},
		"cargo": cargoTool,
		"rustup": func(c *call) {
			sub := firstPos(c.args)
			switch sub {
			case "show", "which", "--version", "doc", "":
				c.class(Read, "rustup "+sub+" only reads")
			default:
				c.class(Dependency, "rustup "+sub+" changes toolchains")
			}
		},
		"make": makeTool, "gmake": makeTool, "just": makeTool, "task": makeTool, "mage": makeTool,
		"rake": makeTool, "invoke": makeTool,
		"mvn": mavenTool, "mvnw": mavenTool, "gradle": gradleTool, "gradlew": gradleTool,
		"dotnet": dotnetTool,
		"bundle": bundleTool,
		"gem":    gemTool,
		"rails":  railsTool,
		"rubocop": func(c *call) {
			fixer(c, "rubocop", []string{"-a", "-A", "--autocorrect", "--autocorrect-all", "--auto-correct"}, nil)
		},
		"standardrb": func(c *call) {
			fixer(c, "standardrb", []string{"--fix"}, nil)
		},
		"composer":       composerTool,
		"docker":         dockerTool,
		"podman":         dockerTool,
		"docker-compose": func(c *call) { dockerCompose(c, c.args) },
		"kubectl":        cloudTool, "helm": cloudTool, "terraform": cloudTool, "tofu": cloudTool,
		"aws": cloudTool, "gcloud": cloudTool, "az": cloudTool, "flyctl": cloudTool, "fly": cloudTool,
		"vercel": cloudTool, "netlify": cloudTool, "heroku": cloudTool, "firebase": cloudTool,
		"pulumi": cloudTool, "wrangler": cloudTool, "doctl": cloudTool, "vault": cloudTool,
	}
}
