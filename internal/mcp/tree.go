package mcp

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxTree bounds a tar sent or fetched over MCP (base64 inside JSON: a
// third more on the wire); bigger trees go over the HTTP API, which
// streams them (a variable: the tests make it small).
var maxTree = 16 << 20

type uploadIn struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path"`
	TarBase64 string `json:"tar_base64" jsonschema:"an uncompressed tar"`
}

func (s *Server) uploadTree(ctx context.Context, _ *mcpsdk.CallToolRequest, in uploadIn) (*mcpsdk.CallToolResult, any, error) {
	if err := errors.Join(need("sandbox_id", in.SandboxID), need("path", in.Path), need("tar_base64", in.TarBase64)); err != nil {
		return nil, nil, err
	}
	if n := base64.StdEncoding.DecodedLen(len(in.TarBase64)); n > maxTree+2 {
		return nil, nil, fmt.Errorf("limit_exceeded: the tar is about %d bytes; at most %d over MCP (split it, or PUT /v1/sandboxes/%s/files/tar)", n, maxTree, in.SandboxID)
	}
	b, err := base64.StdEncoding.DecodeString(in.TarBase64)
	if err != nil {
		return nil, nil, fmt.Errorf("tar_base64 is not base64: %v", err)
	}
	if len(b) > maxTree {
		return nil, nil, fmt.Errorf("limit_exceeded: the tar is %d bytes; at most %d over MCP (split it, or PUT /v1/sandboxes/%s/files/tar)", len(b), maxTree, in.SandboxID)
	}
	entries, err := countTar(b)
	if err != nil {
		return nil, nil, err
	}
	// The directory is made first (parents too), as write_file makes a
	// file's: the daemon unpacks only into one that exists.
	if err := s.Client.Mkdir(ctx, in.SandboxID, in.Path, true); err != nil {
		return nil, nil, err
	}
	if err := s.Client.UploadTar(ctx, in.SandboxID, in.Path, bytes.NewReader(b)); err != nil {
		return nil, nil, err
	}
	return textResult(fmt.Sprintf("unpacked %d entries (%d bytes of tar) under %s", entries, len(b), in.Path)),
		map[string]any{"path": in.Path, "entries": entries, "bytes": len(b)}, nil
}

// countTar checks that b is a tar with entries and counts them, so that
// a wrong upload is refused with a reason before anything is written.
func countTar(b []byte) (int, error) {
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		return 0, errors.New("tar_base64 is gzip-compressed: send an uncompressed tar")
	}
	tr := tar.NewReader(bytes.NewReader(b))
	n := 0
	for {
		_, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("tar_base64 is not a tar (entry %d: %v)", n+1, err)
		}
		n++
	}
	if n == 0 {
		return 0, errors.New("tar_base64 has no entries")
	}
	return n, nil
}

// treeURI is the resource of dir's tree in sandbox id, as a tar.
func treeURI(id, dir string) string {
	return "airlock://sandboxes/" + url.PathEscape(id) + "/tree/" + strings.TrimPrefix(dir, "/")
}

// fetchTree is dir's tree as a tar, at most maxTree bytes, and how many
// entries the policy left out.
func (s *Server) fetchTree(ctx context.Context, id, dir string) ([]byte, int, error) {
	if path.Clean(dir) == "/" || !path.IsAbs(dir) {
		return nil, 0, fmt.Errorf("path %q: give an absolute directory below /", dir)
	}
	w := &capped{max: maxTree}
	_, omitted, err := s.Client.DownloadTarCounted(ctx, id, dir, w)
	if w.over {
		return nil, 0, fmt.Errorf("limit_exceeded: the tree of %s is more than %d bytes as a tar; download a subdirectory, or GET /v1/sandboxes/%s/files/tar", dir, maxTree, id)
	}
	if err != nil {
		return nil, 0, err
	}
	return w.b.Bytes(), omitted, nil
}

