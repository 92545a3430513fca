package main

import (
	"archive/tar"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/testroot"
)

// debianTar is a minbase bookworm root as a tar, made by mmdebstrap from
// the host's apt sources once per test binary (AIRLOCK_TEST_DEBIAN_TAR
// names one made earlier the same way, to spare the minutes).
// debianTarDir holds the tar debianTar made ("": none); testMain removes
// it (163 MB a run).
var debianTarDir string

var debianTar = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("AIRLOCK_TEST_DEBIAN_TAR"); p != "" {
		return p, nil
	}
	d, err := os.MkdirTemp("", "airlock-debian-tar-")
	if err != nil {
		return "", err
	}
	debianTarDir = d
	p := filepath.Join(d, "bookworm.tar")
	out, err := exec.Command("mmdebstrap", "--variant=minbase", "--mode=root", "--skip=output/dev", "--format=tar", "bookworm", p).CombinedOutput()
	if err != nil {
		return "", &exec.Error{Name: "mmdebstrap: " + string(out), Err: err}
	}
	return p, nil
})

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, x := range tools {
		if _, err := exec.LookPath(x); err != nil {
			testroot.Unavailable(t, x+" is not installed (apt-get install "+x+")")
		}
	}
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// umociLayout writes an OCI layout of the Debian root with umoci, with a
// config of its own (env, working dir, a root user, a label), and one
// more small layer when extra is set.
func umociLayout(t *testing.T, dir, rootTar string, extra map[string]string) {
	t.Helper()
	runTool(t, "umoci", "init", "--layout", dir)
	runTool(t, "umoci", "new", "--image", dir+":deb")
	runTool(t, "umoci", "raw", "add-layer", "--image", dir+":deb", rootTar)
	if extra != nil {
		p := filepath.Join(t.TempDir(), "extra.tar")
		f, _ := os.Create(p)
		tw := tar.NewWriter(f)
		for n, body := range extra {
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)})
			tw.Write([]byte(body))
		}
		tw.Close()
		f.Close()
		runTool(t, "umoci", "raw", "add-layer", "--image", dir+":deb", p)
	}
	runTool(t, "umoci", "config", "--image", dir+":deb", "--config.env", "IMAGE_MARK=from-umoci",
		"--config.workingdir", "/srv", "--config.user", "root", "--config.label", "org.example.os=debian")
}

