package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/sdk"
	"golang.org/x/sys/unix"
)

// The operator at a terminal decides a held command in place (issue 19: a
// held command blocked the operator's own CLI for five minutes while the
// decision had to come from another one). The CLI is the daemon's unix
// socket, the operator's door, so it may approve; it asks only when its
// stdin and stderr are a terminal (never from a script or a pipe), shows
// the whole prompt first, and a decision made elsewhere meanwhile still
// ends the wait.

// promptIn is the terminal the answer is read from (a variable for
// tests); promptTerminal says whether it and errOut are terminals.
var (
	promptIn       io.Reader = os.Stdin
	promptTerminal           = func(errOut io.Writer) bool { return isTerminal(os.Stdin) && isTerminalW(errOut) }
)

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func isTerminalW(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// decideHere shows approval id, asks, and waits for a decision: the
// operator's here, or anyone's elsewhere, until deadline.
func decideHere(ctx context.Context, c *cli.Cmd, cl *sdk.Client, id string, deadline time.Time) (*sdk.Approval, error) {
	a, err := cl.GetApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	cli.PrintApproval(c.Stderr, a)
	fmt.Fprintf(c.Stderr, "approve it here? y: approve (this command line, in this sandbox, for 15m), n: deny, Enter: wait for another operator: ")
	answers := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(promptIn).ReadString('\n')
		answers <- strings.ToLower(strings.TrimSpace(line))
	}()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	type decided struct {
		a   *sdk.Approval
		err error
	}
	done := make(chan decided, 1)
	go func() {
		a, err := waitDecision(wctx, cl, id, deadline)
		done <- decided{a, err}
	}()
	select {
	case d := <-done:
		fmt.Fprintln(c.Stderr)
		return d.a, d.err
	case ans := <-answers:
		if err := answer(ctx, cl, id, ans); err != nil {
			return nil, err
		}
	}
	d := <-done
	return d.a, d.err
}

// answer acts on the operator's answer: y approves, n denies, anything
// else waits on.
func answer(ctx context.Context, cl *sdk.Client, id, ans string) error {
	switch ans {
	case "y", "yes":
		_, err := cl.Approve(ctx, id, sdk.ApproveOptions{Scope: "command", Reason: "approved at the operator's terminal"})
		return err
	case "n", "no":
		_, err := cl.Deny(ctx, id, "denied at the operator's terminal")
		return err
	}
	return nil
}
