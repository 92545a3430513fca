package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/runtime/native"
)

// The figures of the Debian 12 review host.
var reviewHost = hostTables{PidMax: 32768, ThreadsMax: 192724, FileMax: 2466097, NrOpen: 1048576, PtyMax: 4096, PtyReserve: 1024}

func noneExplicit(string) bool { return false }

// The attack of the review: with the old caps one sandbox could ask for
// pid_max processes and 256 sandboxes of the default could hold more
// tasks than the host has, and one sandbox process's nofile times the
// sandboxes exceeded fs.file-max. The derived caps leave the host its
// reserve whatever the sandboxes ask.
func TestFitCapsLeavesTheHostItsTables(t *testing.T) {
	c, msg, err := fitCaps(defaultCaps(), reviewHost, noneExplicit)
	if err != nil {
		t.Fatal(err)
	}
	if c.Host.Pids != 24576 || c.Host.Ptys != 2304 {
		t.Errorf("host budget %+v, want 24576 tasks (pid_max less a quarter), 2304 terminals ((4096-1024) less a quarter)", c.Host)
	}
	if native.HostTasks(c.Limits.Pids) > c.Host.Pids || c.Limits.Pids > c.Host.Pids/4 {
		t.Errorf("a sandbox may ask for %d pids: more than a quarter of the %d tasks sandboxes share", c.Limits.Pids, c.Host.Pids)
	}
	if files := int64(c.Limits.NoFile) * int64(c.Sandboxes); files > hostShare(reviewHost.FileMax) || int64(c.Limits.NoFile) > reviewHost.NrOpen {
		t.Errorf("%d sandboxes of nofile %d hold %d files: more than fs.file-max %d less its reserve", c.Sandboxes, c.Limits.NoFile, files, reviewHost.FileMax)
	}
	if c.Limits.Ptys <= 0 || c.Limits.Ptys > c.Host.Ptys {
		t.Errorf("per-sandbox pty cap %d outside (0, %d]", c.Limits.Ptys, c.Host.Ptys)
	}
	for _, want := range []string{"24576 tasks", "kernel.pid_max 32768", "fs.file-max 2466097"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
}

// An explicit flag above what the host can give is refused, naming the
// host's table; one within it is kept.
func TestFitCapsRefusesExplicitFlagsBeyondTheHost(t *testing.T) {
	for _, tc := range []struct {
		flag string
		set  func(c *manager.Caps)
		want string
	}{
		{"max-pids", func(c *manager.Caps) { c.Limits.Pids = 32768 }, "kernel.pid_max"},
		{"max-nofile", func(c *manager.Caps) { c.Limits.NoFile = 65536 }, "fs.file-max"},
		{"max-ptys", func(c *manager.Caps) { c.Limits.Ptys = 3000 }, "kernel.pty.max"},
	} {
		c := defaultCaps()
		tc.set(&c)
		_, _, err := fitCaps(c, reviewHost, func(f string) bool { return f == tc.flag })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--"+tc.flag) {
			t.Errorf("--%s beyond the host: %v, want an error naming --%s and %s", tc.flag, err, tc.flag, tc.want)
		}
	}
	c := defaultCaps()
	c.Limits.Pids, c.Limits.NoFile, c.Limits.Ptys = 1000, 2048, 64
	got, _, err := fitCaps(c, reviewHost, func(string) bool { return true })
	if err != nil || got.Limits.Pids != 1000 || got.Limits.NoFile != 2048 || got.Limits.Ptys != 64 {
		t.Errorf("flags within the host: %+v %v, want them kept", got.Limits, err)
	}
}

func TestReadHostTables(t *testing.T) {
	dir := t.TempDir()
	for p, v := range map[string]string{
		"kernel/pid_max": "4194304\n", "kernel/threads-max": "192724\n", "fs/file-max": "18446744073709551615\n",
		"fs/nr_open": "1048576\n", "kernel/pty/max": "4096\n", "kernel/pty/reserve": "1024\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := readHostTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.PidMax != 4194304 || h.ThreadsMax != 192724 || h.FileMax != 1<<62 || h.PtyReserve != 1024 {
		t.Errorf("tables %+v", h)
	}
	// threads-max bounds tasks when it is the smaller
	c, _, err := fitCaps(defaultCaps(), h, noneExplicit)
	if err != nil || c.Host.Pids != hostShare(192724) {
		t.Errorf("task budget %d (%v), want threads-max's share %d", c.Host.Pids, err, hostShare(192724))
	}
	if err := os.Remove(filepath.Join(dir, "fs/nr_open")); err != nil {
		t.Fatal(err)
	}
	if _, err := readHostTables(dir); err == nil {
		t.Error("a missing table: no error")
	}
}

// Against a real daemon: sandboxes that together would take more of the
// host's tasks than it leaves them are refused, with a limit error that
// names the table, while the first ones run; one destroyed makes room.
func TestServeRefusesSandboxesBeyondTheHostsTasks(t *testing.T) {
	h, err := readHostTables("/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	budget := hostShare(min(h.PidMax, h.ThreadsMax))
	// two of these fit in the budget, a third does not
	pids := budget/2 - native.HostTasks(0)
	e := newEnv(t)
	d := e.startDaemon(t, "--max-pids", strconv.FormatInt(pids, 10))
	if !strings.Contains(d.log.String(), fmt.Sprintf("%d tasks", budget)) {
		t.Errorf("the daemon does not say what it derived: %s", d.log)
	}
	body := fmt.Sprintf(`{"limits": {"pids": %d}}`, pids)
	var ids []string
	for i := range 2 {
		code, b := d.post(t, "/v1/sandboxes", body)
		if code != http.StatusCreated {
			t.Fatalf("sandbox %d of %d pids: %d %s", i, pids, code, b)
		}
		var sb struct{ ID string }
		_ = json.Unmarshal(b, &sb)
		ids = append(ids, sb.ID)
	}
	code, b := d.post(t, "/v1/sandboxes", body)
	if code != http.StatusTooManyRequests || !strings.Contains(string(b), "limit_exceeded") || !strings.Contains(string(b), "kernel.pid_max") {
		t.Fatalf("a third sandbox: %d %s, want 429 limit_exceeded naming kernel.pid_max", code, b)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://airlock/v1/sandboxes/"+ids[0], nil)
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, b := d.post(t, "/v1/sandboxes", body); code != http.StatusCreated {
		t.Errorf("after one was destroyed: %d %s", code, b)
	}
}
