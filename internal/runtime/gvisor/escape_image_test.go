package gvisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/hostileimage"
	"github.com/airlock-dev/airlock/internal/template/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The native suite's imported-image escape cases (escape_image_test.go
// there) under gVisor: the hostile image's setuid, setgid,
// all-capabilities probe and root image user gain nothing, its links
// out of the root reach no host bait. gVisor's own no_new_privs line in
// /proc/self/status is not checked: the privileges themselves are.
func TestEscapeImportedImage(t *testing.T) {
	needGVisor(t)
	for _, etcLink := range []bool{false, true} {
		t.Run(fmt.Sprintf("etc-link=%v", etcLink), func(t *testing.T) {
			tpl, bait := importHostile(t, etcLink)
			sb := newSandbox(t, func(s *runtime.Spec) {
				s.RootFS, s.Lowers, s.Binds, s.Env = tpl.Dir, tpl.Lowers, nil, tpl.Env
			})
			probe := func(bin string, args ...string) (hostileimage.ProbeResult, error) {
				return imageProbe(t, sb, bin, args...)
			}
			for _, f := range hostileimage.Attack(probe, bait) {
				t.Errorf("ESCAPE: %s", f)
			}
			if err := hostileimage.CheckLayers(append([]string{tpl.Dir}, tpl.Lowers...)); err != nil {
				t.Errorf("the store kept: %v", err)
			}
		})
	}
}

// importHostile imports hostileimage.Accepted (holding the probe) into a
// template store under testRoot, with the bait next to it.
func importHostile(t *testing.T, etcLink bool) (*template.Template, *hostileimage.Bait) {
	t.Helper()
	if probeBin == "" {
		t.Fatal("the probe binary could not be built")
	}
	data, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	top := filepath.Join(testRoot, "img-"+hex.EncodeToString(rb[:]))
	if err := os.Mkdir(top, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	_, _ = rand.Read(rb[:])
	bait, err := hostileimage.NewBait(top, "HOST-BAIT-"+hex.EncodeToString(rb[:]))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	libs, err := hostileimage.AgentLibs(exe)
	if err != nil {
		t.Fatal(err)
	}
	var below []v1.Layer
	if libs != nil {
		below = append(below, libs)
	}
	img, err := hostileimage.Accepted(data, bait, etcLink, below...)
	if err != nil {
		t.Fatal(err)
	}
	lay := filepath.Join(t.TempDir(), "layout")
	if err := hostileimage.WriteLayout(lay, img); err != nil {
		t.Fatal(err)
	}
	st, err := template.Open(filepath.Join(top, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := oci.Import(ctx, st, "hostile", lay, oci.Options{}); err != nil {
		t.Fatalf("import the hostile image: %v", err)
	}
	tpl, err := st.Get("hostile")
	if err != nil {
		t.Fatal(err)
	}
	return tpl, bait
}

// imageProbe runs the probe at bin in sb and parses its JSON line.
func imageProbe(t *testing.T, sb runtime.Sandbox, bin string, args ...string) (hostileimage.ProbeResult, error) {
	res := run(t, sb, runtime.ExecRequest{Argv: append([]string{bin}, args...)})
	var pr hostileimage.ProbeResult
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &pr) == nil {
			if testing.Verbose() {
				t.Logf("%s %v: ok=%v errno=%s %.200q", bin, args, pr.OK, pr.Errno, pr.Detail)
			}
			return pr, nil
		}
	}
	return pr, fmt.Errorf("%s %v printed no result: status %+v stderr %q", bin, args, res.Status, res.Stderr)
}

// A dynamically linked agent (airlock built with cgo) would be loaded by
// an image template's own loader, running the image's code as the agent:
// gVisor refuses such a sandbox (unsupported), on any template with image
// layers, before anything is made; a static agent starts.
func TestDynamicAgentRefusedOnImages(t *testing.T) {
	b := newTestBackend(t)
	b.testTrustImageLoader = false
	b.agentLoader = "/lib64/ld-linux-x86-64.so.2"
	tpl := hostTemplate(t)
	spec := runtime.Spec{ID: "dynagent0001", RootFS: tpl.Dir, Lowers: []string{tpl.Dir}}
	_, err := b.Create(context.Background(), spec)
	if !errors.Is(err, errdefs.ErrUnsupported) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("dynamic agent on an image: %v", err)
	}
	if c, err := b.Census(); err != nil || c.StateDirs != 0 {
		t.Errorf("census after the refusal: %+v %v", c, err)
	}
	if got, err := elfInterp(probeBin); err != nil || got != "" {
		t.Errorf("the static probe's interpreter: %q %v", got, err)
	}
	if exe, _ := os.Executable(); exe != "" {
		got, err := elfInterp(exe)
		t.Logf("this test binary's interpreter: %q %v", got, err)
	}
}
