package classify

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

var cloudDestroyRE = lazyre.New(`^(delete|destroy|rm|remove|terminate|purge|uninstall|drain|scale)$|^(delete|destroy|remove|terminate)-`)

func cloudTool(c *call) {
	all := strs(c.args)
	joined := strings.Join(all, " ")
	switch {
	case c.name == "aws" && (strings.Contains(joined, "configure get") || strings.Contains(joined, "configure export-credentials") || strings.Contains(joined, "sts get-session-token") || strings.Contains(joined, "ecr get-login-password")):
		c.class(Secret, "aws reads credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "aws credentials")
	case c.name == "gcloud" && strings.Contains(joined, "print-access-token"), c.name == "gcloud" && strings.Contains(joined, "print-identity-token"):
		c.class(Secret, "gcloud prints a token")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "gcloud token")
	case c.name == "az" && strings.Contains(joined, "get-access-token"):
		c.class(Secret, "az prints a token")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "azure token")
	case c.name == "kubectl" && strings.Contains(joined, "config view") && strings.Contains(joined, "--raw"):
		c.class(Secret, "kubectl config view --raw prints credentials")
		c.cmd.Secrets = appendUniq(c.cmd.Secrets, "kubeconfig")
	case c.name == "kubectl" && strings.Contains(joined, "get secret"):
		c.class(Secret, "kubectl reads secrets")
		c.class(Network, "")
	case c.name == "vault":
		c.class(Secret, "vault reads secrets")
		c.class(Network, "")
	case (c.name == "terraform" || c.name == "tofu") && (firstPos(c.args) == "fmt" || firstPos(c.args) == "validate" || firstPos(c.args) == "version"):
		if firstPos(c.args) == "fmt" {
			checker(c, c.name+" fmt", "-check")
			return
		}
		c.class(Verify, c.name+" "+firstPos(c.args)+" checks configuration")
		return
	case onlyAsksVersion(c.args):
		c.class(Read, c.name+" prints its version")
		return
	}
	c.class(Network, c.name+" talks to a remote service")
	for _, s := range all {
		if cloudDestroyRE().MatchString(s) {
			c.class(Destructive, c.name+" "+s+" deletes remote resources")
			break
		}
	}
	if (c.name == "terraform" || c.name == "tofu") && firstPos(c.args) == "apply" {
		c.class(Destructive, c.name+" apply changes infrastructure")
	}
}
