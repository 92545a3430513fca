package devtools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handlers is the handler table of this group of programs.
func Handlers() map[string]engine.Handler {
	return map[string]engine.Handler{
		"go":    goTool,
		"gofmt": gofmtTool, "goimports": gofmtTool,
		"golangci-lint": func(c *engine.Call) {
			engine.Fixer(c, "golangci-lint", "--fix")
		},
		"cargo": cargoTool,
		"rustup": func(c *engine.Call) {
			sub := engine.FirstPos(c.Args)
			switch sub {
			case "show", "which", "--version", "doc", "":
				c.Class(engine.Read, "rustup "+sub+" only reads")
			default:
				c.Class(engine.Dependency, "rustup "+sub+" changes toolchains")
			}
		},
		"make": makeTool, "gmake": makeTool, "just": makeTool, "task": makeTool, "mage": makeTool,
		"rake": makeTool, "invoke": makeTool,
		"mvn": mavenTool, "mvnw": mavenTool, "gradle": gradleTool, "gradlew": gradleTool,
		"dotnet": dotnetTool,
		"bundle": bundleTool,
		"gem":    gemTool,
		"rails":  railsTool,
		"rubocop": func(c *engine.Call) {
			engine.Fixer(c, "rubocop", "-a", "-A", "--autocorrect", "--autocorrect-all", "--auto-correct")
		},
		"standardrb": func(c *engine.Call) {
			engine.Fixer(c, "standardrb", "--fix")
		},
		"composer":       composerTool,
		"docker":         dockerTool,
		"podman":         dockerTool,
		"docker-compose": func(c *engine.Call) { dockerCompose(c, c.Args) },
		"kubectl":        cloudTool, "helm": cloudTool, "terraform": cloudTool, "tofu": cloudTool,
		"aws": cloudTool, "gcloud": cloudTool, "az": cloudTool, "flyctl": cloudTool, "fly": cloudTool,
		"vercel": cloudTool, "netlify": cloudTool, "heroku": cloudTool, "firebase": cloudTool,
		"pulumi": cloudTool, "wrangler": cloudTool, "doctl": cloudTool, "vault": cloudTool,
	}
}
