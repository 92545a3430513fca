package devtools

import (
	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// Handler is the handler of the program name in this group, or nil. A
// switch costs nothing at start or on first use: the map it replaces,
// built on first use, cost a policy check (a process of its own) more
// than classifying its command.
func Handler(name string) engine.Handler {
	switch name {
	case "go":
		return goTool
	case "gofmt", "goimports":
		return gofmtTool
	case "golangci-lint":
		return func(c *engine.Call) {
			engine.Fixer(c, "golangci-lint", "--fix")
		}
	case "cargo":
		return cargoTool
	case "rustup":
		return func(c *engine.Call) {
			sub := engine.FirstPos(c.Args)
			switch sub {
			case "show", "which", "--version", "doc", "":
				c.Class(engine.Read, "rustup "+sub+" only reads")
			default:
				c.Class(engine.Dependency, "rustup "+sub+" changes toolchains")
			}
		}
	case "make", "gmake", "just", "task", "mage", "rake", "invoke":
		return makeTool
	case "mvn", "mvnw":
		return mavenTool
	case "gradle", "gradlew":
		return gradleTool
	case "dotnet":
		return dotnetTool
	case "bundle":
		return bundleTool
	case "gem":
		return gemTool
	case "rails":
		return railsTool
	case "rubocop":
		return func(c *engine.Call) {
			engine.Fixer(c, "rubocop", "-a", "-A", "--autocorrect", "--autocorrect-all", "--auto-correct")
		}
	case "standardrb":
		return func(c *engine.Call) {
			engine.Fixer(c, "standardrb", "--fix")
		}
	case "composer":
		return composerTool
	case "docker", "podman":
		return dockerTool
	case "docker-compose":
		return func(c *engine.Call) { dockerCompose(c, c.Args) }
	case "kubectl", "helm", "terraform", "tofu", "aws", "gcloud", "az", "flyctl", "fly",
		"vercel", "netlify", "heroku", "firebase", "pulumi", "wrangler", "doctl", "vault":
		return cloudTool
	}
	return nil
}
