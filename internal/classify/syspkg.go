package classify

func pkgTool(c *call) {
	sub, _, _ := subcommand(c.args, "-o", "-c", "-t", "--target-release")
	switch sub {
	case "list", "search", "show", "policy", "info", "depends", "rdepends", "query", "-Q", "-Qi", "-Ss", "-Si", "madison", "":
		c.class(Read, c.name+" "+sub+" only reads")
	case "autoremove", "purge", "clean", "autoclean", "cleanup":
		c.class(Dependency, c.name+" "+sub+" removes packages or caches")
	default:
		c.class(Dependency, c.name+" "+sub+" changes system packages")
	}
}

func dpkgTool(c *call) {
	flags, _ := opts(c.args)
	switch {
	case hasFlag(flags, "-i", "--install", "-r", "--remove", "-P", "--purge", "--configure", "--unpack"):
		c.class(Dependency, "dpkg changes system packages")
	default:
		c.class(Read, "dpkg only reads")
	}
}
