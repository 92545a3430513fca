//go:build !airlock_agent

package agentbin

// Built without -tags airlock_agent: the binary is its own agent.
var data, sum string
