package depcache

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/lockfile"
)

// pip keeps its downloads in its HTTP cache (pip's vendored CacheControl
// over a file cache), one entry per URL at DIR/K0/K1/K2/K3/K4/KEY, KEY
// the hex SHA-224 of the URL: DIR "http" before pip 23.3, the response
// body inside the entry (a "cc=4," msgpack map); "http-v2" since, the
// body in KEY.body beside it. pip reads a fresh entry without asking the
// index again, and in hash-checking mode (--require-hashes) hashes what
// it reads like any download. A find-links directory would need no URL,
// but pip prefers an index's link with a matching hash over a local
// file of the same version (measured with pip 23.0.1), so it would not
// be used.
//
// The store keeps each body the base commit's requirements.txt pins by
// --hash=sha256 under its KEY (KEY[:2]/KEY), never the sandbox's entry
// itself: what pip reads back (status, headers, freshness) is the
// daemon's, written at each seed in both layouts. The KEY is the task's
// claim (the URL is not in the entry); a pinned body under another URL's
// KEY can only make a later pip refuse that download by its hash (the
// requirement's, or the index link's #sha256= without --require-hashes).

// pipCache is pip's cache directory in the sandbox user's home (pip's
// default; PIP_CACHE_DIR or XDG_CACHE_HOME set elsewhere moves it, and
// the cache is then neither seeded nor collected).
const pipCache = ".cache/pip"

// pipFresh is the freshness the daemon's entries claim (a pinned file
// never changes), in seconds, as PyPI's file host sends it.
const pipFresh = 365000000

// pipJudge keeps pip cache bodies whose sha256 the base commit's
// requirements.txt pins.
type pipJudge struct{ pins map[string]bool } // lower-case hex sha256

func newPipJudge(req []byte) (*pipJudge, error) {
	h, ok, err := lockfile.Integrity("requirements.txt", req)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("requirements.txt pins no --hash (pip checks nothing then, and neither could the cache)")
	}
	j := &pipJudge{pins: map[string]bool{}}
	for _, v := range h {
		for _, s := range strings.Fields(v) {
			if algo, sum, ok := strings.Cut(s, ":"); ok && algo == "sha256" && len(sum) == 64 {
				j.pins[strings.ToLower(sum)] = true
			}
		}
	}
	return j, nil
}

// pipKey is the KEY of an entry's rel (below pip's cache directory),
// with legacy true for an "http" entry (the body inside); ok false for
// anything else (http-v2 metadata, the wheel cache, selfcheck).
func pipKey(rel string) (key string, legacy, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) != 7 || parts[0] != "http" && parts[0] != "http-v2" {
		return "", false, false
	}
	legacy = parts[0] == "http"
	key = parts[6]
	if !legacy {
		if key, ok = strings.CutSuffix(key, ".body"); !ok {
			return "", false, false
		}
	}
	if len(key) != 56 || strings.Trim(key, "0123456789abcdef") != "" {
		return "", false, false
	}
	for i := range 5 {
		if parts[1+i] != key[i:i+1] {
			return "", false, false
		}
	}
	return key, legacy, true
}

// Name: the store keeps a body as KEY[:2]/KEY.
func (j *pipJudge) Name(rel string) string {
	key, _, ok := pipKey(rel)
	if !ok {
		return ""
	}
	return key[:2] + "/" + key
}

// Judge reads the body (out of a legacy entry, which f is rewritten to)
// and keeps it when its sha256 is pinned.
func (j *pipJudge) Judge(rel, f string) (map[string][]byte, string, bool) {
	_, legacy, ok := pipKey(rel)
	if !ok {
		return nil, "", false
	}
	if legacy {
		entry, err := os.ReadFile(f)
		if err != nil {
			return nil, err.Error(), false
		}
		body, err := pipEntryBody(entry)
		if err != nil {
			return nil, "not a pip cache entry: " + err.Error(), false
		}
		if err := os.WriteFile(f, body, 0o600); err != nil {
			return nil, err.Error(), false
		}
	}
	fh, err := os.Open(f)
	if err != nil {
		return nil, err.Error(), false
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return nil, err.Error(), false
	}
	if !j.pins[hex.EncodeToString(h.Sum(nil))] {
		return nil, "its sha256 is not a --hash of the base commit's requirements.txt (an index page, or a file it does not pin)", false
	}
	return nil, "", true
}

