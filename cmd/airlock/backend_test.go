package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/cli"
)

// airlock run --backend gvisor: the same command behind gVisor, and a
// clear error (how to install runsc) where runsc is missing, never a
// fallback to the native backend.
func TestRunBackendGVisor(t *testing.T) {
	e := newEnv(t)
	out, errOut, code := e.run("", "run", "--backend", "gvisor", "--runsc", "/nonexistent/runsc", "--", "/bin/true")
	if code != 125 || !strings.Contains(errOut, "apt-get install -y runsc") || out != "" {
		t.Errorf("missing runsc: %q %q code %d, want 125 and how to install it", out, errOut, code)
	}
	if _, errOut, code := e.run("", "run", "--backend", "bogus", "--", "/bin/true"); code != 2 || !strings.Contains(errOut, "native or gvisor") {
		t.Errorf("unknown backend: %q code %d", errOut, code)
	}
	runsc := cli.EnvOr("AIRLOCK_RUNSC", "runsc")
	if _, err := exec.LookPath(runsc); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
			t.Fatalf("runsc is not installed, but AIRLOCK_REQUIRE_GVISOR is set")
		}
		t.Skip("runsc is not installed (apt-get install -y runsc)")
	}
	out, errOut, code = e.run("piped\n", "run", "--backend", "gvisor", "--", "/bin/sh", "-c", "cat; echo hi; id -u; cat /proc/1/cmdline | tr '\\0' ' '; exit 7")
	if code != 7 || !strings.HasPrefix(out, "piped\nhi\n1000\n/.airlock/airlock-agent") {
		t.Errorf("got %q %q code %d", out, errOut, code)
	}
}

// serve --template-backend: a template's sandboxes run on its backend
// unless the request names another; the choice is in every sandbox's
// details.
func TestTemplateBackend(t *testing.T) {
	runsc := cli.EnvOr("AIRLOCK_RUNSC", "runsc")
	if _, err := exec.LookPath(runsc); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_GVISOR") != "" {
			t.Fatalf("runsc is not installed, but AIRLOCK_REQUIRE_GVISOR is set")
		}
		t.Skip("runsc is not installed (apt-get install -y runsc)")
	}
	e := newEnv(t)
	d := e.startDaemon(t, "--template-backend", "host=gvisor")
	for _, c := range []struct{ body, want string }{
		{`{}`, `"backend":"gvisor"`},
		{`{"backend":"native"}`, `"backend":"native"`},
	} {
		code, body := d.post(t, "/v1/sandboxes", c.body)
		if code != 201 || !strings.Contains(string(body), c.want) {
			t.Errorf("create %s: %d %s, want %s", c.body, code, body, c.want)
			continue
		}
		// Either backend binds the sandbox's trust bundle (the host's
		// roots and its egress CA) over the template's, read-only.
		var sb struct{ ID string }
		_ = json.Unmarshal(body, &sb)
		out, errOut, code2 := e.run("", "sandbox", "exec", "--socket", d.sock, sb.ID, "--", "/bin/sh", "-c", "grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt; cat /dev/null 2>/dev/null >> /etc/ssl/certs/ca-certificates.crt; echo rc=$?")
		host, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
		if want := fmt.Sprintf("%d\nrc=", strings.Count(string(host), "BEGIN CERTIFICATE")+1); code2 != 0 || !strings.HasPrefix(out, want) || strings.HasSuffix(out, "rc=0\n") {
			t.Errorf("%s trust bundle: %q %q, want %s and a refused write", c.want, out, errOut, want)
		}
		// and the template's PATH finds the host's Go toolchain.
		if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
			if out, errOut, _ := e.run("", "sandbox", "exec", "--socket", d.sock, sb.ID, "--", "/bin/sh", "-c", "command -v go"); out != "/usr/local/go/bin/go\n" {
				t.Errorf("%s: go on the PATH: %q %q", c.want, out, errOut)
			}
		}
	}
	if _, errOut, code := e.run("", "serve", "--socket", d.sock+"2", "--template-backend", "host"); code != 2 || !strings.Contains(errOut, "TEMPLATE=native") {
		t.Errorf("bad --template-backend: %d %q", code, errOut)
	}
}
