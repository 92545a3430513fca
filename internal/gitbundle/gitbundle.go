// Package gitbundle reads and checks the header of a git bundle (the
// format of gitformat-bundle(5): a signature line, v3's capabilities,
// prerequisites, then references, a blank line and a packfile) before
// git is let near it: a bundle a client uploads names only branches and
// tags with well-formed names, needs no commit it does not carry, and is
// of a kind git clones whole.
package gitbundle

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// Limits of a header: git writes one line per ref, so these bound a
// bundle of a hundred thousand refs.
const (
	MaxHeader = 16 << 20
	MaxRefs   = 100000
)

// Ref is one reference a bundle carries.
type Ref struct {
	OID, Name string
}

// Header is what a bundle says before its pack.
type Header struct {
	Version      int    // 2 or 3
	ObjectFormat string // sha1 or sha256
	Prereqs      []string
	Refs         []Ref
}

// ReadHeader reads r up to the end of the header (the blank line before
// the pack), at most MaxHeader bytes.
func ReadHeader(r io.Reader) (*Header, error) {
	br := bufio.NewReader(io.LimitReader(r, MaxHeader+1))
	read := 0
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		read += len(s)
		if read > MaxHeader {
			return "", invalid("its header is longer than %d MiB", MaxHeader>>20)
		}
		if err != nil {
			return "", invalid("its header ends before the pack")
		}
		return strings.TrimSuffix(s, "\n"), nil
	}
	sig, err := line()
	if err != nil {
		return nil, err
	}
	h := &Header{ObjectFormat: "sha1"}
	switch sig {
	case "# v2 git bundle":
		h.Version = 2
	case "# v3 git bundle":
		h.Version = 3
	default:
		return nil, invalid("it does not start with a v2 or v3 git bundle signature")
	}
	for {
		s, err := line()
		if err != nil {
			return nil, err
		}
		if s == "" {
			break
		}
		if err := h.add(s); err != nil {
			return nil, err
		}
	}
	if len(h.Refs) == 0 {
		return nil, invalid("it carries no reference")
	}
	return h, nil
}

// add takes one header line.
func (h *Header) add(s string) error {
	switch {
	case strings.HasPrefix(s, "@"):
		return h.capability(s[1:])
	case strings.HasPrefix(s, "-"):
		oid, _, _ := strings.Cut(s[1:], " ")
		if len(h.Refs) > 0 || !h.validOID(oid) {
			return invalid("a prerequisite line is not an object id, or follows a reference")
		}
		h.Prereqs = append(h.Prereqs, oid)
		return nil
	}
	oid, name, ok := strings.Cut(s, " ")
	if !ok || !h.validOID(oid) {
		return invalid("a reference line is not an object id and a name")
	}
	if len(h.Refs) >= MaxRefs {
		return invalid("it carries more than %d references", MaxRefs)
	}
	h.Refs = append(h.Refs, Ref{OID: oid, Name: name})
	return nil
}

// capability takes a v3 capability: only the object format is known; a
// filter (a partial bundle, objects left out) and anything else are
// refused, since a clone of it would not be the whole repository.
func (h *Header) capability(s string) error {
	if h.Version != 3 || len(h.Refs) > 0 || len(h.Prereqs) > 0 {
		return invalid("a capability line where none may be")
	}
	key, val, _ := strings.Cut(s, "=")
	switch {
	case key == "object-format" && (val == "sha1" || val == "sha256"):
		h.ObjectFormat = val
		return nil
	case key == "filter":
		return invalid("it is a partial bundle (filter %s): objects are left out of it", printable(val))
	}
	return invalid("unknown capability %s", printable(key))
}

func (h *Header) validOID(s string) bool {
	n := 40
	if h.ObjectFormat == "sha256" {
		n = 64
	}
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Check refuses what a task's clone must not take: prerequisites (an
// incremental bundle: the commits it builds on are not in it), a
// reference other than HEAD, a branch or a tag, a name git itself would
// refuse (check-ref-format's rules), and a name given twice.
func (h *Header) Check() error {
	if len(h.Prereqs) > 0 {
		return invalid("it needs %d commit(s) it does not carry (e.g. %s): make it from whole history (git bundle create FILE BRANCH, not a range)", len(h.Prereqs), h.Prereqs[0])
	}
	seen := map[string]bool{}
	var errs []error
	for _, r := range h.Refs {
		if err := CheckRefName(r.Name); err != nil {
			errs = append(errs, err)
		} else if seen[r.Name] {
			errs = append(errs, invalid("reference %s is given twice", r.Name))
		}
		seen[r.Name] = true
		if len(errs) >= 5 {
			break
		}
	}
	return errors.Join(errs...)
}

// CheckRefName accepts HEAD and well-formed names under refs/heads/ and
// refs/tags/ (git-check-ref-format(1)'s rules, and valid UTF-8 so the
// record shows what it is).
func CheckRefName(name string) error {
	if name == "HEAD" {
		return nil
	}
	rest, ok := strings.CutPrefix(name, "refs/heads/")
	if !ok {
		rest, ok = strings.CutPrefix(name, "refs/tags/")
	}
	if !ok {
		return invalid("reference %s is not HEAD, a branch (refs/heads/) or a tag (refs/tags/)", printable(name))
	}
	if why := badRefName(rest); why != "" {
		return invalid("reference %s: %s", printable(name), why)
	}
	return nil
}

func badRefName(s string) string {
	switch {
	case s == "" || s == "@":
		return "empty or @"
	case !utf8.ValidString(s):
		return "not UTF-8"
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//"):
		return "an empty component"
	case strings.Contains(s, ".."), strings.Contains(s, "@{"), strings.HasSuffix(s, "."):
		return "contains .. or @{, or ends with ."
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) }):
		return "a control character, space or one of ~^:?*[\\"
	}
	for _, c := range strings.Split(s, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return "a component starts with . or ends with .lock"
		}
	}
	return ""
}

// printable is s quoted, cut to 100 bytes: it is the client's and goes
// into an error message.
func printable(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return fmt.Sprintf("%q", s)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("the bundle is refused: "+format+": %w", append(args, errdefs.ErrInvalid)...)
}
