package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/airlock-dev/airlock/internal/termsafe"
	"github.com/airlock-dev/airlock/sdk"
)

// PrintApproval writes an approval as the operator decides it: the
// command as it would run, where, its classes, what it writes, reaches
// and reads, its effect and why it was held. Every field came from the
// agent's request or its analysis: escaped one by one (a newline in a
// write target must not print a line that reads like this prompt's own).
func PrintApproval(w io.Writer, a *sdk.Approval) {
	p := a.Prompt
	if p == nil {
		p = &sdk.Prompt{}
	}
	fmt.Fprintf(w, "%s  %s  sandbox %s", Esc(a.ID), Esc(a.State), Esc(a.SandboxID))
	if a.TaskID != "" {
		fmt.Fprintf(w, "  task %s", Esc(a.TaskID))
	}
	fmt.Fprintf(w, "  requested by %s at %s\n", Esc(a.RequestedBy), a.Created.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "  command:\t%s\n  cwd:\t%s\n  classes:\t%s (held: %s)\n", Esc(p.Command), Esc(p.Cwd), termsafe.Join(p.Classes, ","), termsafe.Join(p.Held, ","))
	if len(p.Writes) > 0 {
		fmt.Fprintf(tw, "  writes:\t%s\n", termsafe.Join(p.Writes, " "))
	}
	if len(p.Network) > 0 {
		fmt.Fprintf(tw, "  network:\t%s\n", termsafe.Join(p.Network, " "))
	}
	if len(p.Credentials) > 0 {
		fmt.Fprintf(tw, "  credentials:\t%s\n", termsafe.Join(p.Credentials, " "))
	}
	fmt.Fprintf(tw, "  effect:\t%s\n  why held:\t%s\n", Esc(p.Effect), Esc(p.Reason))
	if a.State == "pending" {
		fmt.Fprintf(tw, "  decide by:\t%s\n", a.Deadline.Format(time.RFC3339))
	} else if a.DecidedBy != "" {
		fmt.Fprintf(tw, "  decided:\t%s by %s %s\n", Esc(a.State), Esc(a.DecidedBy), Esc(a.Reason))
	}
	_ = tw.Flush()
}
