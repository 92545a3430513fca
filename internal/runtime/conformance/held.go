package conformance

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// StartHeld runs argv in sb and returns the first line it prints, while
// it still runs (holding whatever it took); cleanup gets the function
// that kills it and waits for it (pass t.Cleanup).
func StartHeld(sb runtime.Sandbox, argv []string, cleanup func(func())) (string, error) {
	r, w := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	p, err := sb.Exec(ctx, runtime.ExecRequest{Argv: argv, Stdout: w, Stderr: io.Discard})
	if err != nil {
		cancel()
		return "", err
	}
	cleanup(func() {
		_ = p.Signal(syscall.SIGKILL)
		go func() { _, _ = io.Copy(io.Discard, r) }()
		_, _ = p.Wait(ctx)
		_ = w.Close()
		cancel()
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case l := <-line:
		if l == "" {
			return "", errors.New("no output")
		}
		return l, nil
	case <-time.After(2 * time.Minute):
		return "", errors.New("no output in 2 minutes")
	}
}
