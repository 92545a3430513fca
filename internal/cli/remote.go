package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/sdk"
)

// APIKeyEnv holds the API key a verb given --url sends. The key is read
// from the environment only, never a flag: a command line is seen by
// every user of the host (ps) and kept in shell history.
const APIKeyEnv = "AIRLOCK_API_KEY"

// RemoteHelp is what a verb that takes --url says of it in its help.
const RemoteHelp = "With --url it talks to a daemon over TCP (its serve --listen address) as the API\nkey in $" + APIKeyEnv + " (a key of the project: a reviewer's to decide approvals,\nan admin's for break-glass) instead of the unix socket.\n"

// Remote adds --url to c: Client then talks to that daemon over TCP
// with the key in $AIRLOCK_API_KEY, instead of the unix socket.
func (c *Cmd) Remote() {
	c.url = c.FS.String("url", "", "a remote daemon's `URL` (http(s)://host:port), with the API key in $"+APIKeyEnv+"; instead of --socket")
}

// remoteClient is the client for --url, or nil without it.
func (c *Cmd) remoteClient() (*sdk.Client, error) {
	if c.url == nil || *c.url == "" {
		return nil, nil
	}
	socketSet := false
	c.FS.Visit(func(f *flag.Flag) { socketSet = socketSet || f.Name == "socket" })
	if socketSet {
		return nil, errors.New("--url and --socket exclude each other")
	}
	key := os.Getenv(APIKeyEnv)
	if key == "" {
		return nil, fmt.Errorf("--url needs an API key in $%s (make one with 'airlock apikey create --project P --role reviewer NAME')", APIKeyEnv)
	}
	return sdk.New(sdk.WithBaseURL(*c.url), sdk.WithAPIKey(key))
}
