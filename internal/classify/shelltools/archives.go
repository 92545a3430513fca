package shelltools

import (
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify/engine"
)

// tarOpt is one of tar's options with its value (nil: none).
type tarOpt struct {
	name string // "-x" or a long name
	val  *engine.Word
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
func tarOptions(args []engine.Word) (opts []tarOpt, pos []engine.Word) {
	i := 0
	if len(args) > 0 && !strings.HasPrefix(args[0].Text, "-") && args[0].Text != "" {
		i = 1
		for _, ch := range args[0].Text {
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
		s := w.Text
		switch {
		case s == "--":
			return opts, append(pos, args[i+1:]...)
		case strings.HasPrefix(s, "--"):
			name, v, hasVal := strings.Cut(s, "=")
			full := name
			if !slices.Contains(tarLongArg, name) && name != "--checkpoint" { // --checkpoint[=N] is an option of its own
				for _, l := range tarLongArg {
					if len(name) >= 4 && strings.HasPrefix(l, name) {
						full = l
						break
					}
				}
			}
			o := tarOpt{name: full}
			if hasVal {
				o.val = &engine.Word{Text: v, Static: w.Static, Params: w.Params}
			} else if full != name || slices.Contains(tarLongArg, name) {
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
						o.val = &engine.Word{Text: s[j+1:], Static: w.Static, Params: w.Params}
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

func tarTool(c *engine.Call) {
	if len(c.Args) == 0 {
		c.Class(engine.Read, "tar alone")
		return
	}
	opts, _ := tarOptions(c.Args)
	has := func(names ...string) bool {
		for _, o := range opts {
			if slices.Contains(names, o.name) {
				return true
			}
		}
		return false
	}
	value := func(names ...string) *engine.Word {
		for _, o := range opts {
			if slices.Contains(names, o.name) && o.val != nil {
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
			c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "tar "+o.name+" runs a command")
			c.Shell(*o.val)
			c.Keep()
		case "--checkpoint-action":
			if cmd, ok := strings.CutPrefix(o.val.Text, "exec="); ok {
				c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "tar --checkpoint-action=exec runs a command")
				c.Shell(engine.Word{Text: cmd, Static: o.val.Static, Params: o.val.Params})
				c.Keep()
			}
		case "-F", "--info-script", "--new-volume-script":
			c.Class(engine.Unknown, "tar runs the script "+o.val.Text+" at the end of each volume")
		case "-f", "--file":
			if i := strings.IndexByte(o.val.Text, ':'); i > 0 && !strings.Contains(o.val.Text[:i], "/") && !has("--force-local") {
				c.Class(engine.Network, "tar reaches the remote archive "+o.val.Text)
				if h := engine.HostOf(o.val.Text); h != "" {
					c.Cmd.Hosts = engine.AppendUniq(c.Cmd.Hosts, h)
				}
			}
		}
	}
	switch {
	case has("-t", "--list"):
		c.Class(engine.Read, "tar lists an archive")
	case has("-x", "--extract", "--get"):
		c.Class(engine.Write, "tar writes files")
		if d := value("-C", "--directory"); d != nil {
			c.Write(*d)
		} else if !has("-O", "--to-stdout", "--to-command") {
			c.Write(engine.Word{Text: ".", Static: true})
		}
	case has("-c", "--create", "-r", "--append", "-u", "--update"):
		c.Class(engine.Write, "tar writes files")
		if f := value("-f", "--file"); f != nil && f.Text != "-" {
			c.Write(*f)
		}
	default:
		c.Class(engine.Write, "tar")
	}
}

func unzipTool(c *engine.Call) {
	f, _ := engine.Opts(c.Args, "-d", "-x")
	f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "-d") })
	if engine.HasFlag(f, "-l", "-t", "-v", "-Z", "-p") {
		c.Class(engine.Read, "unzip lists or prints")
		return
	}
	c.Class(engine.Write, "unzip extracts files")
	if d := engine.OptValue(c.Args, "-d", ""); d != nil {
		c.Write(*d)
	} else {
		c.Write(engine.Word{Text: ".", Static: true})
	}
}

// zipTool: zip -TT/--unzip-command runs a command to test the archive.
func zipTool(c *engine.Call) {
	if p := engine.OptValue(c.Args, "-TT", "--unzip-command"); p != nil {
		c.Cmd.Why = engine.JoinWhy(c.Cmd.Why, "zip -TT runs a command")
		c.Shell(*p)
		c.Keep()
	}
	c.Class(engine.Write, "zip writes an archive")
	if _, pos := engine.Opts(c.Args, "-TT", "--unzip-command", "-b", "-n", "-t", "-tt", "-x", "-i", "-O", "--out"); len(pos) > 0 {
		c.Write(pos[0])
	}
}
