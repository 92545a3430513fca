package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/sdk"
)

// Run a command in a fresh sandbox, streaming its output, then destroy the
// sandbox.
func Example() {
	ctx := context.Background()
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	sb, err := c.CreateSandbox(ctx, sdk.CreateRequest{
		Template: "host",
		Limits:   sdk.Limits{MemoryBytes: 512 << 20, Pids: 256},
		TTL:      time.Hour,
		Labels:   map[string]string{"task": "demo"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.DestroySandbox(ctx, sb.ID)

	st, err := c.Exec(ctx, sb.ID, sdk.ExecRequest{
		Argv:    []string{"/bin/sh", "-c", "echo hello; echo oops >&2; exit 3"},
		Timeout: 30 * time.Second,
	}, os.Stdout, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit status", st.Code, "in", st.Duration)
}

func ExampleNew() {
	// The default: $AIRLOCK_SOCKET, else /run/airlock/airlock.sock.
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	h, err := c.Health(context.Background())
	if err != nil {
		log.Fatal(err) // e.g. cannot reach the airlock daemon at ...: is `airlock serve` running?
	}
	fmt.Println(h.Version, h.Backend)

	// An explicit socket, and a bound on every call.
	_, _ = sdk.New(sdk.WithSocket("/tmp/airlock.sock"), sdk.WithTimeout(10*time.Second))

	// Over TCP, with an API key.
	_, _ = sdk.New(sdk.WithBaseURL("https://airlock.example.com:8443"), sdk.WithAPIKey(os.Getenv("AIRLOCK_API_KEY")))
}

func ExampleClient_Exec() {
	ctx := context.Background()
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	var out, errOut strings.Builder
	st, err := c.Exec(ctx, "3f9a0c1d2e4b", sdk.ExecRequest{
		Argv:    []string{"wc", "-l"},
		Cwd:     "/workspace",
		Env:     []string{"LC_ALL=C"},
		Stdin:   strings.NewReader("one\ntwo\n"),
		Timeout: 10 * time.Second,
	}, &out, &errOut)
	switch {
	case sdk.IsNotFound(err):
		log.Fatal("no such sandbox or command: ", err)
	case err != nil:
		log.Fatal(err)
	}
	switch st.Limit {
	case sdk.LimitTimeout:
		fmt.Println("timed out")
	case sdk.LimitMemory:
		fmt.Println("out of memory")
	}
	fmt.Printf("exit %d, stdout %q\n", st.Code, out.String())

	// The daemon keeps the output; read it again later.
	stored, err := c.ExecOutput(ctx, "3f9a0c1d2e4b", st.ExecID, sdk.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", stored)
}

func ExampleClient_ListSandboxes() {
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	sbs, err := c.ListSandboxes(context.Background(), sdk.StateRunning)
	if err != nil {
		log.Fatal(err)
	}
	for _, sb := range sbs {
		fmt.Println(sb.ID, sb.Template, sb.Created.Format(time.RFC3339))
	}
}

func ExampleIsNotFound() {
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.GetSandbox(context.Background(), "no-such-id")
	if sdk.IsNotFound(err) {
		fmt.Println("gone")
	}
	var e *sdk.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, e.Message) // 404 not_found sandbox "no-such-id" not found
	}
}

// A command the policy holds for a human: without waiting, the call fails
// with the approval's id; an operator (on the unix socket) approves it
// narrowly, and the same command then runs.
func ExampleIsApprovalPending() {
	ctx := context.Background()
	agent, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	req := sdk.ExecRequest{Argv: []string{"rm", "-rf", "/workspace/build"}, NoApprovalWait: true}
	_, err = agent.Exec(ctx, "3f9a0c1d2e4b", req, os.Stdout, os.Stderr)
	var e *sdk.Error
	switch {
	case sdk.IsApprovalPending(err) && errors.As(err, &e):
		fmt.Println("waiting for a human:", e.ApprovalID)
		operator, _ := sdk.New(sdk.WithActor("alice"))
		if _, err := operator.Approve(ctx, e.ApprovalID, sdk.ApproveOptions{Scope: "command", For: 10 * time.Minute}); err != nil {
			log.Fatal(err)
		}
		_, err = agent.Exec(ctx, "3f9a0c1d2e4b", req, os.Stdout, os.Stderr) // covered by the grant
		if err != nil {
			log.Fatal(err)
		}
	case sdk.IsPolicyDenied(err):
		fmt.Println("denied:", err)
	case err != nil:
		log.Fatal(err)
	}
}

// Ask what the policy would decide, without running anything.
func ExampleClient_CheckCommand() {
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	d, err := c.CheckCommand(context.Background(), "3f9a0c1d2e4b", []string{"/bin/sh", "-c", "npm ci && npm test"}, "/workspace")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Action, d.Reason)
	for _, m := range d.Matches {
		fmt.Println(" ", m.Action, m.Rule, m.Reason)
	}
}

// The record of a task, and its signed review bundle.
func ExampleClient_TaskBundle() {
	ctx := context.Background()
	c, err := sdk.New()
	if err != nil {
		log.Fatal(err)
	}
	events, err := c.AuditEvents(ctx, sdk.AuditFilter{Task: "t-1a2b3c4d5e6f", Kind: "exec"})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range events {
		fmt.Println(e.Seq, e.Kind, e.Actor, string(e.Payload))
	}
	f, err := os.Create("review.tar.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := c.TaskBundle(ctx, "t-1a2b3c4d5e6f", f); err != nil {
		log.Fatal(err)
	}
	// Check it with: airlock bundle verify review.tar.gz
}
