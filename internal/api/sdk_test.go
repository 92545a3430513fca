package api

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/sdk"
)

// The published Go client against the real daemon stack.
func TestSDKAgainstDaemon(t *testing.T) {
	d := newDaemon(t)
	c, err := sdk.New(sdk.WithSocket(d.sock))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	h, err := c.Health(ctx)
	if err != nil || !h.OK {
		t.Fatalf("health: %+v %v", h, err)
	}
	sb, err := c.CreateSandbox(ctx, sdk.CreateRequest{Labels: map[string]string{"via": "sdk"}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	st, err := c.Exec(ctx, sb.ID, sdk.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat; echo e >&2; exit 5"}, Stdin: strings.NewReader("in\n")}, &out, &errb)
	if err != nil || st.Code != 5 || out.String() != "in\n" || errb.String() != "e\n" {
		t.Errorf("exec: %+v %v %q %q", st, err, out.String(), errb.String())
	}
	st, err = c.Exec(ctx, sb.ID, sdk.ExecRequest{Argv: []string{"sleep", "5"}, Timeout: 200 * time.Millisecond}, nil, nil)
	if err != nil || st.Code != 124 || st.Limit != sdk.LimitTimeout {
		t.Errorf("timeout: %+v %v", st, err)
	}
	if _, err := c.Exec(ctx, sb.ID, sdk.ExecRequest{Argv: []string{"no-such-cmd"}}, nil, nil); !sdk.IsNotFound(err) {
		t.Errorf("missing command: %v", err)
	}
	if _, err := c.Exec(ctx, sb.ID, sdk.ExecRequest{Argv: []string{"/etc/passwd"}}, nil, nil); !sdk.IsInvalid(err) {
		t.Errorf("not executable: %v", err)
	}
	execs, err := c.ListExecs(ctx, sb.ID)
	if err != nil || len(execs) != 4 {
		t.Fatalf("execs: %d %v", len(execs), err)
	}
	if execs[2].Status == nil || execs[2].Status.Code != 127 || execs[3].Status == nil || execs[3].Status.Code != 126 {
		t.Errorf("records of commands that could not start: %+v %+v", execs[2], execs[3])
	}
	if _, err := c.GetSandbox(ctx, "0123456789ab"); !sdk.IsNotFound(err) {
		t.Errorf("get unknown: %v", err)
	} else if strings.Contains(err.Error(), "not found: not found") || strings.HasSuffix(err.Error(), ": not found") && strings.Count(err.Error(), "not found") > 1 {
		t.Errorf("error repeats its kind: %q", err)
	}
	if err := c.DestroySandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSandbox(ctx, sb.ID)
	if err != nil || got.State != sdk.StateStopped {
		t.Errorf("after destroy: %+v %v", got, err)
	}
}
