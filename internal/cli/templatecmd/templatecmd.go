// Package templatecmd is `airlock template`: templates imported from
// container images or built from Debian, kept in the data directory's
// template store (the one `airlock run` and the daemon read), worked on
// in process, as root, with no daemon.
package templatecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/debian"
	"github.com/airlock-dev/airlock/internal/template/layertar"
	"github.com/airlock-dev/airlock/internal/template/oci"
	"github.com/airlock-dev/airlock/sdk"
)

const groupUsage = `usage: airlock template <command> [flags] [args]

Templates from container images and from Debian (issue 21). A template is
immutable: its layers are unpacked once, shared by every template that has
them, and stacked read-only under each sandbox's own writable layer.

commands:
  import NAME SOURCE   import an image: an OCI layout directory, an OCI archive,
                       a 'docker save' archive, or a registry reference
                       (host/repo:tag or host/repo@sha256:...); registry
                       credentials from the docker-style config file, or
                       from a daemon secret (--registry-secret)
  debian NAME          build a minimal Debian root with mmdebstrap from the
                       host's apt sources (--suite, --packages)
  build NAME [DIR]     build a template from an airlock.template file (-f):
                       FROM a template, then RUN, COPY (from DIR, the context
                       directory, default .), ENV, WORKDIR, USER; each RUN in
                       a fresh sandbox, each step a cached layer
  ls                   list the templates
  inspect NAME         a template's record (JSON): digest, layers, config,
                       provenance, packages
  rm NAME              remove a template (its layers stay until gc)
  gc                   remove the layers no template uses (never one a running
                       sandbox uses) and interrupted unpacks

Every command takes --data-dir (env AIRLOCK_DATA_DIR, default
/var/lib/airlock). Commands always run as the unprivileged sandbox user
(uid 1000), whatever user the image names (a root image user too); setuid
and setgid bits and file capabilities of an image are dropped.
`

var verbs = []cli.SubVerb{
	{Name: "import", Run: cmdImport},
	{Name: "debian", Run: cmdDebian},
	{Name: "build", Run: cmdBuild},
	{Name: "ls", Run: cmdLs},
	{Name: "inspect", Run: cmdInspect},
	{Name: "rm", Run: cmdRm},
	{Name: "gc", Run: cmdGC},
}

// CmdTemplate is `airlock template`.
func CmdTemplate(args []string, stdout, stderr io.Writer) int {
	return cli.DispatchGroup("template", groupUsage, verbs, args, stdout, stderr)
}

type common struct {
	dataDir *string
}

type flagSet struct{ *flag.FlagSet }

// parse takes flags anywhere among the arguments; --help prints the
// usage and the flags.
func (f *flagSet) parse(usage string, args []string, stdout io.Writer) ([]string, int, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprint(stdout, usage)
			f.SetOutput(stdout)
			f.PrintDefaults()
			return nil, 0, true
		}
	}
	pos, err := cli.ParseInterspersed(f.FlagSet, args)
	if err != nil {
		return nil, 2, true
	}
	return pos, 0, false
}

func flags(name, usage string, stderr io.Writer) (*flagSet, *common) {
	fs := cli.NewFlagSet("template "+name, usage, stderr)
	c := &common{dataDir: fs.String("data-dir", cli.EnvOr("AIRLOCK_DATA_DIR", "/var/lib/airlock"), "data directory holding the templates (env AIRLOCK_DATA_DIR)")}
	return &flagSet{fs}, c
}

func (c *common) store() (*template.Store, error) {
	return template.Open(filepath.Join(*c.dataDir, "templates"))
}

func fail(stderr io.Writer, verb string, err error) int {
	fmt.Fprintf(stderr, "airlock template %s: %v\n", verb, err)
	if errors.Is(err, errdefs.ErrInvalid) && strings.Contains(err.Error(), "usage") {
		return 2
	}
	return 1
}

// signalContext ends on SIGINT/SIGTERM: an import stops, and what it had
// unpacked is removed.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

func progress(stderr io.Writer) func(string, ...any) {
	t0 := time.Now()
	return func(f string, a ...any) {
		fmt.Fprintf(stderr, "[%5.1fs] %s\n", time.Since(t0).Seconds(), fmt.Sprintf(f, a...))
	}
}

