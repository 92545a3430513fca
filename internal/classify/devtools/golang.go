package devtools

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

func goTool(c *engine.Call) {
	sub, rest, _ := engine.Subcommand(c.Args, "-C")
	gflags, gpos := goFlags(rest)
	switch sub {
	case "build", "test", "vet", "run", "install", "list", "generate":
		goRunsCommands(c, gflags)
	}
	switch sub {
	case "build", "generate", "run", "install":
		if sub == "install" {
			for _, w := range rest {
				if strings.Contains(w.Text, "@") {
					c.Class(engine.Dependency, "go install "+w.Text+" downloads and installs a module")
					return
				}
			}
		}
		if sub == "run" && len(gpos) > 0 && strings.Contains(gpos[0].Text, "@") && !strings.HasSuffix(gpos[0].Text, ".go") {
			c.Class(engine.Dependency, "go run "+gpos[0].Text+" downloads a module and runs it")
		}
		c.Class(engine.Build, "go "+sub+" builds")
		if f, ok := gflags["-o"]; ok {
			c.Write(f)
		}
	case "test", "vet":
		c.Class(engine.Verify, "go "+sub+" checks the code")
	case "get":
		c.Class(engine.Dependency, "go get changes dependencies")
	case "mod":
		switch engine.FirstPos(rest) {
		case "graph", "why", "verify", "":
			c.Class(engine.Read, "go mod "+engine.FirstPos(rest)+" only reads")
		case "edit", "init":
			c.Class(engine.Write, "go mod "+engine.FirstPos(rest)+" writes go.mod")
		default:
			c.Class(engine.Dependency, "go mod "+engine.FirstPos(rest)+" changes dependencies")
		}
	case "work":
		if engine.FirstPos(rest) == "sync" || engine.FirstPos(rest) == "vendor" {
			c.Class(engine.Dependency, "go work "+engine.FirstPos(rest)+" changes dependencies")
			return
		}
		c.Class(engine.Write, "go work changes go.work")
	case "fmt", "fix":
		c.Class(engine.Write, "go "+sub+" rewrites files")
	case "clean":
		if f, _ := engine.Opts(rest); engine.HasFlag(f, "-cache", "-modcache", "-testcache", "-fuzzcache") {
			if engine.HasFlag(f, "-modcache") {
				c.Class(engine.Destructive, "go clean -modcache deletes the module cache (a download to restore)")
				return
			}
			c.Class(engine.Write, "go clean removes caches, which the next build fills again")
			return
		}
		c.Class(engine.Write, "go clean removes build files")
	case "env":
		if f, pos := engine.Opts(rest); engine.HasFlag(f, "-w", "-u") {
			for _, w := range pos {
				c.AssignArg(w)
			}
			c.Persist("go env -w changes what later go commands fetch and run")
			return
		}
		c.Class(engine.Read, "go env only reads")
	case "tool":
		if f, pos := engine.Opts(rest); len(pos) > 0 && !engine.HasFlag(f, "-n") {
			c.Class(engine.Build, "go tool "+pos[0].Text+" runs a tool")
			return
		}
		c.Class(engine.Read, "go tool lists its tools")
	case "version", "list", "doc", "help", "":
		c.Class(engine.Read, "go "+sub+" only reads")
	default:
		c.Class(engine.Unknown, "go "+sub+" is not a command the analyser knows")
	}
}

func gofmtTool(c *engine.Call) {
	flags, _ := engine.Opts(c.Args)
	switch {
	case engine.HasFlag(flags, "-w"):
		c.Class(engine.Write, c.Name+" -w rewrites files")
	case engine.HasFlag(flags, "-l", "-d"):
		c.Class(engine.Verify, c.Name+" lists unformatted files")
	default:
		c.Class(engine.Read, c.Name+" prints formatted code")
	}
}

// goFlagsWithArg: the go command's flags that take a value.
var goFlagsWithArg = engine.SetOf(`-C -o -p -asmflags -buildmode -compiler -gccgoflags -gcflags -installsuffix -tags
-ldflags -mod -modfile -overlay -pgo -pkgdir -toolexec -exec -coverpkg -covermode -vettool -run -bench -count
-timeout -cpu -parallel -benchtime -fuzz -fuzztime -fuzzminimizetime -skip -shuffle -outputdir -coverprofile
-cpuprofile -memprofile -blockprofile -mutexprofile -trace -list -memprofilerate -blockprofilerate
-mutexprofilefraction -debug-actiongraph -debug-runtime-trace -debug-trace`)

// goFlags splits a go subcommand's arguments: each flag with its value
// (-flag=v, -flag v, --flag v), and the positional words.
func goFlags(args []engine.Word) (flags map[string]engine.Word, pos []engine.Word) {
	flags = map[string]engine.Word{}
	for i := 0; i < len(args); i++ {
		s := args[i].Text
		if s == "--" {
			return flags, append(pos, args[i+1:]...)
		}
		if !strings.HasPrefix(s, "-") || s == "-" {
			pos = append(pos, args[i])
			continue
		}
		name, v, hasVal := strings.Cut(s, "=")
		if strings.HasPrefix(name, "--") {
			name = name[1:]
		}
		switch {
		case hasVal:
			flags[name] = engine.Word{Text: v, Static: args[i].Static, Params: args[i].Params}
		case goFlagsWithArg.Has(name) && i+1 < len(args):
			i++
			flags[name] = args[i]
		default:
			flags[name] = engine.Word{Static: true}
		}
	}
	return flags, pos
}

// goRunsCommands: -toolexec, -exec and -vettool name programs the go
// command runs (on every compiler call, on the test binary, as vet).
func goRunsCommands(c *engine.Call, flags map[string]engine.Word) {
	for _, f := range []string{"-toolexec", "-exec", "-vettool"} {
		if w, ok := flags[f]; ok && (w.Text != "" || !w.Static) {
			c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "go "+f+" runs "+w.Text)
			c.Shell(w)
			c.Keep()
		}
	}
	if w, ok := flags["-ldflags"]; ok {
		if ld := engine.ExtLinker(w.Text); ld != "" {
			c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "go -ldflags -extld runs "+ld)
			c.Shell(engine.Word{Text: ld, Static: w.Static, Params: w.Params})
			c.Keep()
		}
	}
}
