package depcache

import (
	"archive/zip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/lockfile"
)

// A judge decides of one file a task's cache holds whether the store
// may keep it: its path (relative to the ecosystem's cache root, as the
// package manager lays it out) and its content, hashed by the judge
// itself, must be what the base commit's lockfile pins. extra are files
// the store writes beside it, made by the daemon from what it verified
// (never copied from the sandbox).
type judge interface {
	// Name is where the store keeps rel ("": nowhere, not read at all).
	Name(rel string) string
	// Judge reads the file at host path f (a temporary copy of the
	// sandbox's) named rel; ok false with the reason when it is refused,
	// with none when it is not a file the store keeps at all.
	Judge(rel string, f string) (extra map[string][]byte, reason string, ok bool)
}

// goJudge keeps Go module zips and go.mod files of cache/download whose
// h1: hash go.sum holds for that module and version.
type goJudge struct {
	zips map[string][]string // "mod@ver" -> go.sum's h1: hashes of the zip
	mods map[string][]string // "mod@ver" -> of its go.mod
}

// newGoJudge reads go.sum: the zips' hashes through lockfile.Integrity,
// the go.mod lines (which Integrity leaves out) here.
func newGoJudge(gosum []byte) (*goJudge, error) {
	h, _, err := lockfile.Integrity("go.sum", gosum)
	if err != nil {
		return nil, err
	}
	j := &goJudge{zips: map[string][]string{}, mods: map[string][]string{}}
	for k, v := range h {
		j.zips[k] = strings.Fields(v)
	}
	for _, line := range strings.Split(string(gosum), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && strings.HasSuffix(f[1], "/go.mod") {
			k := f[0] + "@" + strings.TrimSuffix(f[1], "/go.mod")
			j.mods[k] = append(j.mods[k], f[2])
		}
	}
	return j, nil
}

// Name: the store's layout is the module cache's.
func (j *goJudge) Name(rel string) string { return rel }

// Judge: "ESCAPED/MODULE/@v/VERSION.zip" or ".mod"; the .ziphash and
// .info beside a kept zip are the daemon's (the go command trusts a
// cached .ziphash without hashing the zip again).
func (j *goJudge) Judge(rel, f string) (map[string][]byte, string, bool) {
	dir, file := path.Split(rel)
	if !strings.HasSuffix(dir, "/@v/") || strings.HasPrefix(rel, "sumdb/") {
		return nil, "", false
	}
	mod, err1 := unescapeGo(strings.TrimSuffix(dir, "/@v/"))
	ext := path.Ext(file)
	ver, err2 := unescapeGo(strings.TrimSuffix(file, ext))
	if err1 != nil || err2 != nil || ver == "" {
		return nil, "not an escaped module path and version", false
	}
	key := mod + "@" + ver
	switch ext {
	case ".zip":
		h, err := hashZip(f)
		if err != nil {
			return nil, "not a zip: " + err.Error(), false
		}
		if !slices.Contains(j.zips[key], h) {
			return nil, "its h1: hash is not go.sum's for " + key, false
		}
		info, _ := json.Marshal(map[string]string{"Version": ver})
		base := strings.TrimSuffix(rel, ext)
		return map[string][]byte{base + ".ziphash": []byte(h), base + ".info": info}, "", true
	case ".mod":
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err.Error(), false
		}
		if !slices.Contains(j.mods[key], hash1(map[string][]byte{"go.mod": data})) {
			return nil, "its h1: hash is not go.sum's /go.mod hash for " + key, false
		}
		return nil, "", true
	}
	return nil, "", false // .info, .ziphash, .lock, list: the daemon's own, or not kept
}

// hash1 is go.sum's "h1:" hash of a file tree: SHA-256 over the sorted
// lines "SHA256HEX  NAME\n" of its files.
func hash1(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, n := range names {
		h := sha256.Sum256(files[n])
		fmt.Fprintf(sum, "%x  %s\n", h, n)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(sum.Sum(nil))
}

// hashZip is hash1 of a module zip's files, by their names in the zip
// (module@version/...), as go.sum hashes it; a name with a newline
// (which would forge a line) is refused.
func hashZip(p string) (string, error) {
	z, err := zip.OpenReader(p)
	if err != nil {
		return "", err
	}
	defer z.Close()
	type line struct{ name, hex string }
	var lines []line
	for _, zf := range z.File {
		if strings.ContainsAny(zf.Name, "\n") {
			return "", errors.New("a file name with a newline")
		}
		r, err := zf.Open()
		if err != nil {
			return "", err
		}
		h := sha256.New()
		_, err = io.Copy(h, io.LimitReader(r, maxFile+1))
		r.Close()
		if err != nil {
			return "", err
		}
		lines = append(lines, line{zf.Name, hex.EncodeToString(h.Sum(nil))})
	}
	sort.Slice(lines, func(a, b int) bool { return lines[a].name < lines[b].name })
	sum := sha256.New()
	for _, l := range lines {
		fmt.Fprintf(sum, "%s  %s\n", l.hex, l.name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(sum.Sum(nil)), nil
}

// unescapeGo undoes the module cache's case escaping ("!a" is "A"),
// refusing upper case, "..", and anything a path could be misread by.
func unescapeGo(s string) (string, error) {
	if s == "" || strings.Contains(s, "..") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return "", errors.New("bad path")
	}
	var b strings.Builder
	bang := false
	for _, r := range s {
		switch {
		case bang && r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			bang = false
		case bang, r >= 'A' && r <= 'Z', r < 0x21, r == 0x7f:
			return "", errors.New("bad escape")
		case r == '!':
			bang = true
		default:
			b.WriteRune(r)
		}
	}
	if bang {
		return "", errors.New("bad escape")
	}
	return b.String(), nil
}

// npmJudge keeps npm's content-addressed tarballs (_cacache/content-v2)
// whose sha512 integrity package-lock.json holds. The index (keyed by
// URL) is not kept: npm finds a tarball whose integrity the lockfile
// names by that digest.
type npmJudge struct{ integrity map[string]bool }

func newNPMJudge(lock []byte) (*npmJudge, error) {
	h, _, err := lockfile.Integrity("package-lock.json", lock)
	if err != nil {
		return nil, err
	}
	j := &npmJudge{integrity: map[string]bool{}}
	for _, v := range h {
		for _, s := range strings.Fields(v) {
			j.integrity[s] = true
		}
	}
	return j, nil
}

// Name: the store's layout is npm's.
func (j *npmJudge) Name(rel string) string { return rel }

// Judge: "content-v2/sha512/AB/CD/REST" whose content hashes to the
// digest its path names, a digest the lockfile pins.
func (j *npmJudge) Judge(rel, f string) (map[string][]byte, string, bool) {
	parts := strings.Split(rel, "/")
	if len(parts) != 5 || parts[0] != "content-v2" || parts[1] != "sha512" || len(parts[2]) != 2 || len(parts[3]) != 2 {
		return nil, "", false // the index, tmp: not kept
	}
	want := parts[2] + parts[3] + parts[4]
	fh, err := os.Open(f)
	if err != nil {
		return nil, err.Error(), false
	}
	defer fh.Close()
	h := sha512.New()
	if _, err := io.Copy(h, fh); err != nil {
		return nil, err.Error(), false
	}
	sum := h.Sum(nil)
	if hex.EncodeToString(sum) != want {
		return nil, "its content does not hash to its name", false
	}
	if !j.integrity["sha512-"+base64.StdEncoding.EncodeToString(sum)] {
		return nil, "its integrity is not in package-lock.json", false
	}
	return nil, "", true
}