// pipEntryBody is the "body" of a legacy entry's "response" map.
func pipEntryBody(entry []byte) ([]byte, error) {
	data, ok := bytes.CutPrefix(entry, []byte("cc=4,"))
	if !ok {
		return nil, errors.New("not a version 4 entry")
	}
	m, err := (&msgReader{b: data}).value(0)
	if err != nil {
		return nil, err
	}
	top, _ := m.(map[string]any)
	resp, _ := top["response"].(map[string]any)
	body, ok := resp["body"].([]byte)
	if !ok {
		return nil, errors.New("no response body")
	}
	return body, nil
}

// writePipSeed writes the tar the sandbox's pip cache is seeded with:
// each stored body as an "http" entry and an "http-v2" one, with the
// daemon's own headers (dated now, fresh for pipFresh).
func writePipSeed(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	var keys []string
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() && len(de.Name()) == 56 {
			keys = append(keys, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(keys)
	dirs := map[string]bool{}
	date := time.Now().UTC().Format(time.RFC1123)
	date = strings.Replace(date, "UTC", "GMT", 1)
	for _, p := range keys {
		if err := writePipEntries(tw, p, date, dirs); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writePipEntries(tw *tar.Writer, p, date string, dirs map[string]bool) error {
	key := filepath.Base(p)
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	size := fi.Size()
	sub := path.Join(key[0:1], key[1:2], key[2:3], key[3:4], key[4:5])
	legacyHead, tail := pipEntryParts(size, date)
	v2Head, _ := pipEntryParts(0, date)
	for _, d := range []string{"http", "http-v2"} {
		if err := tarDirs(tw, path.Join(d, sub), dirs); err != nil {
			return err
		}
	}
	files := []struct {
		name       string
		head, tail []byte
		body       bool
	}{
		{path.Join("http", sub, key), legacyHead, tail, true},
		{path.Join("http-v2", sub, key), v2Head, tail, false},
		{path.Join("http-v2", sub, key+".body"), nil, nil, true},
	}
	for _, f := range files {
		n := int64(len(f.head) + len(f.tail))
		if f.body {
			n += size
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: n, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.head); err != nil {
			return err
		}
		if f.body {
			if err := copyFile(tw, p, size); err != nil {
				return err
			}
		}
		if _, err := tw.Write(f.tail); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(w io.Writer, p string, size int64) error {
	fh, err := os.Open(p)
	if err != nil {
		return err
	}
	defer fh.Close()
	_, err = io.CopyN(w, fh, size)
	return err
}

// tarDirs writes d and its parents' directory entries once each.
func tarDirs(tw *tar.Writer, d string, dirs map[string]bool) error {
	if d == "." || d == "/" || dirs[d] {
		return nil
	}
	if err := tarDirs(tw, path.Dir(d), dirs); err != nil {
		return err
	}
	dirs[d] = true
	return tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir})
}

// pipEntryParts is a "cc=4," entry of a 200 response whose body of size
// bytes goes between head and tail: {"response": {"body": BIN, "headers":
// {...}, "status": 200, "version": 11, "reason": "OK", "decode_content":
// false}, "vary": {}} (CacheControl's layout; "strict", which newer
// urllib3 no longer takes, is left out).
func pipEntryParts(size int64, date string) (head, tail []byte) {
	var w msgWriter
	w.b = append(w.b, "cc=4,"...)
	w.mapHeader(2)
	w.str("response")
	w.mapHeader(6)
	w.str("body")
	w.binHeader(size)
	head = w.b
	w = msgWriter{}
	w.str("headers")
	hdrs := [][2]string{
		{"Content-Type", "application/octet-stream"},
		{"Content-Length", strconv.FormatInt(size, 10)},
		{"Cache-Control", "max-age=" + strconv.Itoa(pipFresh) + ", immutable, public"},
		{"Date", date},
	}
	w.mapHeader(len(hdrs))
	for _, h := range hdrs {
		w.str(h[0])
		w.str(h[1])
	}
	w.str("status")
	w.uint(200)
	w.str("version")
	w.uint(11)
	w.str("reason")
	w.str("OK")
	w.str("decode_content")
	w.b = append(w.b, 0xc2) // false
	w.str("vary")
	w.mapHeader(0)
	return head, w.b
}

// msgWriter writes the msgpack subset of pipEntryParts.
type msgWriter struct{ b []byte }

func (w *msgWriter) mapHeader(n int) {
	if n < 16 {
		w.b = append(w.b, 0x80|byte(n))
		return
	}
	w.b = append(w.b, 0xde, byte(n>>8), byte(n))
}

func (w *msgWriter) str(s string) {
	switch n := len(s); {
	case n < 32:
		w.b = append(w.b, 0xa0|byte(n))
	case n < 256:
		w.b = append(w.b, 0xd9, byte(n))
	default:
		w.b = append(w.b, 0xda, byte(n>>8), byte(n))
	}
	w.b = append(w.b, s...)
}

func (w *msgWriter) binHeader(n int64) {
	switch {
	case n < 256:
		w.b = append(w.b, 0xc4, byte(n))
	case n < 65536:
		w.b = append(w.b, 0xc5, byte(n>>8), byte(n))
	default:
		w.b = append(w.b, 0xc6, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func (w *msgWriter) uint(n uint16) {
	if n < 128 {
		w.b = append(w.b, byte(n))
		return
	}
	w.b = append(w.b, 0xcd, byte(n>>8), byte(n))
}

// msgReader reads the msgpack a CacheControl entry is made of: maps,
// arrays, strings, binaries, integers, booleans, nil and floats; nesting
// and lengths are bounded by the input.
type msgReader struct {
	b []byte
	i int
}

var errMsg = errors.New("bad msgpack")

func (r *msgReader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.i) {
		return nil, errMsg
	}
	s := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return s, nil
}

func (r *msgReader) uintN(size int) (uint64, error) {
	s, err := r.take(uint64(size))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range s {
		n = n<<8 | uint64(c)
	}
	return n, nil
}

func (r *msgReader) value(depth int) (any, error) {
	if depth > 16 {
		return nil, errMsg
	}
	t, err := r.take(1)
	if err != nil {
		return nil, err
	}
	c := t[0]
	switch {
	case c <= 0x7f || c >= 0xe0:
		return int64(int8(c)), nil
	case c&0xf0 == 0x80:
		return r.mapOf(uint64(c&0x0f), depth)
	case c&0xf0 == 0x90:
		return r.arrayOf(uint64(c&0x0f), depth)
	case c&0xe0 == 0xa0:
		s, err := r.take(uint64(c & 0x1f))
		return string(s), err
	}
	return r.typed(c, depth)
}

// sizes of the length (or value) that follows each typed marker.
var msgSizes = map[byte]int{
	0xc4: 1, 0xc5: 2, 0xc6: 4, // bin
	0xd9: 1, 0xda: 2, 0xdb: 4, // str
	0xdc: 2, 0xdd: 4, // array
	0xde: 2, 0xdf: 4, // map
	0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, // uint
	0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8, // int
	0xca: 4, 0xcb: 8, // float
}

func (r *msgReader) typed(c byte, depth int) (any, error) {
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2, 0xc3:
		return c == 0xc3, nil
	}
	size, ok := msgSizes[c]
	if !ok {
		return nil, fmt.Errorf("%w: type 0x%02x", errMsg, c)
	}
	n, err := r.uintN(size)
	if err != nil {
		return nil, err
	}
	switch c {
	case 0xc4, 0xc5, 0xc6:
		return r.take(n)
	case 0xd9, 0xda, 0xdb:
		s, err := r.take(n)
		return string(s), err
	case 0xdc, 0xdd:
		return r.arrayOf(n, depth)
	case 0xde, 0xdf:
		return r.mapOf(n, depth)
	}
	return n, nil // a number: its value is not needed
}

func (r *msgReader) mapOf(n uint64, depth int) (map[string]any, error) {
	if n > uint64(len(r.b)-r.i) {
		return nil, errMsg
	}
	m := make(map[string]any, n)
	for range n {
		k, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if ks, ok := k.(string); ok {
			m[ks] = v
		}
	}
	return m, nil
}

func (r *msgReader) arrayOf(n uint64, depth int) ([]any, error) {
	if n > uint64(len(r.b)-r.i) {
		return nil, errMsg
	}
	a := make([]any, 0, n)
	for range n {
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	return a, nil
}
