package cli

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/cli/clibase"
	"github.com/airlock-dev/airlock/sdk"
)

// clibase repeats the SDK's socket defaults so that the front need not
// link the SDK: the two must stay one value.
func TestClibaseSocketDefaultsAreTheSDKs(t *testing.T) {
	if clibase.DefaultSocket != sdk.DefaultSocket || clibase.SocketEnv != sdk.SocketEnv {
		t.Fatalf("clibase %q/%q, sdk %q/%q", clibase.DefaultSocket, clibase.SocketEnv, sdk.DefaultSocket, sdk.SocketEnv)
	}
}
