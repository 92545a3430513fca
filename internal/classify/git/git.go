package git

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func gitTool(c *engine.Call) {
	gitGlobal(c)
	sub, rest, _ := engine.Subcommand(c.Args, "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds", "--attr-source")
	flags, pos := engine.Opts(rest)
	force := engine.HasFlag(flags, "-f", "--force")
	why := "git " + sub
	switch sub {
	case "clean", "check-ignore", "ls-files":
		c.NamesOnly()
	}
	switch sub {
	case "", "status", "diff", "log", "show", "blame", "rev-parse", "ls-files", "ls-tree", "cat-file",
		"describe", "shortlog", "grep", "whatchanged", "show-ref", "for-each-ref", "name-rev", "merge-base",
		"rev-list", "count-objects", "var", "check-ignore", "check-attr", "version", "help", "range-diff",
		"annotate", "diff-tree", "diff-index", "diff-files", "cherry", "show-branch", "verify-commit",
		"verify-tag", "fsck", "check-ref-format", "--version", "--help", "-h":
		c.Class(engine.Read, why+" only reads")
		if sub == "grep" {
			gitGrepPager(c, rest)
		}
		if f := engine.FlagValue(rest, "--output"); f != nil {
			c.Class(engine.Write, why+" writes "+f.Text)
			c.Write(*f)
		}
	case "branch":
		switch {
		case engine.HasFlag(flags, "-D") || engine.HasFlag(flags, "--delete") && force:
			c.Class(engine.Destructive, "git branch -D deletes a branch")
		case engine.HasFlag(flags, "-d", "--delete", "-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to", "--unset-upstream", "--edit-description"):
			c.Class(engine.Write, "git branch changes branches")
		case len(pos) > 0 && !engine.HasFlag(flags, "--list", "-l", "--contains", "--merged", "--no-merged", "--points-at"):
			c.Class(engine.Write, "git branch creates a branch")
		default:
			c.Class(engine.Read, "git branch lists branches")
		}
	case "tag":
		switch {
		case engine.HasFlag(flags, "-d", "--delete"):
			c.Class(engine.Destructive, "git tag -d deletes a tag")
		case len(pos) > 0 && !engine.HasFlag(flags, "-l", "--list", "--contains", "--points-at", "-n", "--merged"):
			c.Class(engine.Write, "git tag creates a tag")
		default:
			c.Class(engine.Read, "git tag lists tags")
		}
	case "remote":
		switch engine.FirstPos(rest) {
		case "", "show", "get-url":
			c.Class(engine.Read, "git remote lists remotes")
		case "update", "prune":
			c.Class(engine.Network, "git remote "+engine.FirstPos(rest)+" fetches")
		case "add", "set-url", "rename":
			c.Persist("git remote " + engine.FirstPos(rest) + " changes where git fetches from and pushes to")
		default:
			c.Class(engine.Write, "git remote changes remotes")
		}
	case "config":
		gitConfig(c, rest)
	case "add", "commit", "mv", "apply", "am", "cherry-pick", "merge", "rebase", "revert", "notes",
		"init", "bisect", "update-index", "sparse-checkout", "gc", "repack", "pack-refs", "replace",
		"commit-tree", "hash-object", "write-tree", "read-tree", "mktag", "rerere", "format-patch", "maintenance":
		c.Class(engine.Write, why+" changes the repository")
		if sub == "bisect" && engine.FirstPos(rest) == "run" {
			_, cmd := engine.LeadingCommand(engine.SkipN(rest, 1))
			c.Exec(cmd)
			c.Keep()
		}
		if x := engine.FlagValue(rest, "-x", "--exec"); x != nil && sub == "rebase" {
			c.Shell(*x)
			c.Keep()
		}
		if sub == "apply" || sub == "am" {
			if d := engine.FlagValue(rest, "--directory"); d != nil {
				c.Write(*d)
			}
		}
		if sub == "init" {
			gitNewRepo(c, rest, false)
		}
		if sub == "format-patch" {
			if f := engine.FlagValue(rest, "-o", "--output-directory"); f != nil {
				c.Write(*f)
			}
		}
	case "rm":
		if engine.HasFlag(flags, "--cached") {
			c.Class(engine.Write, "git rm --cached unstages")
			return
		}
		c.Class(engine.Destructive, "git rm deletes files")
		c.Write(pos...)
	case "switch":
		if force || engine.HasFlag(flags, "--discard-changes") {
			c.Class(engine.Destructive, "git switch --force discards changes")
			return
		}
		c.Class(engine.Write, "git switch changes branch")
	case "checkout":
		dashdash := false
		for _, w := range rest {
			if w.Text == "--" {
				dashdash = true
			}
		}
		switch {
		case force:
			c.Class(engine.Destructive, "git checkout --force discards changes")
		case engine.HasFlag(flags, "-b", "-B", "--orphan"):
			c.Class(engine.Write, "git checkout -b creates a branch")
		case dashdash || (len(pos) > 0 && (pos[len(pos)-1].Text == "." || strings.ContainsAny(pos[len(pos)-1].Text, "/*") || len(pos) > 1)):
			c.Class(engine.Destructive, "git checkout of paths discards uncommitted changes")
			c.Write(pos...)
		default:
			c.Class(engine.Write, "git checkout changes branch")
		}
	case "restore":
		if (engine.HasFlag(flags, "--staged", "-S") && !engine.HasFlag(flags, "--worktree", "-W")) || len(pos) == 0 {
			c.Class(engine.Write, "git restore --staged unstages")
			return
		}
		c.Class(engine.Destructive, "git restore discards uncommitted changes")
		c.Write(pos...)
	case "reset":
		if engine.HasFlag(flags, "--hard", "--merge", "--keep") {
			c.Class(engine.Destructive, "git reset --hard discards work")
			return
		}
		c.Class(engine.Write, "git reset moves HEAD or unstages")
	case "clean":
		if engine.HasFlag(flags, "-n", "--dry-run") {
			c.Class(engine.Read, "git clean -n only lists")
			return
		}
		c.Class(engine.Destructive, "git clean deletes untracked files")
	case "stash":
		switch engine.FirstPos(rest) {
		case "drop", "clear":
			c.Class(engine.Destructive, "git stash "+engine.FirstPos(rest)+" deletes stashed work")
		case "list", "show":
			c.Class(engine.Read, "git stash "+engine.FirstPos(rest)+" only reads")
		default:
			c.Class(engine.Write, "git stash saves or applies work")
		}
	case "worktree":
		verb := engine.FirstPos(rest)
		_, wpos := engine.Opts(engine.SkipN(rest, 1), "-b", "-B", "--reason")
		switch verb {
		case "list":
			c.Class(engine.Read, "git worktree list")
		case "remove", "prune":
			c.Class(engine.Destructive, "git worktree "+verb+" deletes a worktree")
			if verb == "remove" {
				c.Write(wpos...)
			}
		default:
			c.Class(engine.Write, "git worktree changes worktrees")
			switch {
			case verb == "add" && len(wpos) > 0:
				c.Write(wpos[0])
			case verb == "move" && len(wpos) > 1:
				c.Write(wpos[1])
			}
		}
	case "reflog":
		switch engine.FirstPos(rest) {
		case "expire", "delete":
			c.Class(engine.Destructive, "git reflog "+engine.FirstPos(rest)+" drops history")
		default:
			c.Class(engine.Read, "git reflog only reads")
		}
	case "filter-branch", "filter-repo", "prune":
		c.Class(engine.Destructive, why+" rewrites or drops history")
	case "update-ref":
		if engine.HasFlag(flags, "-d") {
			c.Class(engine.Destructive, "git update-ref -d deletes a ref")
			return
		}
		c.Class(engine.Write, "git update-ref moves a ref")
	case "push":
		c.Class(engine.Network, "git push sends to a remote")
		if force || engine.HasFlag(flags, "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "-d", "--prune") {
			c.Class(engine.Destructive, "git push --force overwrites the remote's history")
		}
		for _, w := range pos {
			if strings.HasPrefix(w.Text, "+") || strings.HasPrefix(w.Text, ":") {
				c.Class(engine.Destructive, "git push of "+w.Text+" overwrites or deletes a remote ref")
			}
		}
	case "clone", "fetch", "pull", "ls-remote", "send-email", "request-pull", "archive":
		if sub == "clone" {
			gitNewRepo(c, rest, true)
		}
		if sub == "archive" && engine.FlagValue(rest, "--remote") == nil {
			c.Class(engine.Write, "git archive writes an archive")
			return
		}
		c.Class(engine.Network, why+" talks to a remote")
	case "submodule":
		switch engine.FirstPos(rest) {
		case "foreach":
			_, cmd := engine.LeadingCommand(engine.SkipN(rest, 1))
			c.Shell(engine.JoinWords(cmd))
		case "", "status", "summary":
			c.Class(engine.Read, "git submodule lists")
		case "init", "deinit", "set-url", "set-branch", "absorbgitdirs":
			c.Class(engine.Write, "git submodule changes configuration")
		default:
			c.Class(engine.Network, "git submodule "+engine.FirstPos(rest)+" fetches")
		}
	case "lfs":
		switch engine.FirstPos(rest) {
		case "pull", "fetch", "push", "clone":
			c.Class(engine.Network, "git lfs transfers objects")
		case "ls-files", "status", "env", "version":
			c.Class(engine.Read, "git lfs lists")
		default:
			c.Class(engine.Write, "git lfs changes configuration")
		}
	case "credential", "credential-store", "credential-cache":
		c.Class(engine.Secret, "git credential reads stored credentials")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "git credentials")
	default:
		c.Class(engine.Unknown, "git "+sub+" is not a command the analyser knows (an alias?)")
	}
}

