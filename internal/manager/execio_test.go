package manager

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/sandbox"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A background command with an open stdin: typed input reaches it, is
// recorded, and closing stdin ends it; an ended command takes no signal,
// input or resize (conflict), and bad arguments are invalid.
func TestFakeTierExecIO(t *testing.T) {
	m, _ := fakeTierManager(t)
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	execID, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"cat"}, Background: true, OpenStdin: true}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Running(sb.ID, execID).Resize(ctx, 24, 80); err == nil {
		t.Error("a command without a terminal was resized")
	}
	if err := m.Running(sb.ID, execID).Input(ctx, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if err := m.Running(sb.ID, execID).Input(ctx, []byte("no line end")); err != nil {
		t.Fatal(err)
	}
	if err := m.Running(sb.ID, execID).CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := getExec(m, ctx, sb.ID, execID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Ended != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("cat did not end after its stdin closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := output(m, ctx, sb.ID, execID, "stdout")
	if err != nil || string(out) != "hello\nno line end" {
		t.Errorf("output %q, %v", out, err)
	}
	for name, err := range map[string]error{
		"signal": m.Running(sb.ID, execID).Signal(ctx, syscall.SIGTERM),
		"input":  m.Running(sb.ID, execID).Input(ctx, []byte("x")),
		"close":  m.Running(sb.ID, execID).CloseStdin(ctx),
		"resize": m.Running(sb.ID, execID).Resize(ctx, 24, 80),
	} {
		if !errors.Is(err, errdefs.ErrConflict) {
			t.Errorf("%s of an ended command: %v", name, err)
		}
	}
	if err := m.Running(sb.ID, execID).Signal(ctx, 0); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("signal 0: %v", err)
	}
	if err := m.Running(sb.ID, execID).Resize(ctx, 0, 80); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("0 rows: %v", err)
	}
	if err := m.Running(sb.ID, "e-nonexistent").Signal(ctx, syscall.SIGTERM); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("signal of no exec: %v", err)
	}
}

// A stream with no output is not written to the store, and reads as
// empty, as a stored empty one did; the other stream is stored.
func TestFakeTierQuietStreamReadsEmpty(t *testing.T) {
	m, _ := fakeTierManager(t)
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	execID, st, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"sh", "-c", "echo only-out"}}, nil, nil, nil)
	if err != nil || st.Code != 0 {
		t.Fatalf("exec: %+v %v", st, err)
	}
	if out, err := output(m, ctx, sb.ID, execID, "stdout"); err != nil || string(out) != "only-out\n" {
		t.Errorf("stdout %q, %v", out, err)
	}
	if out, err := output(m, ctx, sb.ID, execID, "stderr"); err != nil || out == nil || len(out) != 0 {
		t.Errorf("stderr %q (nil: %v), %v: want empty", out, out == nil, err)
	}
}
