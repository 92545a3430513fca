// Package tarfilter passes tar streams through entry by entry for the
// policed file API: a download without the entries a judge leaves out
// (Filter), and an upload checked before the sandbox sees any of it
// (Check: no entry outside its directory, none below a symlink the same
// archive made, every entry and hard-link target allowed), with the
// reader and writer that say how a stream went (Source, Counter).
//
// It is pure: what is allowed is the caller's function; it does no I/O
// but on the streams it is given.
package tarfilter

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync/atomic"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// ErrStreamEnded: one side of a filtered tar stream stopped the other.
var ErrStreamEnded = errors.New("the tar stream ended")

// Filter copies the archive r to w without the entries omit leaves out,
// each judged by its path below dir (lexically joined), and returns those
// paths. An error of omit ends the copy with it; w gets a complete
// archive of the rest otherwise.
func Filter(dir string, r io.Reader, w io.Writer, omit func(p string) (bool, error)) (omitted []string, err error) {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return omitted, tw.Close()
		}
		if err != nil {
			return omitted, err
		}
		p := path.Join(dir, h.Name)
		out, err := omit(p)
		if err != nil {
			return omitted, err
		}
		if out {
			omitted = append(omitted, p)
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return omitted, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return omitted, err
		}
	}
}

// MaxPaths is how many paths a Summary keeps.
const MaxPaths = 1000

// Summary is what an upload let through: how many entries, and the
// first MaxPaths paths.
type Summary struct {
	N     int
	Paths []string
}

// Check copies the archive r to w, an entry at a time, only once allow
// lets its path below dir (and, for a hard link, what it links to). The
// first entry refused ends the copy with allow's error; one that climbs
// out of dir, or lies below a symlink the same archive made, ends it with
// ErrInvalid. sum counts what was copied whole.
func Check(dir string, r io.Reader, w io.Writer, allow func(p string) error, sum *Summary) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	var links []string // symlinks this archive made
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("tar: %v: %w", err, errdefs.ErrInvalid)
		}
		p, err := checkEntry(dir, h, links, allow)
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeSymlink {
			links = append(links, p)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err // an entry cut short is not counted: it is not written
		}
		sum.N++
		if len(sum.Paths) < MaxPaths {
			sum.Paths = append(sum.Paths, p)
		}
	}
}

// checkEntry returns the path below dir that a tar entry writes, once
// allow lets it (and, for a hard link, what it links to); an entry that
// climbs out of dir, or lies below one of links, is refused.
func checkEntry(dir string, h *tar.Header, links []string, allow func(p string) error) (string, error) {
	if !below(h.Name) {
		return "", fmt.Errorf("tar entry %q is not below the upload directory: %w", h.Name, errdefs.ErrInvalid)
	}
	p := path.Join(dir, path.Clean(h.Name))
	for _, l := range links {
		if strings.HasPrefix(p, l+"/") {
			return "", fmt.Errorf("tar entry %q is below a symlink the same archive made: %w", h.Name, errdefs.ErrInvalid)
		}
	}
	if err := allow(p); err != nil {
		return "", err
	}
	if h.Typeflag == tar.TypeLink {
		if !below(h.Linkname) {
			return "", fmt.Errorf("tar hard link %q to %q is not below the upload directory: %w", h.Name, h.Linkname, errdefs.ErrInvalid)
		}
		if err := allow(path.Join(dir, path.Clean(h.Linkname))); err != nil {
			return "", err
		}
	}
	return p, nil
}

// below reports whether the relative name stays below its directory.
func below(name string) bool {
	rel := path.Clean(name)
	return !path.IsAbs(name) && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Source is a reader that notes whether it broke off before its end (a
// client gone, a body over its limit or too slow). It may be read by a
// copier that outlives its caller.
type Source struct {
	r     io.Reader
	broke atomic.Bool
}

// NewSource wraps r.
func NewSource(r io.Reader) *Source { return &Source{r: r} }

func (s *Source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.broke.Store(true)
	}
	return n, err
}

// Cut reports whether a read failed with anything but io.EOF.
func (s *Source) Cut() bool { return s.broke.Load() }

// Counter counts the bytes written through it to W.
type Counter struct {
	W io.Writer
	N int64
}

func (c *Counter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