func du(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// A real Debian image, written as an OCI layout by umoci and as a docker
// archive by skopeo, imported by the CLI; sandboxes start from it on the
// native backend (and gVisor when runsc is here) and run Debian's own
// tools as the sandbox user, with the image's env. A second image on
// the same base stores (almost) nothing more.
func TestTemplateImportDebianImage(t *testing.T) {
	e := newEnv(t)
	needTools(t, "mmdebstrap", "umoci", "skopeo")
	rootTar, err := debianTar()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	lay := filepath.Join(tmp, "layout")
	umociLayout(t, lay, rootTar, nil)
	dock := filepath.Join(tmp, "deb.docker.tar")
	runTool(t, "skopeo", "copy", "-q", "oci:"+lay+":deb", "docker-archive:"+dock+":example.test/deb:1")

	for _, c := range [][]string{{"deb-oci", lay}, {"deb-docker", dock}} {
		out, errOut, code := e.run("", "template", "import", c[0], c[1])
		if code != 0 || !strings.HasPrefix(out, c[0]+"@") {
			t.Fatalf("import %s: %d %q %q", c[1], code, out, errOut)
		}
	}
	layers := filepath.Join(e.data, "templates", "layers")
	base := du(t, layers)
	ents, _ := os.ReadDir(layers)
	if len(ents) != 2 { // the Debian layer (shared by both) and airlock's
		t.Errorf("layers: %d, want 2", len(ents))
	}
	out, _, code := e.run("", "template", "ls")
	if code != 0 || !strings.Contains(out, "deb-oci") || !strings.Contains(out, "deb-docker") {
		t.Errorf("ls: %q", out)
	}
	out, _, _ = e.run("", "template", "inspect", "deb-oci")
	if !strings.Contains(out, `"working_dir": "/srv"`) || !strings.Contains(out, `"org.example.os": "debian"`) || !strings.Contains(out, `"user": "root"`) {
		t.Errorf("inspect: %s", out)
	}

	script := `. /etc/os-release; echo $ID $VERSION_CODENAME; id -u; echo $IMAGE_MARK; perl -e 'print 6*7, "\n"'; dpkg-query -W -f='${Version}\n' dpkg; echo x > /workspace/f && cat /workspace/f; touch /usr/bin/x 2>/dev/null || echo ro`
	backends := []string{"native"}
	if _, err := exec.LookPath(cli.EnvOr("AIRLOCK_RUNSC", "runsc")); err == nil {
		backends = append(backends, "gvisor")
	} else if os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
		t.Fatal("runsc is not installed, but AIRLOCK_REQUIRE_GVISOR is set")
	}
	for _, be := range backends {
		for _, tpl := range []string{"deb-oci", "deb-docker"} {
			out, errOut, code := e.run("", "run", "--backend", be, "--template", tpl, "--", "/bin/sh", "-c", script)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			// a root image user still runs as uid 1000
			if code != 0 || len(lines) != 7 || lines[0] != "debian bookworm" || lines[1] != "1000" || lines[3] != "42" || lines[5] != "x" || lines[6] != "ro" {
				t.Errorf("%s on %s: %d %q %q", tpl, be, code, out, errOut)
			}
			if want := map[string]string{"deb-oci": "from-umoci", "deb-docker": "from-umoci"}[tpl]; len(lines) > 2 && lines[2] != want {
				t.Errorf("%s on %s: image env %q", tpl, be, lines[2])
			}
		}
	}

	// a second image: the same base and one small layer of its own
	lay2 := filepath.Join(tmp, "layout2")
	umociLayout(t, lay2, rootTar, map[string]string{"usr/local/bin/team-tool": "#!/bin/sh\necho team tool\n"})
	if out, errOut, code := e.run("", "template", "import", "deb-team", lay2); code != 0 {
		t.Fatalf("import 2: %d %q %q", code, out, errOut)
	}
	more := du(t, layers) - base
	t.Logf("second template on the same base: %d more bytes (%.3f%% of the base's %d)", more, 100*float64(more)/float64(base), base)
	if float64(more) > 0.01*float64(base) {
		t.Errorf("second template stores %d more bytes, over 1%% of %d", more, base)
	}
	out, errOut, code := e.run("", "run", "--template", "deb-team", "--", "/bin/sh", "-c", "team-tool")
	if code != 0 || out != "team tool\n" {
		t.Errorf("deb-team: %d %q %q", code, out, errOut)
	}

	// a daemon's sandbox on deb-team (by name, as tasks and the E2B
	// door name it); rm + gc while it runs: its layer is held, and the
	// shared base stays while another template uses it
	d := e.startDaemon(t)
	sock := "--socket=" + d.sock
	// a task on the imported template, by name: its repository in
	// /workspace, its tests with Debian's perl, its diff
	repo := gitRepoOf(t, map[string]string{"sum.pl": "print 1+1, \"\\n\";\n"})
	out, errOut, code = e.run("", "task", "start", sock, "--repo", repo, "--template", "deb-oci", "--test", "perl sum.pl | grep -x 3")
	taskID := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("task start on deb-oci: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("print 1+2, \"\\n\";\n", "task", "exec", sock, "--stdin", taskID, "--", "/bin/sh", "-c", "cat > sum.pl; . /etc/os-release; test $VERSION_CODENAME = bookworm"); code != 0 {
		t.Fatalf("task exec: %d %q", code, errOut)
	}
	if out, errOut, code := e.run("", "task", "test", sock, taskID); code != 0 {
		t.Errorf("task test: %d %q %q", code, out, errOut)
	}
	if diff, _, code := e.run("", "task", "diff", sock, taskID); code != 0 || !strings.Contains(diff, "+print 1+2") {
		t.Errorf("task diff: %d %q", code, diff)
	}
	if _, errOut, code := e.run("", "task", "finish", sock, taskID); code != 0 {
		t.Errorf("task finish: %d %q", code, errOut)
	}
	// the same import over the API (the local socket)
	if code, body := d.post(t, "/v1/templates", `{"name":"deb-api","source":"`+lay+`"}`); code != 201 || !strings.Contains(string(body), `"digest":"sha256:`) {
		t.Errorf("POST /v1/templates: %d %s", code, body)
	}
	if out, _, code := e.run("", "sandbox", "templates", sock); code != 0 || !strings.Contains(out, "deb-api") || !strings.Contains(out, "deb-oci") {
		t.Errorf("sandbox templates: %d %q", code, out)
	}
	out, errOut, code = e.run("", "sandbox", "create", sock, "--template", "deb-team")
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("sandbox create: %d %q", code, errOut)
	}
	if _, errOut, code := e.run("", "template", "rm", "deb-team"); code != 0 {
		t.Fatalf("rm: %q", errOut)
	}
	out, _, code = e.run("", "template", "gc")
	if code != 0 || !strings.HasPrefix(out, "removed 0 layers") || !strings.Contains(out, "kept 1 in use") {
		t.Errorf("gc with the sandbox running: %d %q", code, out)
	}
	if out, errOut, code := e.run("", "sandbox", "exec", sock, id, "--", "team-tool"); code != 0 || out != "team tool\n" {
		t.Errorf("exec after gc: %d %q %q", code, out, errOut)
	}
	// a snapshot of it keeps the image's layers after the sandbox ends
	if out, errOut, code := e.run("", "sandbox", "snapshot", sock, id, "team-snap"); code != 0 {
		t.Fatalf("snapshot: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "sandbox", "rm", sock, id); code != 0 {
		t.Fatalf("sandbox rm: %q", errOut)
	}
	if out, _, code = e.run("", "template", "gc"); code != 0 || !strings.HasPrefix(out, "removed 0 layers") {
		t.Errorf("gc with a snapshot on the layers: %d %q", code, out)
	}
	out, errOut, code = e.run("", "sandbox", "create", sock, "--template", "team-snap")
	id2 := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("create from the snapshot: %d %q", code, errOut)
	}
	if out, errOut, code := e.run("", "sandbox", "exec", sock, id2, "--", "team-tool"); code != 0 || out != "team tool\n" {
		t.Errorf("exec on the snapshot: %d %q %q", code, out, errOut)
	}
	e.run("", "sandbox", "rm", sock, id2)
	if err := os.RemoveAll(filepath.Join(e.data, "snapshots", "team-snap")); err != nil {
		t.Fatal(err)
	}
	out, _, code = e.run("", "template", "gc")
	if code != 0 || !strings.HasPrefix(out, "removed 1 layers") {
		t.Errorf("gc after the sandbox and its snapshot went: %d %q", code, out)
	}
	if _, _, code := e.run("", "run", "--template", "deb-oci", "--", "/bin/true"); code != 0 {
		t.Errorf("deb-oci after gc: %d", code)
	}
	if _, errOut, code := e.run("", "run", "--template", "deb-team", "--", "/bin/true"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("removed template ran: %d %q", code, errOut)
	}
}

