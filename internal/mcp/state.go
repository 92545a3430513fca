package mcp

import (
	"context"
	"errors"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskOf is the unfinished task whose workspace sandbox id is, "" if none:
// destroying or resetting it would lose the task's work unrecorded
// (finish_task records it first).
func (s *Server) taskOf(ctx context.Context, id string) (string, error) {
	tasks, err := s.Client.ListTasks(ctx)
	if err != nil {
		return "", err
	}
	for _, t := range tasks {
		if t.SandboxID == id && t.Finished == nil {
			return t.ID, nil
		}
	}
	return "", nil
}

func (s *Server) resetSandbox(ctx context.Context, _ *mcpsdk.CallToolRequest, in sandboxIn) (*mcpsdk.CallToolResult, any, error) {
	if err := need("sandbox_id", in.SandboxID); err != nil {
		return nil, nil, err
	}
	// A reset removes a task's checkout, its base commit with it: the
	// task could not be diffed or finished any more.
	if t, err := s.taskOf(ctx, in.SandboxID); err != nil || t != "" {
		return nil, nil, errors.Join(err, taskSandbox(in.SandboxID, t, "reset"))
	}
	sb, err := s.Client.ResetSandbox(ctx, in.SandboxID)
	if err != nil {
		return nil, nil, err
	}
	return textResult(fmt.Sprintf("sandbox %s started over from template %s: its files and processes are gone", sb.ID, sb.Template)),
		map[string]any{"sandbox_id": sb.ID, "state": sb.State, "template": sb.Template}, nil
}

func taskSandbox(sb, task, verb string) error {
	if task == "" {
		return nil
	}
	return fmt.Errorf("sandbox %s is task %s's workspace: a %s would lose its work; use finish_task", sb, task, verb)
}

type snapshotIn struct {
	SandboxID string `json:"sandbox_id"`
	Name      string `json:"name"`
}

func (s *Server) snapshotSandbox(ctx context.Context, _ *mcpsdk.CallToolRequest, in snapshotIn) (*mcpsdk.CallToolResult, any, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("name", in.Name)); err != nil {
		return nil, nil, err
	}
	snap, err := s.Client.SnapshotSandbox(ctx, in.SandboxID, in.Name)
	if err != nil {
		return nil, nil, err
	}
	return textResult(fmt.Sprintf("template %s version %.12s: %d bytes of /workspace and home kept; create_sandbox with this template starts from them, and reset_sandbox of such a sandbox goes back to them",
			snap.Name, snap.Version, snap.SeedBytes)),
		map[string]any{"template": snap.Name, "version": snap.Version, "base": snap.Base, "bytes": snap.SeedBytes}, nil
}
