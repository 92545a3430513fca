package tasks

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// A task sets its sandbox's environment (issue 19: tasks could not, so
// a test command needing GOFLAGS or a token variable had no way to get
// it); the test command sees it too. A malformed variable is refused
// before anything starts.
func TestTaskEnvReachesItsCommands(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	repo := gitRepo(t, map[string]string{"README": "base\n"})
	task, err := r.tk.Start(ctx, TaskRequest{Repo: repo, Test: `test "$GREETING" = "hello there"`, Env: []string{"GREETING=hello there"}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, err := r.run(task.SandboxID, "sh", "-c", `echo "$GREETING"`); err != nil || out != "hello there\n" {
		t.Fatalf("an exec in the task's sandbox: %q %v", out, err)
	}
	var out bytes.Buffer
	run, err := r.tk.Test(ctx, task.ID, 0, nil, &out, &out)
	if err != nil || !run.Passed {
		t.Fatalf("the test command without the task's env: %+v %v %q", run, err, out.String())
	}
	for _, bad := range [][]string{{"=x"}, {"NO_VALUE"}, {"A\x00B=1"}} {
		if _, err := Check(TaskRequest{Env: bad}, 0); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("env %q: %v", bad, err)
		}
	}
}