const importUsage = `usage: airlock template import [flags] NAME SOURCE

Imports an image as the template NAME. SOURCE is an OCI image layout
directory, an OCI archive, a 'docker save' archive or a registry reference;
the linux/amd64 image of an index is taken, its digest pinned. Registry
credentials come from the docker-style config file ($DOCKER_CONFIG or
~/.docker/config.json), or, with --registry-secret NAME, from the daemon's
secret NAME ('airlock secret set NAME', value USER:PASSWORD or a JSON auth
entry such as {"username":"u","password":"p"}): the daemon at --socket then
imports into its own data directory, streaming its progress here, and the
value goes to the reference's registry only, never into an error, a log
line or the template's record.

flags:
`

func cmdImport(args []string, stdout, stderr io.Writer) int {
	fs, c := flags("import", importUsage, stderr)
	maxBytes := new(int64)
	*maxBytes = layertar.DefaultMaxBytes
	fs.Var(cli.SizeFlag{V: maxBytes}, "max-layer-bytes", "cap on one layer's unpacked file bytes, e.g. 4G (a layer over it is refused)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	timeout := cli.Duration(fs.FlagSet, "timeout", 30*time.Minute, "give up after this long (a registry that answers too slowly)")
	secret := fs.String("registry-secret", "", "the daemon's secret `NAME` holding the registry credential (the daemon imports)")
	socket := fs.String("socket", cli.EnvOr(sdk.SocketEnv, sdk.DefaultSocket), "the daemon's unix socket `PATH`, with --registry-secret (env AIRLOCK_SOCKET)")
	pos, code, done := fs.parse(importUsage, args, stdout)
	if done {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "airlock template import: want NAME SOURCE; run 'airlock template import --help'\n")
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *timeout)
	defer cancelT()
	if *secret != "" {
		return importByDaemon(ctx, fs, *socket, sdk.TemplateImport{Name: pos[0], Source: pos[1], RegistrySecret: *secret}, *quiet, stdout, stderr)
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "import", err)
	}
	opt := oci.Options{Limits: layertar.Limits{MaxBytes: *maxBytes}}
	if !*quiet {
		opt.Progress = progress(stderr)
	}
	img, err := oci.Import(ctx, s, pos[0], pos[1], opt)
	if err != nil {
		return fail(stderr, "import", err)
	}
	if img.Config.WorkingDir != "" && !*quiet {
		fmt.Fprintf(stderr, "note: commands that name no cwd start in the image's working directory %s\n", cli.Esc(img.Config.WorkingDir))
	}
	fmt.Fprintf(stdout, "%s@%s %s\n", img.Name, img.Version, img.Digest)
	return 0
}

// importByDaemon has the daemon import (its secret store holds the
// registry credential): the in-process flags that name this process's
// store or limits do not apply, and are refused rather than ignored.
func importByDaemon(ctx context.Context, fs *flagSet, socket string, req sdk.TemplateImport, quiet bool, stdout, stderr io.Writer) int {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "data-dir" || f.Name == "max-layer-bytes" {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "airlock template import: %s: unsupported with --registry-secret (the daemon imports into its own data directory, with its limits)\n", strings.Join(bad, ", "))
		return 2
	}
	c, err := sdk.New(sdk.WithSocket(socket), sdk.WithActor(cli.ActorName()))
	if err != nil {
		return fail(stderr, "import", err)
	}
	var lines func(string)
	if !quiet {
		p := progress(stderr)
		lines = func(l string) { p("%s", l) }
	}
	t, err := c.ImportTemplateWith(ctx, req, lines)
	if err != nil {
		return fail(stderr, "import", err)
	}
	fmt.Fprintf(stdout, "%s@%s %s\n", cli.Esc(t.Name), t.Version, t.Digest)
	return 0
}

func cmdDebian(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: airlock template debian [flags] NAME\n\nBuilds a minimal Debian root with mmdebstrap (apt-get install mmdebstrap)\nfrom this host's apt sources and keys, and stores it as the template NAME.\nThe installed packages and versions are recorded ('airlock template inspect').\n\nflags:\n"
	fs, c := flags("debian", usage, stderr)
	suite := fs.String("suite", "bookworm", "Debian suite")
	variant := fs.String("variant", "minbase", "mmdebstrap variant")
	var pkgs cli.ListFlag
	fs.Var(&pkgs, "packages", "packages to add, comma-separated (repeatable)")
	verbose := fs.Bool("verbose", false, "show mmdebstrap's progress")
	pos, code, done := fs.parse(usage, args, stdout)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "airlock template debian: want NAME; run 'airlock template debian --help'\n")
		return 2
	}
	var list []string
	for _, p := range pkgs {
		for _, x := range strings.Split(p, ",") {
			if x = strings.TrimSpace(x); x != "" {
				list = append(list, x)
			}
		}
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "debian", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	opt := debian.Options{Suite: *suite, Variant: *variant, Packages: list}
	if *verbose {
		opt.Stderr = stderr
	}
	img, err := debian.Build(ctx, s, pos[0], opt)
	if err != nil {
		return fail(stderr, "debian", err)
	}
	fmt.Fprintf(stdout, "%s@%s %s (%d packages)\n", img.Name, img.Version, img.Digest, len(img.Packages))
	return 0
}

