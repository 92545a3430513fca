package native

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/hostileimage"
	"github.com/airlock-dev/airlock/internal/template/oci"
)

// The escape cases of an imported image (issue 21): a hostile image
// (hostileimage.Accepted: a setuid, setgid, all-capabilities copy of the
// probe, links out of the root to a host bait, a root image user with an
// LD_PRELOAD, ...) imported into a template store and a sandbox started
// from it; the attacks run in it, and the bait, next to the store on the
// host, stays unread and unchanged.
func TestEscapeImportedImage(t *testing.T) {
	needRuntime(t)
	t.Run("image", func(t *testing.T) { escapeImage(t, false) })
	t.Run("etc-link", func(t *testing.T) { escapeImage(t, true) })
}

func escapeImage(t *testing.T, etcLink bool) {
	tpl, bait := importHostile(t, etcLink)
	sb := escSandbox(t, func(s *runtime.Spec) {
		s.RootFS, s.Lowers, s.Binds, s.Env = tpl.Dir, tpl.Lowers, nil, tpl.Env
	})
	probe := func(bin string, args ...string) (hostileimage.ProbeResult, error) {
		return imageProbe(t, sb, bin, args...)
	}
	for _, f := range hostileimage.Attack(probe, bait) {
		t.Errorf("ESCAPE: %s", f)
	}
	r, err := probe("/bin/probe", "read", "/proc/self/status")
	if err != nil || !strings.Contains(r.Detail, "NoNewPrivs:\t1") {
		t.Errorf("no_new_privs does not hold: %v %q", err, r.Detail)
	}
	if err := hostileimage.CheckLayers(append([]string{tpl.Dir}, tpl.Lowers...)); err != nil {
		t.Errorf("the store kept: %v", err)
	}
}

// importHostile imports hostileimage.Accepted (holding the probe) into a
// template store under testRoot, which the sandbox's root can traverse,
// with the bait next to it.
func importHostile(t *testing.T, etcLink bool) (*template.Template, *hostileimage.Bait) {
	t.Helper()
	if probeBin == "" {
		t.Skip("probe binary could not be built")
	}
	data, err := os.ReadFile(probeBin)
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(testRoot, "img-"+randHex(t, 4))
	if err := os.Mkdir(top, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	bait, err := hostileimage.NewBait(top, "HOST-BAIT-"+randHex(t, 8))
	if err != nil {
		t.Fatal(err)
	}
	img, err := hostileimage.Accepted(data, bait, etcLink)
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
