// Package agentbin is the lean agent the core carries: the program a
// sandbox runs as PID 1 (cmd/airlock-agent: the backends' init and agent,
// and a paused sandbox's thaw guard, with nothing of the daemon), which
// starts in a fraction of the core's time. scripts/build.sh embeds it
// (-tags airlock_agent); a core built without it (go build ./cmd/airlock,
// the backends' own tests) runs itself as the agent, the same code.
package agentbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/exefile"
)

// Prefix starts the agent's file names.
const Prefix = "airlock-agent-"

// Embedded reports whether this binary carries the lean agent.
func Embedded() bool { return data != "" }

// Put writes the lean agent into dir once (content-addressed, 0555,
// whole) and returns its path; without an embedded agent it returns
// this binary's own path.
func Put(dir string) (string, error) {
	if !Embedded() {
		return os.Executable()
	}
	if len(sum) != 64 {
		return "", fmt.Errorf("the embedded agent has no valid checksum (%q): rebuild airlock", sum)
	}
	name := Prefix + sum[:20]
	if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !exefile.Trusted(fi, int64(len(data))) {
		got := sha256.Sum256([]byte(data))
		if hex.EncodeToString(got[:]) != sum {
			return "", fmt.Errorf("the embedded agent does not match its checksum: the airlock binary is damaged")
		}
	}
	p, written, err := exefile.Put(dir, name, data)
	if err != nil {
		return "", fmt.Errorf("sandbox agent: %w", err)
	}
	if written {
		// dir is a backend's own: other versions' agents and the copies
		// of whole binaries made before there was a lean agent go too.
		exefile.Prune(dir, "airlock-", name)
	}
	return p, nil
}
