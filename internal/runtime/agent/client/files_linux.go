package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// fileCall runs one agent file operation; with a pipe end when data flows.
func (c *Client) fileCall(ctx context.Context, op proto.FileOp, f *os.File) (*proto.Message, error) {
	var files []*os.File
	if f != nil {
		files = append(files, f)
	}
	m, err := c.call(ctx, &proto.Message{Op: proto.OpFile, File: &op}, files...)
	if err != nil {
		if m != nil && m.Op == proto.OpError {
			return nil, fileError(op, m)
		}
		return nil, err
	}
	return m, nil
}

func fileError(op proto.FileOp, m *proto.Message) error {
	return AgentError(op.Kind+" "+op.Path, m)
}

func toInfo(fi proto.FileInfo) runtime.FileInfo { return runtime.FileInfo(fi) }

// Stat implements runtime.Files.
func (c *Client) Stat(ctx context.Context, path string) (runtime.FileInfo, error) {
	m, err := c.fileCall(ctx, proto.FileOp{Kind: "stat", Path: path}, nil)
	if err != nil {
		return runtime.FileInfo{}, err
	}
	if len(m.Files) != 1 {
		return runtime.FileInfo{}, fmt.Errorf("stat %s: bad answer from the agent", path)
	}
	return toInfo(m.Files[0]), nil
}

func (c *Client) List(ctx context.Context, dir string) ([]runtime.FileInfo, error) {
	m, err := c.fileCall(ctx, proto.FileOp{Kind: "list", Path: dir}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.FileInfo, 0, len(m.Files))
	for _, fi := range m.Files {
		out = append(out, toInfo(fi))
	}
	return out, nil
}

func (c *Client) Mkdir(ctx context.Context, path string, parents bool) error {
	_, err := c.fileCall(ctx, proto.FileOp{Kind: "mkdir", Path: path, Parents: parents}, nil)
	return err
}

func (c *Client) Remove(ctx context.Context, path string, recursive bool) error {
	_, err := c.fileCall(ctx, proto.FileOp{Kind: "remove", Path: path, Recursive: recursive}, nil)
	return err
}

// Rename implements runtime.Files.
func (c *Client) Rename(ctx context.Context, from, to string) error {
	_, err := c.fileCall(ctx, proto.FileOp{Kind: "rename", Path: from, To: to}, nil)
	return err
}

// streamOut runs an op that writes into a pipe we read into w.
func (c *Client) streamOut(ctx context.Context, op proto.FileOp, w io.Writer) (int64, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	copied := make(chan error, 1)
	var n int64
	go func() {
		var err error
		n, err = io.Copy(w, pr)
		pr.Close()
		copied <- err
	}()
	_, ferr := c.fileCall(ctx, op, pw)
	pw.Close()
	if ferr != nil {
		// The agent may still hold the pipe's write end (an op that went
		// past ctx): do not wait for its end of file.
		pr.Close()
	}
	cerr := <-copied
	if ferr != nil {
		return n, ferr
	}
	return n, cerr
}

// streamIn runs an op that reads r from a pipe.
func (c *Client) streamIn(ctx context.Context, op proto.FileOp, msg *proto.Message, r io.Reader) (*proto.Message, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	copyErr := make(chan error, 1)
	go func() {
		var err error
		if op.Kind == "write" {
			// Framed: the agent puts the file in place only after the
			// end mark, which a failing r never sends.
			_, err = proto.WriteFrames(pw, r)
		} else {
			_, err = io.Copy(pw, r)
		}
		pw.Close()
		copyErr <- err
	}()
	var m *proto.Message
	if msg != nil {
		m, err = c.call(ctx, msg, pr)
		if err != nil && m != nil && m.Op == proto.OpError {
			err = fileError(op, m)
		}
	} else {
		m, err = c.fileCall(ctx, op, pr)
	}
	pr.Close()
	if err != nil {
		// The agent may still hold the pipe's read end without reading
		// (an op that went past ctx): the copy must not wait for it, nor
		// the caller for a source that does not end.
		pw.Close()
		select {
		case cerr := <-copyErr:
			// A failing source (say, an upload over its size limit)
			// explains a failure better than what the agent made of the
			// cut stream.
			if cerr != nil && !errors.Is(cerr, syscall.EPIPE) && !errors.Is(cerr, os.ErrClosed) {
				return nil, cerr
			}
		case <-time.After(100 * time.Millisecond):
		}
		return m, err
	}
	// The agent read to the end of the pipe and is content; the source
	// may still have failed part-way (a size limit, a client gone): then
	// what the agent got is cut short, and the operation failed.
	if cerr := <-copyErr; cerr != nil && !errors.Is(cerr, syscall.EPIPE) {
		return nil, &cutSourceError{cerr}
	}
	return m, nil
}

// cutSourceError is a source that failed part-way while the agent took
// what came as the whole (streamIn).
type cutSourceError struct{ err error }

func (e *cutSourceError) Error() string { return e.err.Error() }
func (e *cutSourceError) Unwrap() error { return e.err }

func (c *Client) ReadFile(ctx context.Context, path string, w io.Writer, max int64) (int64, error) {
	return c.streamOut(ctx, proto.FileOp{Kind: "read", Path: path, MaxBytes: max}, w)
}

func (c *Client) WriteFile(ctx context.Context, path string, r io.Reader, mode uint32, parents bool) (int64, error) {
	// A source that fails part-way (a client gone, a body over its
	// limit) leaves the file as it was: the agent writes beside it and
	// renames only once the whole content came (proto.WriteFrames).
	m, err := c.streamIn(ctx, proto.FileOp{Kind: "write", Path: path, Mode: mode, Parents: parents}, nil, r)
	if err != nil {
		return 0, err
	}
	return m.Size, nil
}

func (c *Client) Tar(ctx context.Context, dir string, w io.Writer) (int64, error) {
	return c.streamOut(ctx, proto.FileOp{Kind: "tar", Path: dir}, w)
}

func (c *Client) Untar(ctx context.Context, dir string, r io.Reader) error {
	_, err := c.streamIn(ctx, proto.FileOp{Kind: "untar", Path: dir}, &proto.Message{Op: proto.OpUntar, Path: dir}, r)
	return err
}
