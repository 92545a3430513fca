package e2b

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// fakeFiles is a sandbox's files as GET /files sees them: one Stat answer
// and a ReadFile that runs read. The other methods are not expected.
type fakeFiles struct {
	runtime.Files
	stat    runtime.FileInfo
	statErr error
	read    func(ctx context.Context, w io.Writer) (int64, error)
	reads   atomic.Int32
}

func (f *fakeFiles) Stat(ctx context.Context, p string) (runtime.FileInfo, error) {
	return f.stat, f.statErr
}

func (f *fakeFiles) ReadFile(ctx context.Context, p string, w io.Writer, max int64) (int64, error) {
	f.reads.Add(1)
	return f.read(ctx, w)
}

// filesOnly is a core that has only the files of sandbox "sb": its
// embedded Core is nil, so a route reaching any other method panics.
type filesOnly struct {
	Core
	ff *fakeFiles
}

// Paused: sandbox "sb" runs (every call into a sandbox asks).
func (filesOnly) Paused(string) bool { return false }

func (c filesOnly) AgentFiles(_ context.Context, id string) (runtime.Files, error) {
	if id != "sb" {
		return nil, fmt.Errorf("sandbox %s: %w", id, errdefs.ErrNotFound)
	}
	return c.ff, nil
}

// getFile asks a door that serves ff for the file at p.
func getFile(t *testing.T, ff *fakeFiles, p string) *http.Response {
	t.Helper()
	resp, err := tryGetFile(t, ff, p)
	if err != nil {
		t.Fatalf("GET /files: %v", err)
	}
	return resp
}

