package daemon

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/approvals"
	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/testroot"
)

// TestNewRefusesASecondDaemon: with the state dir's lock held by another
// daemon, New returns the error serve has always printed, opens nothing
// else, and does not panic releasing what it had opened.
func TestNewRefusesASecondDaemon(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o711); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(state, "daemon.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	d, err := New(context.Background(), Config{Socket: filepath.Join(dir, "s.sock"), StateDir: state, DataDir: filepath.Join(dir, "data")})
	if err == nil {
		_ = d.Close()
		t.Fatal("a second daemon started on a locked state dir")
	}
	if want := "another airlock daemon is running with state dir " + state + " (stop it first)"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if d != nil {
		t.Errorf("New returned a daemon with its error")
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("the data dir was made before the lock was taken: %v", err)
	}
}

// TestConfigDefaults: a zero field gets the default serve's flags have.
func TestConfigDefaults(t *testing.T) {
	cfg := Config{DataDir: "/d"}
	cfg.defaults()
	if cfg.DB != "/d/airlock.db" || cfg.AuditKeyFile != "/d/audit.key" || cfg.Runsc != "runsc" || cfg.Log == nil {
		t.Errorf("paths and runsc: %+v", cfg)
	}
	if cfg.ApprovalWait != approvals.DefaultWait || cfg.CheckpointEvents != audit.DefaultCheckpointEvents || cfg.CheckpointInterval != audit.DefaultCheckpointInterval {
		t.Errorf("waits and checkpoints: %v %d %v", cfg.ApprovalWait, cfg.CheckpointEvents, cfg.CheckpointInterval)
	}
	set := Config{DataDir: "/d", DB: "/x.db", AuditKeyFile: "/k", ApprovalWait: 7, CheckpointEvents: 3, CheckpointInterval: 9, Runsc: "/r"}
	got := set
	got.defaults()
	if got.DB != set.DB || got.AuditKeyFile != set.AuditKeyFile || got.ApprovalWait != 7 || got.CheckpointEvents != 3 || got.CheckpointInterval != 9 || got.Runsc != "/r" {
		t.Errorf("a set field was changed: %+v", got)
	}
}

// TestABusyDoorOpensNone: when one listener cannot open, New fails
// before serving on any, so nothing answered and nothing said it had
// started. The socket used to answer (health included) before the TCP
// listeners opened: a client that waited for the socket could find the
// TCP door shut, and a failed start left a daemon.start record.
func TestABusyDoorOpensNone(t *testing.T) {
	testroot.Need(t, "the native backend")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // sandbox uids traverse the state dir
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	cfg := Config{Socket: filepath.Join(dir, "s.sock"), StateDir: filepath.Join(dir, "state"), DataDir: filepath.Join(dir, "data"),
		Listen: freeAddr, E2BListen: busy.Addr().String(), NoEgress: true, Log: &log}
	d, err := New(context.Background(), cfg)
	if err == nil {
		_ = d.Close()
		t.Fatal("a daemon started with its E2B port taken")
	}
	if !strings.Contains(err.Error(), "--e2b-listen") {
		t.Errorf("err = %v", err)
	}
	if strings.Contains(log.String(), "serving on") {
		t.Errorf("the log says it served: %s", log.String())
	}
	if c, err := net.Dial("tcp", freeAddr); err == nil {
		c.Close()
		t.Errorf("the --listen port is left open")
	}
	s, err := store.Open(filepath.Join(dir, "data", "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.AuditEvents(context.Background(), store.AuditFilter{Kind: "daemon.start"})
	if err != nil || len(evs) != 0 {
		t.Errorf("daemon.start records of a daemon that never served: %d %v", len(evs), err)
	}
}
