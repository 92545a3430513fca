//go:build airlock_agent

package agentbin

import (
	_ "embed"
	"strings"
)

// The agent and its checksum. agent/ holds nothing in the source tree:
// scripts/build.sh builds cmd/airlock-agent and puts both files here
// through a build overlay (-overlay), with -tags airlock_agent.
var (
	//go:embed agent/airlock-agent
	data string
	//go:embed agent/airlock-agent.sha256
	sumFile string
	sum     = strings.TrimSpace(sumFile)
)
