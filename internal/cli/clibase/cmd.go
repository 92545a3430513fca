// Package clibase is the part of the CLI's verb plumbing that needs no
// daemon client: flag sets that print airlock's errors and help, flag
// types (sizes, durations with days, lists), the command (Cmd: --socket,
// parsing with interspersed flags, errors on one line), verb groups
// (DispatchGroup), and human output (termsafe escapes, JSON, ages). It
// imports neither the SDK nor net/http, so that the front binary
// (cmd/airlock-front), which links it, starts as fast as a small Go
// program; package cli adds the daemon's client on top.
package clibase

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
)

// The daemon's default socket and the variable that overrides it: the
// SDK's DefaultSocket and SocketEnv (a test keeps them equal), repeated
// here so that this package does not link the SDK.
const (
	DefaultSocket = "/run/airlock/airlock.sock"
	SocketEnv     = "AIRLOCK_SOCKET"
)

// SubVerb is one command of a verb group (sandbox, task).
type SubVerb struct {
	Name string
	Run  func(args []string, stdout, stderr io.Writer) int
}

// DispatchGroup runs the sub-command args[0] of a verb group.
func DispatchGroup(group, usage string, verbs []SubVerb, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	for _, v := range verbs {
		if v.Name == args[0] {
			if !RawVerbs[group+" "+v.Name] {
				stdout, stderr = termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
			}
			return v.Run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "airlock %s: unknown command %q; run 'airlock %s --help' for the list\n", group, args[0], group)
	return 2
}

// Cmd is what every verb that talks to the daemon shares: its flag set
// with --socket, its output and its error reporting.
type Cmd struct {
	JSON     bool   // --json, for verbs made by simpleVerb
	Group    string // "sandbox" or "task"
	Name     string // "create"
	Synopsis string // "airlock sandbox create [flags]"
	Usage    string
	FS       *flag.FlagSet
	Socket   string
	Stdout   io.Writer
	Stderr   io.Writer
}

// NewCmd makes the command "airlock sandbox NAME" (set Group for another
// group, or to Name for a verb of its own); its usage is synopsis, then
// about, then the flags.
func NewCmd(name, synopsis, about string, stdout, stderr io.Writer) *Cmd {
	c := &Cmd{Group: "sandbox", Name: name, Synopsis: synopsis, Stdout: stdout, Stderr: stderr}
	c.Usage = "usage: " + synopsis + "\n\n" + about + "\nflags:\n"
	c.FS = NewFlagSet("sandbox "+name, c.Usage, stderr)
	// the group may be changed after this (apikey, task, ...): name the
	// command as it is when the hint is printed
	c.FS.Usage = func() { fmt.Fprintf(stderr, "; run 'airlock %s --help' for usage\n", c.Path()) }
	c.FS.SetOutput(FlagErrors{stderr, c.Path})
	c.FS.StringVar(&c.Socket, "socket", EnvOr(SocketEnv, DefaultSocket), "the daemon's unix socket `PATH` (env AIRLOCK_SOCKET)")
	return c
}

// Path is the command as typed after "airlock": "sandbox exec", or
// "approve" for a verb of its own (whose group is its name).
func (c *Cmd) Path() string {
	if c.Group == c.Name {
		return c.Name
	}
	return c.Group + " " + c.Name
}

// SplitDash splits args at the first "--".
func SplitDash(args []string) (head, tail []string, dashed bool) {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i], args[i+1:], true
	}
	return args, nil, false
}

// ParseInterspersed parses the flags found anywhere in args (which hold no
// "--") and returns the other arguments, in order.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Parse parses flags given before or after the positional arguments
// ("get ID --json"); after a "--" everything is positional. It reports
// whether the caller should return with the given code.
func (c *Cmd) Parse(args []string) (pos []string, code int, done bool) {
	head, tail, _ := SplitDash(args)
	if code, done := ParseFlags(c.FS, c.Usage, head, c.Stdout); done {
		return nil, code, true
	}
	pos, err := ParseInterspersed(c.FS, c.FS.Args())
	if err != nil {
		return nil, 2, true
	}
	return append(pos, tail...), 0, false
}

