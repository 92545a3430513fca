package classify

import "strings"

func goTool(c *call) {
	sub, rest, _ := subcommand(c.args, "-C")
	gflags, gpos := goFlags(rest)
	switch sub {
	case "build", "test", "vet", "run", "install", "list", "generate":
		goRunsCommands(c, gflags)
	}
	switch sub {
	case "build", "generate", "run", "install":
		if sub == "install" {
			for _, w := range rest {
				if strings.Contains(w.s, "@") {
					c.class(Dependency, "go install "+w.s+" downloads and installs a module")
					return
				}
			}
		}
		if sub == "run" && len(gpos) > 0 && strings.Contains(gpos[0].s, "@") && !strings.HasSuffix(gpos[0].s, ".go") {
			c.class(Dependency, "go run "+gpos[0].s+" downloads a module and runs it")
		}
		c.class(Build, "go "+sub+" builds")
		if f, ok := gflags["-o"]; ok {
			c.write(f)
		}
	case "test", "vet":
		c.class(Verify, "go "+sub+" checks the code")
	case "get":
		c.class(Dependency, "go get changes dependencies")
	case "mod":
		switch firstPos(rest) {
		case "graph", "why", "verify", "":
			c.class(Read, "go mod "+firstPos(rest)+" only reads")
		case "edit", "init":
			c.class(Write, "go mod "+firstPos(rest)+" writes go.mod")
		default:
			c.class(Dependency, "go mod "+firstPos(rest)+" changes dependencies")
		}
	case "work":
		if firstPos(rest) == "sync" || firstPos(rest) == "vendor" {
			c.class(Dependency, "go work "+firstPos(rest)+" changes dependencies")
			return
		}
		c.class(Write, "go work changes go.work")
	case "fmt", "fix":
		c.class(Write, "go "+sub+" rewrites files")
	case "clean":
		if f, _ := opts(rest); hasFlag(f, "-cache", "-modcache", "-testcache", "-fuzzcache") {
			if hasFlag(f, "-modcache") {
				c.class(Destructive, "go clean -modcache deletes the module cache (a download to restore)")
				return
			}
			c.class(Write, "go clean removes caches, which the next build fills again")
			return
		}
		c.class(Write, "go clean removes build files")
	case "env":
		if f, pos := opts(rest); hasFlag(f, "-w", "-u") {
			for _, w := range pos {
				c.assignArg(w)
			}
			c.persist("go env -w changes what later go commands fetch and run")
			return
		}
		c.class(Read, "go env only reads")
	case "tool":
		if f, pos := opts(rest); len(pos) > 0 && !hasFlag(f, "-n") {
			c.class(Build, "go tool "+pos[0].s+" runs a tool")
			return
		}
		c.class(Read, "go tool lists its tools")
	case "version", "list", "doc", "help", "":
		c.class(Read, "go "+sub+" only reads")
	default:
		c.class(Unknown, "go "+sub+" is not a command the analyser knows")
	}
}

func gofmtTool(c *call) {
	flags, _ := opts(c.args)
	switch {
	case hasFlag(flags, "-w"):
		c.class(Write, c.name+" -w rewrites files")
	case hasFlag(flags, "-l", "-d"):
		c.class(Verify, c.name+" lists unformatted files")
	default:
		c.class(Read, c.name+" prints formatted code")
	}
}

// goFlagsWithArg: the go command's flags that take a value.
var goFlagsWithArg = setOf(`-C -o -p -asmflags -buildmode -compiler -gccgoflags -gcflags -installsuffix -tags
-ldflags -mod -modfile -overlay -pgo -pkgdir -toolexec -exec -coverpkg -covermode -vettool -run -bench -count
-timeout -cpu -parallel -benchtime -fuzz -fuzztime -fuzzminimizetime -skip -shuffle -outputdir -coverprofile
-cpuprofile -memprofile -blockprofile -mutexprofile -trace -list -memprofilerate -blockprofilerate
-mutexprofilefraction -debug-actiongraph -debug-runtime-trace -debug-trace`)

// goFlags splits a go subcommand's arguments: each flag with its value
// (-flag=v, -flag v, --flag v), and the positional words.
func goFlags(args []word) (flags map[string]word, pos []word) {
	flags = map[string]word{}
	for i := 0; i < len(args); i++ {
		s := args[i].s
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
			flags[name] = word{s: v, static: args[i].static, params: args[i].params}
		case goFlagsWithArg[name] && i+1 < len(args):
			i++
			flags[name] = args[i]
		default:
			flags[name] = word{static: true}
		}
	}
	return flags, pos
}

// goRunsCommands: -toolexec, -exec and -vettool name programs the go
// command runs (on every compiler call, on the test binary, as vet).
func goRunsCommands(c *call, flags map[string]word) {
	for _, f := range []string{"-toolexec", "-exec", "-vettool"} {
		if w, ok := flags[f]; ok && (w.s != "" || !w.static) {
			c.cmd.Why = joinWhy(c.cmd.Why, "go "+f+" runs "+w.s)
			c.shell(w)
			c.Keep()
		}
	}
	if w, ok := flags["-ldflags"]; ok {
		if ld := extLinker(w.s); ld != "" {
			c.cmd.Why = joinWhy(c.cmd.Why, "go -ldflags -extld runs "+ld)
			c.shell(word{s: ld, static: w.static, params: w.params})
			c.Keep()
		}
	}
}