func cmdLs(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: airlock template ls [flags]\n\nLists the templates: the built-in host template and the imported ones.\n\nflags:\n"
	fs, c := flags("ls", usage, stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	quiet := fs.Bool("q", false, "print the names only, one a line, host first (for shell completion)")
	if _, code, done := fs.parse(usage, args, stdout); done {
		return code
	}
	if *asJSON && *quiet {
		fmt.Fprintln(stderr, "airlock template ls: -q and --json: choose one; usage: airlock template ls [flags]")
		return 2
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "ls", err)
	}
	imgs, err := s.Images()
	if err != nil {
		return fail(stderr, "ls", err)
	}
	if *quiet {
		sort.Slice(imgs, func(i, j int) bool { return imgs[i].Name < imgs[j].Name })
		fmt.Fprintln(stdout, "host")
		for _, img := range imgs {
			fmt.Fprintln(stdout, cli.Esc(img.Name))
		}
		return 0
	}
	if *asJSON {
		if imgs == nil {
			imgs = []*template.Image{}
		}
		if err := cli.PrintJSON(stdout, imgs); err != nil {
			return fail(stderr, "ls", err)
		}
		return 0
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].Name < imgs[j].Name })
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tKIND\tLAYERS\tSOURCE\tCREATED")
	fmt.Fprintln(tw, "host\t-\tbuiltin\t-\thost /usr\t-")
	now := time.Now()
	for _, img := range imgs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", cli.Esc(img.Name), img.Version, img.Kind, len(img.Layers), cli.Esc(img.Source), cli.Ago(img.Created, now))
	}
	tw.Flush()
	return 0
}

func cmdInspect(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: airlock template inspect [flags] NAME\n\nPrints an imported template's record as JSON.\n\nflags:\n"
	fs, c := flags("inspect", usage, stderr)
	pos, code, done := fs.parse(usage, args, stdout)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "airlock template inspect: want NAME\n")
		return 2
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	img, err := s.Image(pos[0])
	if err != nil {
		return fail(stderr, "inspect", err)
	}
	if err := cli.PrintJSON(stdout, img); err != nil {
		return fail(stderr, "inspect", err)
	}
	return 0
}

func cmdRm(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: airlock template rm [flags] NAME...\n\nRemoves imported templates. Sandboxes running from one keep running; its\nlayers go at the next 'airlock template gc' that finds them unused.\n\nflags:\n"
	fs, c := flags("rm", usage, stderr)
	pos, code, done := fs.parse(usage, args, stdout)
	if done {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintf(stderr, "airlock template rm: want NAME\n")
		return 2
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "rm", err)
	}
	for _, n := range pos {
		if err := s.RemoveImage(n); err != nil {
			return fail(stderr, "rm", err)
		}
		fmt.Fprintln(stdout, cli.Esc(n))
	}
	return 0
}

func cmdGC(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: airlock template gc [flags]\n\nRemoves the layers no template uses, except those a running sandbox or a\nsnapshot uses, and the remains of interrupted unpacks.\n\nflags:\n"
	fs, c := flags("gc", usage, stderr)
	if _, code, done := fs.parse(usage, args, stdout); done {
		return code
	}
	s, err := c.store()
	if err != nil {
		return fail(stderr, "gc", err)
	}
	// a snapshot of a sandbox on an image template keeps its layers
	keep, err := snapshots.RootDirs(filepath.Join(*c.dataDir, "snapshots"))
	if err != nil {
		return fail(stderr, "gc", err)
	}
	res, err := s.GC(keep...)
	if err != nil {
		return fail(stderr, "gc", err)
	}
	fmt.Fprintf(stdout, "removed %d layers (%s), %d interrupted unpacks; kept %d in use\n", len(res.Removed), cli.FmtSize(res.Bytes), res.Partial, len(res.Held))
	return 0
}