// UsageErr reports bad usage: exit status 2.
func (c *Cmd) UsageErr(format string, args ...any) int {
	fmt.Fprintf(c.Stderr, "airlock %s: %s; usage: %s\n", c.Path(), termsafe.String(fmt.Sprintf(format, args...)), c.Synopsis)
	return 2
}

// Fail reports an error on one line: exit status 1.
func (c *Cmd) Fail(err error) int {
	c.Errorf("%v", err)
	return 1
}

// Errorf reports an error on one line.
func (c *Cmd) Errorf(format string, args ...any) {
	// Errors quote requests and answers (a command line, a path): one
	// line, its controls escaped, also for the raw verbs (exec).
	msg := termsafe.String(strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " "))
	fmt.Fprintf(c.Stderr, "airlock %s: %s\n", c.Path(), msg)
}

// ActorName is the person running the CLI, for the daemon's record of
// approvals and overrides.
func ActorName() string {
	for _, k := range []string{"SUDO_USER", "USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// PrintJSON writes v as indented JSON, safe for a terminal.
func PrintJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// JSON output is read by people too: C1 controls, DEL and bidi
	// characters, which encoding/json leaves raw, become \u escapes
	// (the same JSON).
	_, err = w.Write(append(termsafe.JSONSafe(b), '\n'))
	return err
}

// OneID parses a verb that takes exactly one sandbox ID.
func (c *Cmd) OneID(args []string) (id string, code int, done bool) {
	pos, code, done := c.Parse(args)
	if done {
		return "", code, true
	}
	if len(pos) != 1 {
		return "", c.UsageErr("want one sandbox ID"), true
	}
	return pos[0], 0, false
}

// Ago is how long before now t was ("3h5m ago"), "-" for no time.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if !now.After(t) {
		return "just now"
	}
	return HumanDuration(now.Sub(t)) + " ago"
}

// HumanDuration is d in at most two units: "45s", "12m", "3h5m", "2d4h".
func HumanDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400:
		if m := s % 3600 / 60; m != 0 {
			return fmt.Sprintf("%dh%dm", s/3600, m)
		}
		return fmt.Sprintf("%dh", s/3600)
	}
	if h := s % 86400 / 3600; h != 0 {
		return fmt.Sprintf("%dd%dh", s/86400, h)
	}
	return fmt.Sprintf("%dd", s/86400)
}

// NewFlagSet makes a verb's flag set. A parse error prints one line and a
// hint; --help prints the full usage to stdout.
func NewFlagSet(name, usageText string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(FlagErrors{stderr, func() string { return name }})
	fs.Usage = func() {
		fmt.Fprintf(stderr, "; run 'airlock %s --help' for usage\n", name)
	}
	return fs
}

// ParseFlags parses args; it reports whether the caller should return
// with the given code.
func ParseFlags(fs *flag.FlagSet, usageText string, args []string, stdout io.Writer) (int, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, usageText)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0, true
		}
	}
	if err := fs.Parse(args); err != nil {
		return 2, true
	}
	return 0, false
}

// RawVerbs pass their output through as it is: a command's own output
// (run, exec), a file's bytes (cat, download, output), a patch or a
// bundle, a protocol (mcp), the daemon's log (slog quotes what it logs).
// Every other verb's output goes through termsafe, so that no string from
// a request, an analysis or a sandbox reaches the terminal with its
// control characters (issue 16.4); printers escape fields with
// termsafe.String as well, for newlines and tabs. The groups (sandbox,
// task) decide per verb, in DispatchGroup.
var RawVerbs = map[string]bool{
	"run": true, "serve": true, "mcp": true, "sandbox": true, "task": true,
	"sandbox exec": true, "sandbox output": true, "sandbox cat": true, "sandbox download": true,
	"task exec": true, "task test": true, "task diff": true, "task export": true,
}

// Esc is termsafe.String: one field of a line of human output.
func Esc(s string) string { return termsafe.String(s) }
