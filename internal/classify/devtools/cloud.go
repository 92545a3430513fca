package devtools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

var cloudDestroyRE = lazyre.New(`^(delete|destroy|rm|remove|terminate|purge|uninstall|drain|scale)$|^(delete|destroy|remove|terminate)-`)

func cloudTool(c *engine.Call) {
	all := engine.Strs(c.Args)
	joined := strings.Join(all, " ")
	switch {
	case c.Name == "aws" && (strings.Contains(joined, "configure get") || strings.Contains(joined, "configure export-credentials") || strings.Contains(joined, "sts get-session-token") || strings.Contains(joined, "ecr get-login-password")):
		c.Class(engine.Secret, "aws reads credentials")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "aws credentials")
	case c.Name == "gcloud" && strings.Contains(joined, "print-access-token"), c.Name == "gcloud" && strings.Contains(joined, "print-identity-token"):
		c.Class(engine.Secret, "gcloud prints a token")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "gcloud token")
	case c.Name == "az" && strings.Contains(joined, "get-access-token"):
		c.Class(engine.Secret, "az prints a token")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "azure token")
	case c.Name == "kubectl" && strings.Contains(joined, "config view") && strings.Contains(joined, "--raw"):
		c.Class(engine.Secret, "kubectl config view --raw prints credentials")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "kubeconfig")
	case c.Name == "kubectl" && strings.Contains(joined, "get secret"):
		c.Class(engine.Secret, "kubectl reads secrets")
		c.Class(engine.Network, "")
	case c.Name == "vault":
		c.Class(engine.Secret, "vault reads secrets")
		c.Class(engine.Network, "")
	case (c.Name == "terraform" || c.Name == "tofu") && (engine.FirstPos(c.Args) == "fmt" || engine.FirstPos(c.Args) == "validate" || engine.FirstPos(c.Args) == "version"):
		if engine.FirstPos(c.Args) == "fmt" {
			engine.Checker(c, c.Name+" fmt", "-check")
			return
		}
		c.Class(engine.Verify, c.Name+" "+engine.FirstPos(c.Args)+" checks configuration")
		return
	case engine.OnlyAsksVersion(c.Args):
		c.Class(engine.Read, c.Name+" prints its version")
		return
	}
	c.Class(engine.Network, c.Name+" talks to a remote service")
	for _, s := range all {
		if cloudDestroyRE().MatchString(s) {
			c.Class(engine.Destructive, c.Name+" "+s+" deletes remote resources")
			break
		}
	}
	if (c.Name == "terraform" || c.Name == "tofu") && engine.FirstPos(c.Args) == "apply" {
		c.Class(engine.Destructive, c.Name+" apply changes infrastructure")
	}
}
