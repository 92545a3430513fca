// Package mcp serves airlock as Model Context Protocol tools: sandboxes
// and tasks, commands (waited for or in the background), files, search,
// diff, tests, the review bundle. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), which does the protocol:
// version negotiation, streamable HTTP sessions, cancellation, progress
// and the validation of every call against its tool's schema. Every tool
// goes through the daemon's API with the caller's identity, so policy,
// approvals and the audit record apply exactly as to any client.
package mcp

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/sdk"
)

// Server answers MCP requests with an airlock client.
type Server struct {
	Client  *sdk.Client
	Version string // airlock's version, shown to clients
	// ExecTimeout bounds a command run over MCP that names no timeout
	// (0: DefaultExecTimeout): an agent that loses track of a command
	// must not leave it running for the sandbox's lifetime.
	ExecTimeout time.Duration

	held held     // commands held for a human in this session
	live sync.Map // exec id -> *liveExec, while a handed-off command runs
}

// Defaults of the exec tools.
const (
	DefaultExecTimeout = 10 * time.Minute
	// defaultWait is the soft deadline of exec: past it the command runs
	// on and exec answers with its id. It is under the 60 s after which
	// the TypeScript SDK's clients give up on a call by default.
	defaultWait = 45 * time.Second
)

// pollEvery is how often a waiting call sends progress and polls an
// approval (a variable: the tests make it milliseconds).
var pollEvery = time.Second

const instructions = "airlock runs your commands in an isolated sandbox (workspace /workspace). " +
	"Commands are checked by policy: some are denied, some wait for a human's approval " +
	"(exec answers with the approval id; call exec again with the same command, or get_approval, to learn the decision). " +
	"A command still running after wait_seconds goes on: poll it with exec_output. Everything is recorded for review."

// schemas caches the schemas inferred from the tools' Go types: each HTTP
// session gets its own SDK server, and would infer them again.
var schemas = mcpsdk.NewSchemaCache()

// server builds the SDK server with every tool, resource and prompt.
func (s *Server) server() *mcpsdk.Server {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "airlock", Title: "airlock sandboxes", Version: s.Version},
		&mcpsdk.ServerOptions{Instructions: instructions, SchemaCache: schemas})
	srv.AddReceivingMiddleware(viaClient)
	s.addTools(srv)
	return srv
}

// viaClient puts the client's name/version, as it announced them at
// initialize, on every request's context (sdk.ViaClient): each call the
// request makes of the daemon names it, and the daemon adds it to what it
// records beside the actor (the key or operator).
func viaClient(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if ss, ok := req.GetSession().(*mcpsdk.ServerSession); ok {
			if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
				ctx = sdk.ViaClient(ctx, p.ClientInfo.Name+"/"+p.ClientInfo.Version)
			}
		}
		return next(ctx, method, req)
	}
}

// ServeStdio serves one MCP session of newline-delimited JSON-RPC over r
// and w until r ends.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	err := s.server().Run(ctx, stdioTransport{r, w})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcpsdk.ErrConnectionClosed) {
		return nil
	}
	return err
}

func (s *Server) execTimeout() time.Duration {
	if s.ExecTimeout > 0 {
		return s.ExecTimeout
	}
	return DefaultExecTimeout
}

// progress sends notifications/progress for one call when its request
// carries a progress token; otherwise it does nothing.
type progress struct {
	req   *mcpsdk.CallToolRequest
	token any
	mu    sync.Mutex
	n     float64
}

func newProgress(req *mcpsdk.CallToolRequest) *progress {
	p := &progress{req: req}
	if req != nil && req.Params != nil {
		p.token = req.Params.GetProgressToken()
	}
	return p
}

// Send reports msg; progress counts up (seconds waited), with no total.
func (p *progress) Send(ctx context.Context, msg string) {
	if p.token == nil || p.req.Session == nil {
		return
	}
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	_ = p.req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: msg})
}