// capped keeps at most max bytes and fails the write past them.
type capped struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.b.Len()+len(p) > c.max {
		c.over = true
		return 0, errors.New("tree too big")
	}
	return c.b.Write(p)
}

// downloadTree answers list_files with tar: a link to the tree's
// resource, with its size and what the policy left out.
func (s *Server) downloadTree(ctx context.Context, id, dir string) (*mcpsdk.CallToolResult, any, error) {
	b, omitted, err := s.fetchTree(ctx, id, dir)
	if err != nil {
		return nil, nil, err
	}
	uri, size := treeURI(id, dir), int64(len(b))
	text := fmt.Sprintf("the tree of %s: a %d-byte tar, %d entries left out by policy; read %s with resources/read", dir, size, omitted, uri)
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text},
			&mcpsdk.ResourceLink{URI: uri, Name: path.Base(dir) + ".tar", Title: "tree of " + dir, MIMEType: "application/x-tar", Size: &size}}},
		map[string]any{"path": dir, "tar": uri, "bytes": size, "omitted": omitted}, nil
}

// readTreeResource serves airlock://sandboxes/ID/tree/DIR (DIR without
// its leading slash) as a tar blob, at most maxTree bytes.
func (s *Server) readTreeResource(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	rest, ok := strings.CutPrefix(req.Params.URI, "airlock://sandboxes/")
	id, dir, ok2 := strings.Cut(rest, "/tree/")
	if !ok || !ok2 || id == "" || dir == "" {
		return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
	}
	dir, err := url.PathUnescape(dir)
	if err != nil {
		return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
	}
	b, _, err := s.fetchTree(ctx, id, "/"+dir)
	if err != nil {
		return nil, err
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/x-tar", Blob: b}}}, nil
}

// bundleOf is start_task's bundle: a file in a sandbox, named by its
// resource URI (one uploaded with upload_tree, or made there with git
// bundle create), streamed from the daemon's file API as this client
// reads files (policy applies); or base64, at most maxTree bytes. stop
// ends the stream.
func (s *Server) bundleOf(ctx context.Context, v string) (io.Reader, func(), error) {
	if rest, ok := strings.CutPrefix(v, "airlock://sandboxes/"); ok {
		id, p, ok := strings.Cut(rest, "/files/")
		p, err := url.PathUnescape(p)
		if !ok || id == "" || p == "" || err != nil {
			return nil, nil, fmt.Errorf("bundle %q: want airlock://sandboxes/ID/files/PATH", v)
		}
		pr, pw := io.Pipe()
		go func() {
			_, err := s.Client.ReadFile(ctx, id, "/"+p, pw)
			pw.CloseWithError(err)
		}()
		// A file that cannot be read (none, or one the policy keeps from
		// this client) fails here, with its own error, before a task is
		// asked for.
		br := bufio.NewReaderSize(pr, 64<<10)
		if _, err := br.Peek(1); err != nil {
			pr.Close()
			if err == io.EOF {
				err = fmt.Errorf("bundle %s is an empty file", v)
			}
			return nil, nil, err
		}
		return br, func() { pr.Close() }, nil
	}
	if n := base64.StdEncoding.DecodedLen(len(v)); n > maxTree+2 {
		return nil, nil, fmt.Errorf("limit_exceeded: the bundle is about %d bytes; at most %d as base64 (write it to a sandbox and give its airlock:// file URI, or POST /v1/tasks)", n, maxTree)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle is neither base64 nor an airlock://sandboxes/ID/files/PATH URI: %v", err)
	}
	// (the length check above is base64's estimate, up to 2 bytes over)
	if len(b) > maxTree {
		return nil, nil, fmt.Errorf("limit_exceeded: the bundle is %d bytes; at most %d as base64 (write it to a sandbox and give its airlock:// file URI, or POST /v1/tasks)", len(b), maxTree)
	}
	return bytes.NewReader(b), func() {}, nil
}
