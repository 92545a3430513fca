package classify

import (
	"slices"
	"strings"
)

// tarOpt is one of tar's options with its value (nil: none).
type tarOpt struct {
	name string // "-x" or a long name
	val  *word
}

// tar's short options that take a value, and long ones (the ones that
// run something first: GNU tar takes a long option abbreviated).
const tarShortArg = "bCfFgHIKLNTVX"

var tarLongArg = []string{"--to-command", "--use-compress-program", "--checkpoint-action", "--rsh-command",
	"--info-script", "--new-volume-script", "--file", "--directory", "--files-from", "--exclude-from", "--exclude",
	"--transform", "--xform", "--owner", "--group", "--mode", "--mtime", "--newer", "--newer-mtime", "--after-date",
	"--suffix", "--label", "--format", "--blocking-factor", "--record-size", "--tape-length", "--index-file",
	"--volno-file", "--listed-incremental", "--strip-components", "--warning", "--owner-map", "--group-map",
	"--pax-option", "--quoting-style", "--hole-detection", "--sparse-version", "--starting-file", "--level"}

// tarOptions reads tar's options in its three styles: old (tar xIf zstd
// a.tar: each letter that takes a value takes the next word), short
// bundles (-xIzstd) and long (--to-command=x, --to-command x, --to-com x).
func tarOptions(args []word) (opts []tarOpt, pos []word) {
	i := 0
	if len(args) > 0 && !strings.HasPrefix(args[0].s, "-") && args[0].s != "" {
		i = 1
		for _, ch := range args[0].s {
			o := tarOpt{name: "-" + string(ch)}
			if strings.ContainsRune(tarShortArg, ch) && i < len(args) {
				o.val = &args[i]
				i++
			}
			opts = append(opts, o)
		}
	}
	for ; i < len(args); i++ {
		w := args[i]
		s := w.s
		switch {
		case s == "--":
			return opts, append(pos, args[i+1:]...)
		case strings.HasPrefix(s, "--"):
			name, v, hasVal := strings.Cut(s, "=")
			full := name
			if !contains(tarLongArg, name) && name != "--checkpoint" { // --checkpoint[=N] is an option of its own
				for _, l := range tarLongArg {
					if len(name) >= 4 && strings.HasPrefix(l, name) {
						full = l
						break
					}
				}
			}
			o := tarOpt{name: full}
			if hasVal {
				o.val = &word{s: v, static: w.static, params: w.params}
			} else if full != name || contains(tarLongArg, name) {
				if i+1 < len(args) {
					i++
					o.val = &args[i]
				}
			}
			opts = append(opts, o)
		case strings.HasPrefix(s, "-") && len(s) > 1:
			for j := 1; j < len(s); j++ {
				o := tarOpt{name: "-" + s[j:j+1]}
				if strings.IndexByte(tarShortArg, s[j]) >= 0 {
					if j+1 < len(s) {
						o.val = &word{s: s[j+1:], static: w.static, params: w.params}
					} else if i+1 < len(args) {
						i++
						o.val = &args[i]
					}
					opts = append(opts, o)
					break
				}
				opts = append(opts, o)
			}
		default:
			pos = append(pos, w)
		}
	}
	return opts, pos
}

func tarTool(c *call) {
	if len(c.args) == 0 {
		c.class(Read, "tar alone")
		return
	}
	opts, _ := tarOptions(c.args)
	has := func(names ...string) bool {
		for _, o := range opts {
			if contains(names, o.name) {
				return true
			}
		}
		return false
	}
	value := func(names ...string) *word {
		for _, o := range opts {
			if contains(names, o.name) && o.val != nil {
				return o.val
			}
		}
		return nil
	}
	for _, o := range opts {
		if o.val == nil {
			continue
		}
		switch o.name {
		case "--to-command", "--use-compress-program", "-I", "--rsh-command":
			c.cmd.Why = joinWhy(c.cmd.Why, "tar "+o.name+" runs a command")
			c.shell(*o.val)
			c.Keep()
		case "--checkpoint-action":
			if cmd, ok := strings.CutPrefix(o.val.s, "exec="); ok {
				c.cmd.Why = joinWhy(c.cmd.Why, "tar --checkpoint-action=exec runs a command")
				c.shell(word{s: cmd, static: o.val.static, params: o.val.params})
				c.Keep()
			}
		case "-F", "--info-script", "--new-volume-script":
			c.class(Unknown, "tar runs the script "+o.val.s+" at the end of each volume")
		case "-f", "--file":
			if i := strings.IndexByte(o.val.s, ':'); i > 0 && !strings.Contains(o.val.s[:i], "/") && !has("--force-local") {
				c.class(Network, "tar reaches the remote archive "+o.val.s)
				if h := hostOf(o.val.s); h != "" {
					c.cmd.Hosts = appendUniq(c.cmd.Hosts, h)
				}
			}
		}
	}
	switch {
	case has("-t", "--list"):
		c.class(Read, "tar lists an archive")
	case has("-x", "--extract", "--get"):
		c.class(Write, "tar writes files")
		if d := value("-C", "--directory"); d != nil {
			c.write(*d)
		} else if !has("-O", "--to-stdout", "--to-command") {
			c.write(word{s: ".", static: true})
		}
	case has("-c", "--create", "-r", "--append", "-u", "--update"):
		c.class(Write, "tar writes files")
		if f := value("-f", "--file"); f != nil && f.s != "-" {
			c.write(*f)
		}
	default:
		c.class(Write, "tar")
	}
}

func unzipTool(c *call) {
	f, _ := opts(c.args, "-d", "-x")
	f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "-d") })
	if hasFlag(f, "-l", "-t", "-v", "-Z", "-p") {
		c.class(Read, "unzip lists or prints")
		return
	}
	c.class(Write, "unzip extracts files")
	if d := optValue(c.args, "-d", ""); d != nil {
		c.write(*d)
	} else {
		c.write(word{s: ".", static: true})
	}
}

// zipTool: zip -TT/--unzip-command runs a command to test the archive.
func zipTool(c *call) {
	if p := optValue(c.args, "-TT", "--unzip-command"); p != nil {
		c.cmd.Why = joinWhy(c.cmd.Why, "zip -TT runs a command")
		c.shell(*p)
		c.Keep()
	}
	c.class(Write, "zip writes an archive")
	if _, pos := opts(c.args, "-TT", "--unzip-command", "-b", "-n", "-t", "-tt", "-x", "-i", "-O", "--out"); len(pos) > 0 {
		c.write(pos[0])
	}
}