// The peer in the same run: importing the Debian image from an OCI layout
// against `skopeo copy` to a layout followed by `umoci unpack` of it
// (target: <= 1.3x). Medians of two runs each.
func TestTemplateImportBenchVsSkopeoUmoci(t *testing.T) {
	e := newEnv(t)
	needTools(t, "mmdebstrap", "umoci", "skopeo")
	rootTar, err := debianTar()
	if err != nil {
		t.Fatal(err)
	}
	lay := filepath.Join(t.TempDir(), "layout")
	umociLayout(t, lay, rootTar, nil)
	var ours, peer []time.Duration
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		t0 := time.Now()
		runTool(t, "skopeo", "copy", "-q", "oci:"+lay+":deb", "oci:"+filepath.Join(dir, "copy")+":deb")
		runTool(t, "umoci", "unpack", "--image", filepath.Join(dir, "copy")+":deb", filepath.Join(dir, "bundle"))
		peer = append(peer, time.Since(t0))
		os.RemoveAll(dir)

		name := "bench" + string(rune('a'+i))
		t0 = time.Now()
		if out, errOut, code := e.run("", "template", "import", "--quiet", name, lay); code != 0 {
			t.Fatalf("import: %d %q %q", code, out, errOut)
		}
		ours = append(ours, time.Since(t0))
		// the next run unpacks anew, as the peer does
		e.run("", "template", "rm", name)
		e.run("", "template", "gc")
	}
	med := func(d []time.Duration) time.Duration { slices.Sort(d); return (d[(len(d)-1)/2] + d[len(d)/2]) / 2 }
	// sandbox create (a one-shot run of /bin/true) from the image
	// template against from host, alternated (target: within 10%)
	if out, errOut, code := e.run("", "template", "import", "--quiet", "bench", lay); code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	var fromImage, fromHost []time.Duration
	for i := 0; i < 7; i++ {
		for _, c := range []struct {
			tpl string
			d   *[]time.Duration
		}{{"bench", &fromImage}, {"host", &fromHost}} {
			t0 := time.Now()
			if _, errOut, code := e.run("", "run", "--template", c.tpl, "--", "/bin/true"); code != 0 {
				t.Fatalf("run on %s: %d %q", c.tpl, code, errOut)
			}
			if i > 0 { // the first of each warms the page cache
				*c.d = append(*c.d, time.Since(t0))
			}
		}
	}
	ci, ch := med(fromImage), med(fromHost)
	t.Logf("one-shot sandbox from the image template %s, from host %s: %.2fx", ci.Round(time.Millisecond), ch.Round(time.Millisecond), float64(ci)/float64(ch))
	// The targets are a benchmark's, kept to a run that asks for them
	// (AIRLOCK_BENCH=1, as make bench's API benchmarks): under CI's load
	// a ratio of two medians of six is noise, not a regression.
	if float64(ci) > 1.1*float64(ch) && os.Getenv("AIRLOCK_BENCH") != "" {
		t.Errorf("create from the image template %s is over 1.1x the host template's %s", ci, ch)
	}
	o, p := med(ours), med(peer)
	t.Logf("import of a Debian image (OCI layout of %d MB): airlock %s, skopeo copy + umoci unpack %s: %.2fx (runs: %v vs %v)",
		du(t, filepath.Dir(lay))>>20, o.Round(time.Millisecond), p.Round(time.Millisecond), float64(o)/float64(p), ours, peer)
	if float64(o) > 1.3*float64(p) && os.Getenv("AIRLOCK_BENCH") != "" {
		t.Errorf("import %s is over 1.3x the peer's %s", o, p)
	}
}