func tryGetFile(t *testing.T, ff *fakeFiles, p string) (*http.Response, error) {
	t.Helper()
	s := New(Config{Manager: filesOnly{ff: ff}, Files: filesOnly{ff: ff}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("GET", srv.URL+"/files?path="+p, nil)
	for k, v := range envdHeaders("sb", s.handTo(context.Background(), "sb"), nil) {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, nil
}

func writeAll(parts ...string) func(context.Context, io.Writer) (int64, error) {
	return func(_ context.Context, w io.Writer) (int64, error) {
		var n int64
		for _, s := range parts {
			m, err := io.WriteString(w, s)
			n += int64(m)
			if err != nil {
				return n, err
			}
		}
		return n, nil
	}
}

// TestReadFileStreams: GET /files sends the file as it is read. It used to
// read the whole file (up to MaxFile) into memory before the first byte,
// and eight slow clients of a 250 MB file took the daemon to 4 GB. Here
// ReadFile stops after its first chunk until the client has that chunk:
// a handler that buffers never lets it.
func TestReadFileStreams(t *testing.T) {
	const chunk, size = 1 << 20, 16 << 20
	clientHasData := make(chan struct{})
	var streamed atomic.Bool
	ff := &fakeFiles{stat: runtime.FileInfo{Name: "big", Type: "file", Size: size}}
	ff.read = func(ctx context.Context, w io.Writer) (int64, error) {
		buf := bytes.Repeat([]byte{'x'}, chunk)
		var n int64
		for n < size {
			m, err := w.Write(buf)
			n += int64(m)
			if err != nil {
				return n, err
			}
			if n == chunk {
				select {
				case <-clientHasData:
					streamed.Store(true)
				case <-time.After(10 * time.Second):
					return n, errors.New("no byte reached the client while ReadFile ran: the handler holds the file")
				case <-ctx.Done():
					return n, ctx.Err()
				}
			}
		}
		return n, nil
	}
	resp := getFile(t, ff, "/workspace/big")
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if cl := resp.Header.Get("Content-Length"); cl != fmt.Sprint(size) {
		t.Errorf("Content-Length %q, want %d", cl, size)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, chunk)); err != nil {
		t.Fatalf("first chunk: %v", err)
	}
	close(clientHasData)
	rest, err := io.Copy(io.Discard, resp.Body)
	if err != nil || chunk+rest != size {
		t.Fatalf("read %d bytes (%v), want %d", chunk+rest, err, size)
	}
	if !streamed.Load() {
		t.Error("ReadFile did not see the client get its first chunk")
	}
}

// TestReadFileAnswers: what the E2B SDK sees of GET /files, for files
// that are, that are not, and that change while they are read.
func TestReadFileAnswers(t *testing.T) {
	file := func(size int64) runtime.FileInfo { return runtime.FileInfo{Name: "a.txt", Type: "file", Size: size} }
	notExist := &fs.PathError{Op: "open", Path: "/workspace/a.txt", Err: fs.ErrNotExist}
	for _, c := range []struct {
		name    string
		ff      *fakeFiles
		status  int
		body    string // the whole body, or in an error answer a part of it
		hdr     map[string]string
		cut     bool // the client must see an error, not a short file
		noReads bool
	}{
		{name: "a file", ff: &fakeFiles{stat: file(5), read: writeAll("hel", "lo")}, status: 200, body: "hello",
			hdr: map[string]string{"Content-Length": "5", "Content-Type": "application/octet-stream", "Content-Disposition": "inline; filename=a.txt"}},
		{name: "an empty file", ff: &fakeFiles{stat: file(0), read: writeAll()}, status: 200, body: "",
			hdr: map[string]string{"Content-Length": "0", "Content-Type": "application/octet-stream", "Content-Disposition": "inline; filename=a.txt"}},
		{name: "sized 0 by Stat, as pseudo files are", ff: &fakeFiles{stat: file(0), read: writeAll("cpu 1\n")}, status: 200, body: "cpu 1\n"},
		{name: "grew since Stat", ff: &fakeFiles{stat: file(5), read: writeAll("hello world")}, status: 200, body: "hello",
			hdr: map[string]string{"Content-Length": "5"}},
		{name: "emptied since Stat", ff: &fakeFiles{stat: file(5), read: writeAll()}, status: 200, body: "",
			hdr: map[string]string{"Content-Length": "0"}},
		{name: "missing", ff: &fakeFiles{statErr: notExist}, status: 404, body: `"code":404`, noReads: true,
			hdr: map[string]string{"Content-Type": "application/json", "Content-Disposition": ""}},
		{name: "a directory", ff: &fakeFiles{stat: runtime.FileInfo{Type: "dir"}}, status: 400, body: "is a dir, not a file", noReads: true},
		{name: "over MaxFile", ff: &fakeFiles{stat: file(MaxFile + 1)}, status: 400, body: "files over 268435456 bytes are not served", noReads: true},
		{name: "refused by the policy", ff: &fakeFiles{stat: file(5), read: func(context.Context, io.Writer) (int64, error) {
			return 0, fmt.Errorf("read /workspace/a.txt: a secret file: %w", errdefs.ErrDenied)
		}}, status: 403, body: "a secret file", hdr: map[string]string{"Content-Type": "application/json", "Content-Disposition": ""}},
		{name: "gone since Stat", ff: &fakeFiles{stat: file(5), read: func(context.Context, io.Writer) (int64, error) {
			return 0, notExist
		}}, status: 404, body: `"code":404`},
		{name: "fails part-way", ff: &fakeFiles{stat: file(10), read: func(ctx context.Context, w io.Writer) (int64, error) {
			n, _ := writeAll("hello")(ctx, w)
			return n, errors.New("I/O error")
		}}, cut: true},
		{name: "sized 0 by Stat, fails part-way", ff: &fakeFiles{stat: file(0), read: func(ctx context.Context, w io.Writer) (int64, error) {
			n, _ := writeAll("hello")(ctx, w)
			return n, errors.New("I/O error")
		}}, cut: true},
		{name: "shrank since Stat", ff: &fakeFiles{stat: file(10), read: writeAll("hello")}, cut: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := tryGetFile(t, c.ff, "/workspace/a.txt")
			if c.cut {
				// A broken connection, before or after the headers, or
				// an error status: anything but the short file as a 200.
				if err == nil {
					b, err := io.ReadAll(resp.Body)
					if err == nil && resp.StatusCode == 200 {
						t.Errorf("the body %q ended cleanly: the client cannot tell it is short", b)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("GET /files: %v", err)
			}
			b, err := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, b)
			}
			switch {
			case err != nil:
				t.Errorf("body: %v", err)
			case c.status == 200 && string(b) != c.body:
				t.Errorf("body %q, want %q", b, c.body)
			case c.status != 200 && !strings.Contains(string(b), c.body):
				t.Errorf("body %s, want it to have %q", b, c.body)
			}
			for k, v := range c.hdr {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if c.noReads && c.ff.reads.Load() != 0 {
				t.Error("the file was read")
			}
		})
	}
}

// TestReadFileFromASandbox reads files of a real sandbox through the door.
func TestReadFileFromASandbox(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	for p, body := range map[string][]byte{"/workspace/big": big, "/workspace/empty": nil} {
		if resp, b := d.call("POST", "/files?path="+p, body, envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"})); resp.StatusCode != 200 {
			t.Fatalf("write %s: %d %s", p, resp.StatusCode, b)
		}
	}
	for _, c := range []struct {
		path, length string
		want         func([]byte) bool
	}{
		{"/workspace/big", fmt.Sprint(len(big)), func(b []byte) bool { return bytes.Equal(b, big) }},
		{"/workspace/empty", "0", func(b []byte) bool { return len(b) == 0 }},
	} {
		resp, b := d.call("GET", "/files?path="+c.path, nil, envdHeaders(id, tok, nil))
		if resp.StatusCode != 200 || !c.want(b) {
			t.Errorf("%s: %d, %d bytes %.40q", c.path, resp.StatusCode, len(b), b)
		}
		if resp.Header.Get("Content-Length") != c.length {
			t.Errorf("%s: Content-Length %q, want %s", c.path, resp.Header.Get("Content-Length"), c.length)
		}
	}
	if resp, b := d.call("GET", "/files?path=/workspace/nope", nil, envdHeaders(id, tok, nil)); resp.StatusCode != 404 || !strings.Contains(string(b), `"code":404`) {
		t.Errorf("a missing file: %d %s", resp.StatusCode, b)
	}
}
