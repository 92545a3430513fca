package tarfilter

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

type entry struct {
	name, link string
	typ        byte
	body       string
}

func archive(t *testing.T, es ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body))}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func names(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
}

func TestFilterOmits(t *testing.T) {
	in := archive(t, entry{name: "a", body: "1"}, entry{name: "secret/key", body: "2"}, entry{name: "b", body: "3"})
	var out bytes.Buffer
	omitted, err := Filter("/workspace", bytes.NewReader(in), &out, func(p string) (bool, error) {
		return strings.HasPrefix(p, "/workspace/secret/"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(omitted, []string{"/workspace/secret/key"}) {
		t.Errorf("omitted %q", omitted)
	}
	if got := names(t, out.Bytes()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("kept %q", got)
	}
}

func TestFilterErrors(t *testing.T) {
	in := archive(t, entry{name: "a", body: "1"})
	boom := errors.New("boom")
	if _, err := Filter("/d", bytes.NewReader(in), io.Discard, func(string) (bool, error) { return false, boom }); err != boom {
		t.Errorf("judge's error: %v", err)
	}
	if _, err := Filter("/d", strings.NewReader("not a tar archive, far too short"), io.Discard, func(string) (bool, error) { return false, nil }); err == nil {
		t.Error("a broken archive passed")
	}
	if _, err := Filter("/d", bytes.NewReader(in), failWriter{}, func(string) (bool, error) { return false, nil }); err == nil {
		t.Error("a failing writer passed")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("write failed") }

func TestCheckAllows(t *testing.T) {
	in := archive(t, entry{name: "x/", typ: tar.TypeDir}, entry{name: "x/f", body: "hi"}, entry{name: "x/l", link: "x/f", typ: tar.TypeLink})
	var seen []string
	var out bytes.Buffer
	var sum Summary
	err := Check("/workspace", bytes.NewReader(in), &out, func(p string) error { seen = append(seen, p); return nil }, &sum)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/workspace/x", "/workspace/x/f", "/workspace/x/l", "/workspace/x/f"}
	if !slices.Equal(seen, want) {
		t.Errorf("judged %q, want %q", seen, want)
	}
	if sum.N != 3 || !slices.Equal(sum.Paths, want[:3]) {
		t.Errorf("summary %+v", sum)
	}
	if got := names(t, out.Bytes()); len(got) != 3 {
		t.Errorf("copied %q", got)
	}
}

// Hostile archives: each is refused as invalid at its bad entry, the
// entries before it copied.
func TestCheckRefuses(t *testing.T) {
	cases := []struct {
		name string
		es   []entry
	}{
		{"climbs out", []entry{{name: "ok"}, {name: "../escape"}}},
		{"climbs out after clean", []entry{{name: "a/../../escape"}}},
		{"absolute", []entry{{name: "/etc/passwd"}}},
		{"dot dot", []entry{{name: ".."}}},
		{"below its own symlink", []entry{{name: "l", link: "/etc", typ: tar.TypeSymlink}, {name: "l/passwd"}}},
		{"hard link out", []entry{{name: "h", link: "../../etc/shadow", typ: tar.TypeLink}}},
		{"hard link absolute", []entry{{name: "h", link: "/etc/shadow", typ: tar.TypeLink}}},
	}
	for _, tc := range cases {
		var sum Summary
		err := Check("/workspace", bytes.NewReader(archive(t, tc.es...)), io.Discard, func(string) error { return nil }, &sum)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", tc.name, err)
		}
		if sum.N != len(tc.es)-1 {
			t.Errorf("%s: %d entries copied, want %d", tc.name, sum.N, len(tc.es)-1)
		}
	}
}

func TestCheckAllowRefusal(t *testing.T) {
	no := errors.New("denied")
	in := archive(t, entry{name: "a"}, entry{name: "b"})
	var sum Summary
	err := Check("/w", bytes.NewReader(in), io.Discard, func(p string) error {
		if p == "/w/b" {
			return no
		}
		return nil
	}, &sum)
	if err != no || sum.N != 1 {
		t.Errorf("%v, %d copied", err, sum.N)
	}
	// A hard link whose target is refused is refused.
	in = archive(t, entry{name: "h", link: "secret", typ: tar.TypeLink})
	err = Check("/w", bytes.NewReader(in), io.Discard, func(p string) error {
		if p == "/w/secret" {
			return no
		}
		return nil
	}, &Summary{})
	if err != no {
		t.Errorf("hard link to a refused target: %v", err)
	}
	if err := Check("/w", strings.NewReader("garbage that is not a tar header"), io.Discard, func(string) error { return nil }, &Summary{}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a broken archive: %v", err)
	}
	if err := Check("/w", bytes.NewReader(archive(t, entry{name: "a", body: "x"})), failWriter{}, func(string) error { return nil }, &Summary{}); err == nil {
		t.Error("a failing writer passed")
	}
}

func TestSummaryKeepsMaxPaths(t *testing.T) {
	es := make([]entry, MaxPaths+5)
	for i := range es {
		es[i] = entry{name: "f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + strconv.Itoa(i)}
	}
	var sum Summary
	if err := Check("/w", bytes.NewReader(archive(t, es...)), io.Discard, func(string) error { return nil }, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.N != MaxPaths+5 || len(sum.Paths) != MaxPaths {
		t.Errorf("N %d, %d paths", sum.N, len(sum.Paths))
	}
}

func TestSourceAndCounter(t *testing.T) {
	s := NewSource(strings.NewReader("abc"))
	if _, err := io.ReadAll(s); err != nil || s.Cut() {
		t.Errorf("a whole read: %v, cut %v", err, s.Cut())
	}
	s = NewSource(iotest.ErrReader(errors.New("client gone")))
	if _, err := io.ReadAll(s); err == nil || !s.Cut() {
		t.Errorf("a broken read: %v, cut %v", err, s.Cut())
	}
	var buf bytes.Buffer
	c := &Counter{W: &buf}
	c.Write([]byte("hello"))
	c.Write([]byte("!"))
	if c.N != 6 || buf.String() != "hello!" {
		t.Errorf("counted %d: %q", c.N, buf.String())
	}
}
