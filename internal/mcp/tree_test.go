package mcp_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/internal/mcp"
)

// tarOf is a tar of the entries (a name ending in / is a directory).
func tarOf(t *testing.T, entries ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i+1 < len(entries); i += 2 {
		name, body := entries[i], entries[i+1]
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// upload_tree unpacks a tar into the sandbox; list_files with tar links
// the directory's tree, which resources/read gives back as a tar.
func TestTreeUploadAndDownload(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	up := e.ok("upload_tree", map[string]any{"sandbox_id": sb, "path": "/workspace/up", "tar_base64": b64(tarOf(t, "pkg/", "", "pkg/a.txt", "hello\n", "b.txt", "bee\n"))})
	if num(t, up.st, "entries") != 3 || !strings.Contains(up.text, "unpacked 3 entries") {
		t.Fatalf("upload: %q %v", up.text, up.st)
	}
	if r := e.ok("read_file", map[string]any{"sandbox_id": sb, "path": "/workspace/up/pkg/a.txt"}); !strings.Contains(r.text, "hello") {
		t.Fatalf("uploaded file: %q", r.text)
	}

	d := e.ok("list_files", map[string]any{"sandbox_id": sb, "path": "/workspace/up", "tar": true})
	var link *mcpsdk.ResourceLink
	for _, c := range d.Content {
		if l, ok := c.(*mcpsdk.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || link.URI != "airlock://sandboxes/"+sb+"/tree/workspace/up" || link.Size == nil || *link.Size <= 0 || d.st["tar"] != link.URI || num(t, d.st, "omitted") != 0 {
		t.Fatalf("download: %q %v %+v", d.text, d.st, link)
	}
	res, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: link.URI})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/x-tar" {
		t.Fatalf("read tree: %v %+v", err, res)
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(res.Contents[0].Blob))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got[strings.TrimPrefix(h.Name, "./")] = string(body)
	}
	if got["pkg/a.txt"] != "hello\n" || got["b.txt"] != "bee\n" || int64(len(res.Contents[0].Blob)) != *link.Size {
		t.Errorf("tree read back: %v (%d bytes, linked %d)", got, len(res.Contents[0].Blob), *link.Size)
	}
}

// What is not a tar, a compressed one, an empty one, one that climbs out
// of its directory and one past the bound are refused with the reason;
// so are a download of / and one past the bound.
func TestTreeRefusals(t *testing.T) {
	e := newEnv(t)
	sb := e.sandbox()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(tarOf(t, "a.txt", "a"))
	_ = zw.Close()
	args := func(tarB64 string) map[string]any {
		return map[string]any{"sandbox_id": sb, "path": "/workspace", "tar_base64": tarB64}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{args("!!not base64"), "tar_base64 is not base64"},
		{args(b64(gz.Bytes())), "gzip-compressed: send an uncompressed tar"},
		{args(b64(bytes.Repeat([]byte("x"), 1024))), "tar_base64 is not a tar (entry 1"},
		{args(b64(tarOf(t))), "tar_base64 has no entries"},
		{args(b64(tarOf(t, "../evil.txt", "x"))), "invalid"},
		{args(""), `argument "tar_base64" must not be empty`},
		{map[string]any{"sandbox_id": sb, "tar_base64": "eA=="}, `missing properties: ["path"]`},
	} {
		e.fails("upload_tree", c.args, c.want)
	}
	e.fails("read_file", map[string]any{"sandbox_id": sb, "path": "/evil.txt"}, "not_found")
	e.fails("list_files", map[string]any{"sandbox_id": sb, "path": "/", "tar": true}, "give an absolute directory below /")
	e.fails("list_files", map[string]any{"sandbox_id": sb, "path": "workspace", "tar": true}, "give an absolute directory below /")

	defer mcp.SetMaxTree(2048)()
	e.fails("upload_tree", args(b64(tarOf(t, "big.txt", strings.Repeat("y", 4096)))), "limit_exceeded: the tar is about")
	e.ok("write_file", map[string]any{"sandbox_id": sb, "path": "/workspace/big.txt", "content": strings.Repeat("y", 4096)})
	e.fails("list_files", map[string]any{"sandbox_id": sb, "path": "/workspace", "tar": true}, "limit_exceeded: the tree of /workspace is more than 2048 bytes")
	_, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "airlock://sandboxes/" + sb + "/tree/workspace"})
	if err == nil || !strings.Contains(err.Error(), "more than 2048 bytes") {
		t.Errorf("tree resource past the bound: %v", err)
	}
}

// A download leaves out what the policy does not let the agent read (a
// .env, in a sandbox whose policy denies secret access, restored from a
// snapshot of one where it was written) and says how many it left out.
func TestTreeDownloadLeavesOutSecrets(t *testing.T) {
	e := newEnv(t)
	src := e.sandbox()
	e.ok("upload_tree", map[string]any{"sandbox_id": src, "path": "/workspace/sec", "tar_base64": b64(tarOf(t, ".env", "TOKEN=s3cr3t-value\n", "ok.txt", "fine\n"))})
	e.ok("snapshot_sandbox", map[string]any{"sandbox_id": src, "name": "with-env"})
	sb, _ := e.ok("create_sandbox", map[string]any{"template": "with-env", "policy": map[string]any{"classes": map[string]any{"secret": "deny"}}}).st["sandbox_id"].(string)
	d := e.ok("list_files", map[string]any{"sandbox_id": sb, "path": "/workspace/sec", "tar": true})
	if num(t, d.st, "omitted") != 1 || !strings.Contains(d.text, "1 entries left out by policy") {
		t.Fatalf("download: %q %v", d.text, d.st)
	}
	res, err := e.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: d.st["tar"].(string)})
	if err != nil {
		t.Fatal(err)
	}
	blob := string(res.Contents[0].Blob)
	if strings.Contains(blob, "s3cr3t-value") || strings.Contains(blob, ".env") || !strings.Contains(blob, "fine\n") {
		t.Errorf("the tar has the secret, or not the file: %q", blob)
	}
}
