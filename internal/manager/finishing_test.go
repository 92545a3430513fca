package manager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/hook"
	"github.com/airlock-dev/airlock/internal/sandbox"
)

// stall holds a command in the exec pipeline, after its admission and
// before its start, until released: the window a task's finish may begin in.
type stall struct {
	core    hook.Core
	entered chan struct{}
	release chan struct{}
}

func (s *stall) Name() string             { return "stall" }
func (s *stall) Attach(c hook.Core) error { s.core = c; return nil }
func (s *stall) BeforeExec(_ context.Context, x *hook.ExecCall) error {
	if len(x.Argv) > 1 && x.Argv[1] == "stalled" {
		close(s.entered)
		<-s.release
	}
	return nil
}

// Attack: a command admitted just before its task's finish begins, slow
// to reach its start (a busy daemon), would run while the finish's tests
// run and before its diff is taken: a backdoor written after the sweep.
// It must not start once the sandbox is Finishing.
func TestACommandAdmittedBeforeAFinishDoesNotStartDuringIt(t *testing.T) {
	s := &stall{entered: make(chan struct{}), release: make(chan struct{})}
	m, _ := fakeTierManagerWith(t, func(c *Config) { c.Modules = []hook.Module{s} })
	ctx := context.Background()
	sb, err := m.Create(ctx, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := m.Exec(ctx, sb.ID, sandbox.ExecRequest{Argv: []string{"touch", "stalled"}}, nil, nil, nil)
		done <- err
	}()
	<-s.entered
	end, err := s.core.BeginFinishing(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	close(s.release)
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled command did not end")
	}
	if !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("the command admitted before the finish: %v, want a conflict (finishing)", err)
	}
	files, _ := s.core.Files(ctx, sb.ID)
	if files != nil {
		if _, err := files.Stat(ctx, "/workspace/stalled"); err == nil {
			t.Fatal("the command ran while its sandbox was finishing")
		}
	}
}
