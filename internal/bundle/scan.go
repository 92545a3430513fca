package bundle

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// LargeArtifact is the size above which an artifact is Large: listed in
// the bundle but not copied into it.
const LargeArtifact = 10 << 20

// MaxPath bounds a bundle entry's path, in bytes.
const MaxPath = 4096

// sniffLen is how much of an artifact decides between text and binary.
const sniffLen = 8 << 10

// ScanArtifact classifies a file the run left in the workspace. path is
// relative to /workspace; data is its content, or at least its first 8 KiB
// when it is large (size is the real size); for a symlink, data is ignored
// for typing and symlink says so. find is the secret detector: it returns
// the kinds of secret it sees in data (never the values), and may be nil.
//
// An artifact is Included (copied into the bundle) only when it is not
// large, holds no finding, is not a symlink or an archive (its compressed
// contents would hide a secret from find) and its path is one SafePath
// accepts; Path is then the cleaned path. Type is decided in this order:
// symlink, executable (ELF, Mach-O, PE), archive (zip, gzip, tar, xz,
// bzip2, 7z, zstd, rar, ar), then binary (a NUL or invalid UTF-8 in the
// first 8 KiB) or text. A "#!" script is text: whether it is executable
// depends on its mode, which the caller knows and this function does not.
func ScanArtifact(path string, data []byte, symlink bool, size int64, find func([]byte) []string) Artifact {
	a := Artifact{Path: path, Size: size, Large: size > LargeArtifact}
	clean, perr := SafePath(path)
	if perr == nil {
		a.Path = clean
	}
	switch {
	case symlink:
		a.Type = "symlink"
	case isExecutable(data):
		a.Type = "executable"
	case isArchive(data):
		a.Type = "archive"
	case isBinary(data, size):
		a.Type = "binary"
	default:
		a.Type = "text"
	}
	if find != nil && len(data) > 0 {
		for _, k := range find(data) {
			a.Findings = appendNew(a.Findings, k)
		}
		slices.Sort(a.Findings)
	}
	a.Included = perr == nil && !a.Large && len(a.Findings) == 0 && !symlink && a.Type != "archive"
	return a
}

func isExecutable(b []byte) bool {
	if bytes.HasPrefix(b, []byte("\x7fELF")) || bytes.HasPrefix(b, []byte("MZ")) {
		return true
	}
	if len(b) < 8 {
		return false
	}
	switch binary.BigEndian.Uint32(b) {
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe: // Mach-O, 32 and 64 bit, either byte order
		return true
	case 0xcafebabe:
		// A fat Mach-O binary, or a Java class file: the next word is the
		// number of architectures (a handful) or the class file's version
		// (45 and up).
		n := binary.BigEndian.Uint32(b[4:])
		return n > 0 && n < 45
	}
	return false
}

var archiveMagic = [][]byte{
	[]byte("PK\x03\x04"), []byte("PK\x05\x06"), // zip (and jar, docx...), empty zip
	{0x1f, 0x8b},                       // gzip
	{0xfd, '7', 'z', 'X', 'Z', 0x00},   // xz
	[]byte("BZh"),                      // bzip2
	{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}, // 7z
	{0x28, 0xb5, 0x2f, 0xfd},           // zstd
	[]byte("Rar!\x1a\x07"),             // rar
	[]byte("!<arch>\n"),                // ar (.a, .deb)
}

func isArchive(b []byte) bool {
	for _, m := range archiveMagic {
		if bytes.HasPrefix(b, m) {
			return true
		}
	}
	return len(b) >= 262 && string(b[257:262]) == "ustar"
}

// isBinary looks at the first 8 KiB of b, the start of a file of size bytes.
func isBinary(b []byte, size int64) bool {
	head := b[:min(len(b), sniffLen)]
	more := len(b) > len(head) || int64(len(head)) < size
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 {
			// A character cut in two by the 8 KiB boundary is not invalid.
			return !(more && len(head)-i < utf8.UTFMax && !utf8.FullRune(head[i:]))
		}
		i += n
	}
	return false
}

// ErrUnsafePath is what SafePath refuses (it is also errdefs.ErrInvalid).
var ErrUnsafePath = fmt.Errorf("unsafe bundle path: %w", errdefs.ErrInvalid)

// SafePath returns p as a bundle entry's path: relative, slash-separated
// and clean ("a//b/./c" becomes "a/b/c"). It refuses (ErrUnsafePath) an
// empty path or one that names the root, an absolute path, any ".."
// element (even one Clean would remove), a NUL, a backslash (a separator
// elsewhere) and a path over MaxPath bytes.
func SafePath(p string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: %q: %s", ErrUnsafePath, trimForError(p), why)
	}
	switch {
	case p == "":
		return bad("empty")
	case len(p) > MaxPath:
		return bad(fmt.Sprintf("longer than %d bytes", MaxPath))
	case strings.IndexByte(p, 0) >= 0:
		return bad("contains NUL")
	case strings.IndexByte(p, '\\') >= 0:
		return bad("contains a backslash")
	case strings.HasPrefix(p, "/"):
		return bad("absolute")
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return bad(`has a ".." element`)
		}
	}
	c := path.Clean(p)
	if c == "." {
		return bad("names the root")
	}
	return c, nil
}

// trimForError keeps an error message about a hostile path short.
func trimForError(p string) string {
	const n = 100
	if len(p) <= n {
		return p
	}
	return p[:n] + "..."
}