// airlock template debian: a real minbase root from the host's apt
// sources with a package added, its packages recorded with versions, a
// sandbox started from it; a package or suite that could be an option
// to mmdebstrap is refused before anything runs.
func TestTemplateDebianBuild(t *testing.T) {
	e := newEnv(t)
	needTools(t, "mmdebstrap")
	for _, bad := range [][]string{{"--packages", "--hook-dir=/x"}, {"--suite", "../x"}, {"--packages", "a b"}} {
		if _, errOut, code := e.run("", append([]string{"template", "debian", "bad"}, bad...)...); code != 1 || !strings.Contains(errOut, "invalid") {
			t.Errorf("%v: %d %q", bad, code, errOut)
		}
	}
	out, errOut, code := e.run("", "template", "debian", "deb", "--suite", "bookworm", "--packages", "ca-certificates")
	if code != 0 || !strings.HasPrefix(out, "deb@") {
		t.Fatalf("template debian: %d %q %q", code, out, errOut)
	}
	out, _, _ = e.run("", "template", "inspect", "deb")
	for _, want := range []string{`"kind": "debian"`, `"suite": "bookworm"`, `"ca-certificates=`, `"dpkg=`} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %s: %s", want, out[:min(len(out), 2000)])
		}
	}
	out, errOut, code = e.run("", "run", "--template", "deb", "--", "/bin/sh", "-c", "dpkg-query -W -f='${Status}\\n' ca-certificates; id -un")
	if code != 0 || out != "install ok installed\nsandbox\n" {
		t.Errorf("run: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := e.run("", "template", "debian", "deb"); code != 1 || !strings.Contains(errOut, "exists") {
		t.Errorf("second build of a name: %d %q", code, errOut)
	}
}
