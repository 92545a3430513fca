// Package cli is what the airlock command's verbs share: package clibase
// (flag sets and types, the command, verb groups, human output), with the
// daemon's client added (Cmd.Client, Cmd.Task), and NAT64 prefix flags.
// The verbs themselves are in the packages below it, one per group;
// cmd/airlock holds the verb table.
package cli

import (
	"context"
	"io"

	"github.com/airlock-dev/airlock/internal/cli/clibase"
	"github.com/airlock-dev/airlock/sdk"
)

// Version is airlock's version, as main sets it (its -ldflags "-X
// main.version=...") before any verb runs.
var Version = "dev"

// Cmd is a clibase.Cmd with the daemon's client.
type Cmd struct {
	*clibase.Cmd
	url *string // --url, for a verb that takes it (Remote)
}

// NewCmd is clibase.NewCmd, with the client.
func NewCmd(name, synopsis, about string, stdout, stderr io.Writer) *Cmd {
	return &Cmd{Cmd: clibase.NewCmd(name, synopsis, about, stdout, stderr)}
}

// Client is the daemon's client at --socket, acting for ActorName; or,
// given --url (Remote), at that URL as the key in $AIRLOCK_API_KEY.
func (c *Cmd) Client() (*sdk.Client, error) {
	if cl, err := c.remoteClient(); cl != nil || err != nil {
		return cl, err
	}
	return sdk.New(sdk.WithSocket(c.Socket), sdk.WithActor(ActorName()))
}

// Task gets task id from the daemon, with the client it used; a failure
// is reported, and its exit status is the third result (0: none).
func (c *Cmd) Task(id string) (*sdk.Client, *sdk.Task, int) {
	cl, err := c.Client()
	if err != nil {
		return nil, nil, c.Fail(err)
	}
	t, err := cl.GetTask(context.Background(), id)
	if err != nil {
		return nil, nil, c.Fail(err)
	}
	return cl, t, 0
}
