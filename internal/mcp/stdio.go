package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is newline-delimited JSON-RPC over a reader and a
// writer, as the SDK's IOTransport, except that a request the client
// cancelled (notifications/cancelled) gets no response, as the protocol
// asks: the SDK answers every request it handled.
type stdioTransport struct {
	r io.Reader
	w io.Writer
}

func (t stdioTransport) Connect(context.Context) (mcpsdk.Connection, error) {
	sc := bufio.NewScanner(t.r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &stdioConn{sc: sc, w: t.w, inFlight: map[jsonrpc.ID]bool{}}, nil
}

type stdioConn struct {
	sc       *bufio.Scanner
	rmu      sync.Mutex
	wmu      sync.Mutex
	w        io.Writer
	mu       sync.Mutex
	inFlight map[jsonrpc.ID]bool // calls not yet answered: true once cancelled
	closed   bool
}

func (c *stdioConn) Read(context.Context) (jsonrpc.Message, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for c.sc.Scan() {
		line := c.sc.Bytes()
		if len(line) == 0 {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			c.mu.Lock()
			c.inFlight[req.ID] = false
			c.mu.Unlock()
		} else if ok && req.Method == "notifications/cancelled" {
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					c.mu.Lock()
					if _, ok := c.inFlight[id]; ok { // a late cancel must not drop a later call's answer
						c.inFlight[id] = true
					}
					c.mu.Unlock()
				}
			}
		}
		return msg, nil
	}
	if err := c.sc.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.inFlight[resp.ID]
		delete(c.inFlight, resp.ID)
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return errors.New("connection closed")
	}
	_, err = c.w.Write(append(b, '\n'))
	return err
}

func (c *stdioConn) Close() error {
	c.wmu.Lock()
	c.closed = true
	c.wmu.Unlock()
	return nil
}

func (c *stdioConn) SessionID() string { return "" }
