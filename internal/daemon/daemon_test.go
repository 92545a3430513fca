package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/manager"
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
	if cfg.ApprovalWait != manager.DefaultApprovalWait || cfg.CheckpointEvents != audit.DefaultCheckpointEvents || cfg.CheckpointInterval != audit.DefaultCheckpointInterval {
		t.Errorf("waits and checkpoints: %v %d %v", cfg.ApprovalWait, cfg.CheckpointEvents, cfg.CheckpointInterval)
	}
	set := Config{DataDir: "/d", DB: "/x.db", AuditKeyFile: "/k", ApprovalWait: 7, CheckpointEvents: 3, CheckpointInterval: 9, Runsc: "/r"}
	got := set
	got.defaults()
	if got.DB != set.DB || got.AuditKeyFile != set.AuditKeyFile || got.ApprovalWait != 7 || got.CheckpointEvents != 3 || got.CheckpointInterval != 9 || got.Runsc != "/r" {
		t.Errorf("a set field was changed: %+v", got)
	}
}
