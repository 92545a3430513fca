package watch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The changes a directory watch reports, as the records keep them: a new
// name, writes (not the close after them), a removal, a rename (away,
// then the new name's creation), an attribute change; reads none; and a
// whole-file write under the upload prefix as the file's creation and
// write, its temporary name never told.
func TestRecEvents(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	must(t, os.Mkdir(root, 0o755))
	var mu sync.Mutex
	var got []string
	w, err := New([]string{root}, nil, func(recs []Rec, lost bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if ev := r.Event(); ev != "" {
				got = append(got, ev+" "+strings.TrimPrefix(r.Path(), root+"/"))
			}
		}
	})
	must(t, err)
	t.Cleanup(w.Close)
	p := func(rel string) string { return filepath.Join(root, rel) }

	must(t, os.WriteFile(p("a"), []byte("x"), 0o644))
	_, err = os.ReadFile(p("a"))
	must(t, err)
	must(t, os.Chmod(p("a"), 0o600))
	must(t, os.Rename(p("a"), p("b")))
	must(t, os.Remove(p("b")))
	// as fileops writes a whole file: a temporary name, renamed over
	tmp := p(UploadPrefix + "0123456789abcdef")
	must(t, os.WriteFile(tmp, []byte("upload"), 0o644))
	must(t, os.Rename(tmp, p("up")))
	must(t, os.Mkdir(p("d"), 0o755))
	w.Drain()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"create a", "write a", "chmod a", "rename a", "create b", "remove b", "create up", "write up", "create d"}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}
