package mcp

import (
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SDKServer is the SDK server with every tool, for the in-process tests
// of package mcp_test (which import internal/api, which imports mcp).
func (s *Server) SDKServer() *mcpsdk.Server { return s.server() }

// SetPollEvery sets how often progress is sent and an approval polled,
// so that the tests of both take milliseconds; it returns the undo.
func SetPollEvery(d time.Duration) func() {
	old := pollEvery
	pollEvery = d
	return func() { pollEvery = old }
}

// SetMaxTree bounds the tars sent and fetched over MCP; it returns the
// undo.
func SetMaxTree(n int) func() {
	old := maxTree
	maxTree = n
	return func() { maxTree = old }
}
