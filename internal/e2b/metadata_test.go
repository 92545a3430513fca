package e2b

import (
	"strings"
	"testing"
)

// File metadata (E2B's X-Metadata-* upload headers, kept as extended
// attributes on E2B) has nowhere to go in airlock's file API: a write
// that carries any is refused whole, naming the header, and writes
// nothing, whatever the header's spelling; stat shows no metadata field.
func TestFileMetadataIsRefused(t *testing.T) {
	d := newDoor(t)
	id, tok := d.create()
	for _, h := range []string{"X-Metadata-Owner", "x-metadata-a", "X-METADATA-", "X-File-Metadata"} {
		resp, b := d.call("POST", "/files?path=/workspace/meta.txt", []byte("data"), envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream", h: "v"}))
		if resp.StatusCode != 400 || !strings.Contains(string(b), "unsupported by airlock: file metadata") {
			t.Errorf("%s: %d %s, want 400 unsupported", h, resp.StatusCode, b)
		}
	}
	if resp, b := d.call("GET", "/files?path=/workspace/meta.txt", nil, envdHeaders(id, tok, nil)); resp.StatusCode != 404 {
		t.Errorf("a refused write wrote: %d %q", resp.StatusCode, b)
	}
	resp, b := d.call("POST", "/files?path=/workspace/plain.txt", []byte("data"), envdHeaders(id, tok, map[string]string{"Content-Type": "application/octet-stream"}))
	if resp.StatusCode != 200 || strings.Contains(string(b), "metadata") {
		t.Errorf("a plain write: %d %s", resp.StatusCode, b)
	}
	resp, b = d.call("POST", "/filesystem.Filesystem/Stat", []byte(`{"path":"/workspace/plain.txt"}`), envdHeaders(id, tok, map[string]string{"Content-Type": "application/json"}))
	if resp.StatusCode != 200 || strings.Contains(string(b), "metadata") {
		t.Errorf("stat: %d %s, want no metadata field", resp.StatusCode, b)
	}
}
