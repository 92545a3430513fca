// Package debian builds a template from a minimal Debian root made by
// mmdebstrap from the host's apt configuration (its sources and keys; no
// container registry involved), streamed straight into the template
// store as one layer, with airlock's thin layer on top. The packages
// dpkg installed, with versions, are the template's provenance.
package debian

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/layertar"
)

// Options are a build's.
type Options struct {
	Suite    string   // e.g. "bookworm"
	Packages []string // added to the variant's
	// Variant is mmdebstrap's (default "minbase").
	Variant string
	Limits  layertar.Limits
	// Stderr gets mmdebstrap's progress; nil: discarded (but its last
	// lines are in the error of a failed build).
	Stderr io.Writer
}

// Build runs mmdebstrap and stores its root as the template name.
func Build(ctx context.Context, s *template.Store, name string, opt Options) (*template.Image, error) {
	if err := template.ValidName(name); err != nil {
		return nil, err
	}
	if _, err := s.Image(name); err == nil {
		return nil, fmt.Errorf("template %q exists (remove it first: templates are immutable): %w", name, errdefs.ErrConflict)
	}
	if err := checkArgs(&opt); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return nil, fmt.Errorf("mmdebstrap is not installed (apt-get install mmdebstrap): %w", errdefs.ErrUnsupported)
	}
	if arch, err := exec.CommandContext(ctx, "dpkg", "--print-architecture").Output(); err != nil || strings.TrimSpace(string(arch)) != "amd64" {
		return nil, fmt.Errorf("the host's Debian architecture is %q; airlock runs amd64 only: %w", strings.TrimSpace(string(arch)), errdefs.ErrUnsupported)
	}
	release, err := s.BeginImport()
	if err != nil {
		return nil, err
	}
	defer release()
	args := []string{"--variant=" + opt.Variant, "--mode=root", "--format=tar",
		// no device nodes in a layer (package layertar refuses them); the
		// backends give every sandbox its own /dev
		"--skip=output/dev"}
	if len(opt.Packages) > 0 {
		args = append(args, "--include="+strings.Join(opt.Packages, ","))
	}
	// No mirror: mmdebstrap then takes the host's apt sources.
	args = append(args, opt.Suite, "-")
	cmd := exec.CommandContext(ctx, bin, args...)
	// SIGTERM, not SIGKILL: mmdebstrap then unmounts and removes its
	// chroot directory.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	var tail tailBuffer
	cmd.Stderr = &tail
	if opt.Stderr != nil {
		cmd.Stderr = io.MultiWriter(opt.Stderr, &tail)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	waited := false
	wait := func() error {
		waited = true
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("mmdebstrap: %v: %s", err, tail.String())
		}
		return nil
	}
	diffID, err := s.UnpackLayer("", out, opt.Limits, wait)
	if !waited {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	if err != nil {
		return nil, err
	}
	return finish(s, name, diffID, opt, bin)
}

func checkArgs(opt *Options) error {
	if opt.Variant == "" {
		opt.Variant = "minbase"
	}
	if !safeWord(opt.Suite) || !safeWord(opt.Variant) {
		return fmt.Errorf("suite %q / variant %q: letters, digits, '-', '.' only: %w", opt.Suite, opt.Variant, errdefs.ErrInvalid)
	}
	for _, p := range opt.Packages {
		// a Debian package name (and no option to mmdebstrap)
		if !safeWord(p) || strings.HasPrefix(p, "-") {
			return fmt.Errorf("package %q is no Debian package name: %w", p, errdefs.ErrInvalid)
		}
	}
	return nil
}

func safeWord(s string) bool {
	if s == "" || len(s) > 64 || strings.HasPrefix(s, "-") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '+') {
			return false
		}
	}
	return true
}

func finish(s *template.Store, name, diffID string, opt Options, bin string) (*template.Image, error) {
	al, err := s.AirlockLayer([]string{diffID})
	if err != nil {
		return nil, err
	}
	// read within the layer, never through a symlink it holds
	status, err := s.ReadLayerFile([]string{diffID}, "var/lib/dpkg/status", maxDpkgStatus)
	if err != nil {
		return nil, fmt.Errorf("dpkg status of the built root: %w", err)
	}
	pkgs, err := dpkgPackages(status)
	if err != nil {
		return nil, fmt.Errorf("dpkg status of the built root: %w", err)
	}
	ver, _ := exec.Command(bin, "--version").Output()
	img := &template.Image{Name: name, Kind: "debian", Source: "debian:" + opt.Suite, Digest: diffID, Platform: "linux/amd64",
		Layers: []template.ImageLayer{{DiffID: diffID, MediaType: "application/vnd.oci.image.layer.v1.tar"}}, AirlockLayer: al,
		Provenance: map[string]string{"suite": opt.Suite, "variant": opt.Variant, "packages": strings.Join(opt.Packages, ","),
			"apt_sources": "host", "builder": strings.TrimSpace(string(ver))},
		Packages: pkgs}
	if err := s.PutImage(img); err != nil {
		return nil, err
	}
	return img, nil
}

// maxDpkgStatus bounds the dpkg status file read (a full desktop's is a
// few MiB).
const maxDpkgStatus = 64 << 20

// dpkgPackages lists the installed packages of a dpkg status file as
// "name=version arch", sorted.
func dpkgPackages(data []byte) ([]string, error) {
	if data == nil {
		return nil, fmt.Errorf("no dpkg status file: %w", errdefs.ErrInvalid)
	}
	var out []string
	for _, para := range bytes.Split(data, []byte("\n\n")) {
		f := map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(para))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ": "); ok && !strings.HasPrefix(k, " ") {
				f[k] = v
			}
		}
		if f["Package"] != "" && strings.HasSuffix(f["Status"], " installed") {
			out = append(out, f["Package"]+"="+f["Version"]+" "+f["Architecture"])
		}
	}
	slices.Sort(out)
	return out, nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }
