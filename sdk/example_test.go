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