func gitConfig(c *engine.Call, rest []engine.Word) {
	flags, pos := engine.Opts(rest, "-f", "--file", "--blob", "--type", "--default", "--comment", "--value")
	verb := ""
	if len(pos) > 0 {
		switch pos[0].Text {
		case "set", "get", "list", "unset", "rename-section", "remove-section", "edit":
			verb, pos = pos[0].Text, pos[1:] // git 2.46's subcommands
		}
	}
	key := ""
	if len(pos) > 0 {
		key = strings.ToLower(pos[0].Text)
	}
	setting := verb == "set" || verb == "" && len(pos) >= 2 && !engine.HasFlag(flags, "--get", "--get-all", "--get-regexp", "--unset", "--unset-all",
		"--list", "-l", "--get-urlmatch", "--rename-section", "--remove-section", "--show-origin", "--get-color", "--get-colorbool")
	if setting && len(pos) >= 2 {
		if persistKey(pos[0].Text) {
			c.Persist("git config " + pos[0].Text + " changes what later git commands reach or run")
		}
		gitSetting(c, pos[0].Text, pos[1])
		if f := engine.FlagValue(rest, "-f", "--file"); f != nil {
			c.Write(*f)
		}
	}
	switch verb {
	case "set", "unset", "rename-section", "remove-section", "edit":
		c.Class(engine.Write, "git config "+verb+" changes configuration")
	case "get", "list":
		c.Class(engine.Read, "git config reads configuration")
	}
	if strings.Contains(key, "credential") || strings.Contains(key, "token") || strings.Contains(key, "password") || strings.HasSuffix(key, ".extraheader") {
		c.Class(engine.Secret, "git config "+key+" touches credentials")
		c.Cmd.Secrets = engine.AppendUniq(c.Cmd.Secrets, "git config "+key)
	}
	switch {
	case engine.HasFlag(flags, "--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit"):
		c.Class(engine.Write, "git config changes configuration")
	case engine.HasFlag(flags, "--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--get-urlmatch"):
		c.Class(engine.Read, "git config reads configuration")
	case len(pos) >= 2:
		c.Class(engine.Write, "git config sets "+pos[0].Text)
	default:
		c.Class(engine.Read, "git config reads configuration")
	}
}
