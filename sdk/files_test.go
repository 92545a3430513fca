package sdk

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
)

// DownloadTarCounted reports the entries the daemon left out, from the
// Airlock-Omitted trailer; DownloadTar still works as before.
func TestDownloadTarCounted(t *testing.T) {
	d := newFake(t)
	trailer := "2"
	d.override = func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/sandboxes/sb-1/files/tar" || r.URL.Query().Get("path") != "/workspace" {
			writeErr(w, 404, CodeNotFound, "unexpected %s %s", r.Method, r.URL)
			return
		}
		w.Header().Set("Trailer", OmittedTrailer)
		w.Header().Set("Content-Type", "application/x-tar")
		_, _ = w.Write([]byte("tar bytes"))
		d.mu.Lock()
		v := trailer
		d.mu.Unlock()
		if v != "" {
			w.Header().Set(OmittedTrailer, v)
		}
	}
	c := d.client(t)
	for _, tc := range []struct {
		trailer string
		want    int
		err     string
	}{{"2", 2, ""}, {"", 0, ""}, {"0", 0, ""}, {"x", 0, "malformed Airlock-Omitted trailer"}, {"-1", 0, "malformed"}} {
		d.mu.Lock()
		trailer = tc.trailer
		d.mu.Unlock()
		var buf bytes.Buffer
		n, omitted, err := c.DownloadTarCounted(context.Background(), "sb-1", "/workspace", &buf)
		if buf.String() != "tar bytes" || n != 9 || omitted != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("trailer %q: %d %d %v %q, want %d omitted, error %q", tc.trailer, n, omitted, err, buf.String(), tc.want, tc.err)
		}
	}
	d.mu.Lock()
	trailer = "3"
	d.mu.Unlock()
	var buf bytes.Buffer
	if n, err := c.DownloadTar(context.Background(), "sb-1", "/workspace", &buf); err != nil || n != 9 {
		t.Errorf("DownloadTar: %d %v", n, err)
	}
}
