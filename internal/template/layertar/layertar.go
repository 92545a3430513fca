// Package layertar unpacks one image layer (an uncompressed OCI/docker
// layer tar, hostile until proven otherwise) into an empty host directory
// that then serves as a read-only overlay lower layer.
//
// Nothing an archive says can write outside that directory: names with
// ".." or a leading "/" are refused, every path is walked from the layer's
// own directory descriptor with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
// (a symlink the archive made is never followed on the host), hard links
// must name a regular file the same layer made. Device nodes are refused;
// setuid/setgid bits are dropped (the overlay is nosuid and every sandbox
// command runs with no_new_privs anyway; dropping them keeps the host copy
// inert too); ownership is host root's (a uid from the archive could name
// a real host user who would then own part of a shared template); extended
// attributes are not applied. OCI whiteouts become overlayfs ones: ".wh.X"
// a 0/0 character device, ".wh..wh..opq" the opaque xattr of its directory;
// whiteouts anywhere odd (the layer root, other ".wh..wh." names, a name the
// same layer also writes) are refused. Limits bound the bytes and entries,
// so a decompression bomb ends with an error, not a full disk.
package layertar

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"golang.org/x/sys/unix"
)

// Limits bound one layer. Zero fields take the defaults.
type Limits struct {
	MaxBytes   int64 // sum of the regular files' sizes; default 16 GiB
	MaxEntries int   // tar entries; default 1,000,000
	// MaxNameBytes bounds the sum of the entries' path lengths, which
	// the unpack keeps in memory (a path may be 4 KiB: at the entry cap,
	// 4 GiB); default 256 MiB.
	MaxNameBytes int64
}

// Default limits.
const (
	DefaultMaxBytes     = 16 << 30
	DefaultMaxEntries   = 1_000_000
	DefaultMaxNameBytes = 256 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxNameBytes <= 0 {
		l.MaxNameBytes = DefaultMaxNameBytes
	}
	return l
}

// StreamCap is how many tar bytes (headers and padding included) a layer
// within l may take: what a caller caps the decompressed stream at.
func (l Limits) StreamCap() int64 {
	l = l.withDefaults()
	return l.MaxBytes + int64(l.MaxEntries)*3*512 + 1<<20
}

// Stats is what one layer held.
type Stats struct {
	Entries, Dirs, Files, Symlinks, Hardlinks, Fifos int
	Whiteouts, Opaques                               int
	Bytes                                            int64
	// SetIDDropped names (the first 100) files whose setuid/setgid bits
	// were dropped; SetIDCount counts them all.
	SetIDDropped []string
	SetIDCount   int
}

// ErrRefused wraps every refusal of an entry (with errdefs.ErrInvalid).
var ErrRefused = errors.New("layer refused")

func refuse(name, why string) error {
	return fmt.Errorf("layer entry %q: %s: %w (%w)", name, why, ErrRefused, errdefs.ErrInvalid)
}

// Unpack reads the tar stream r into dir, which must be an existing empty
// directory. On error dir holds part of the layer: the caller removes it.
func Unpack(dir string, r io.Reader, lim Limits) (*Stats, error) {
	lim = lim.withDefaults()
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("layer dir %s: %w", dir, err)
	}
	defer unix.Close(root)
	u := &unpacker{root: root, lim: lim, st: &Stats{}, made: map[string]byte{}, whiteouts: map[string]bool{}}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return u.st, nil
		}
		if err != nil {
			return nil, fmt.Errorf("layer tar: %v: %w", err, errdefs.ErrInvalid)
		}
		u.st.Entries++
		if u.st.Entries > lim.MaxEntries {
			return nil, fmt.Errorf("layer has more than %d entries: %w", lim.MaxEntries, errdefs.ErrLimitExceeded)
		}
		if err := u.entry(h, tr); err != nil {
			return nil, err
		}
	}
}

type unpacker struct {
	root int
	lim  Limits
	st   *Stats
	// made: what this layer made at each clean relative path ('d' dir,
	// 'f' regular file, 'l' symlink, 'w' whiteout, 'o' other).
	made      map[string]byte
	whiteouts map[string]bool
	nameBytes int64 // of the entries' paths so far
}

// cleanName checks a tar name and returns it relative and clean ("" for
// the layer root itself).
func cleanName(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", refuse(name, "NUL in name")
	}
	n := strings.TrimPrefix(name, "./")
	n = strings.TrimSuffix(n, "/")
	if n == "" || n == "." {
		return "", nil
	}
	if strings.HasPrefix(n, "/") {
		return "", refuse(name, "absolute path")
	}
	for _, c := range strings.Split(n, "/") {
		if c == ".." {
			return "", refuse(name, "path climbs with ..")
		}
		if c == "" || c == "." {
			return "", refuse(name, "name is not clean")
		}
	}
	return n, nil
}

const whPrefix, whOpaque, whMeta = ".wh.", ".wh..wh..opq", ".wh..wh."

func (u *unpacker) entry(h *tar.Header, r io.Reader) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	rel, err := cleanName(h.Name)
	if err != nil {
		return err
	}
	if u.nameBytes += int64(len(rel) + len(h.Linkname)); u.nameBytes > u.lim.MaxNameBytes {
		return fmt.Errorf("layer entries' names are over %d bytes: %w", u.lim.MaxNameBytes, errdefs.ErrLimitExceeded)
	}
	if rel == "" {
		if h.Typeflag != tar.TypeDir {
			return refuse(h.Name, "the layer root must be a directory")
		}
		return nil // the root's own mode is the layer dir's (0755)
	}
	// Nothing may be written at or below what this layer whited out.
	for p := rel; p != "."; p = path.Dir(p) {
		if u.whiteouts[p] {
			return refuse(h.Name, "the same layer whited out "+p)
		}
	}
	parent, base := path.Dir(rel), path.Base(rel)
	if strings.HasPrefix(base, whPrefix) {
		return u.whiteout(h, parent, base)
	}
	pfd, err := u.openParent(h.Name, parent)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	switch h.Typeflag {
	case tar.TypeDir:
		return u.dir(h, pfd, rel, base)
	case tar.TypeReg:
		return u.file(h, r, pfd, rel, base)
	case tar.TypeSymlink:
		return u.symlink(h, pfd, rel, base)
	case tar.TypeLink:
		return u.hardlink(h, pfd, rel, base)
	case tar.TypeFifo:
		if err := u.replace(pfd, rel, base); err != nil {
			return err
		}
		if err := unix.Mknodat(pfd, base, unix.S_IFIFO|0o644, 0); err != nil {
			return fmt.Errorf("layer fifo %q: %w", h.Name, err)
		}
		u.made[rel] = 'o'
		u.st.Fifos++
		return u.finish(pfd, base, h, false)
	case tar.TypeChar, tar.TypeBlock:
		return refuse(h.Name, "device node")
	default:
		return refuse(h.Name, fmt.Sprintf("unsupported entry type %q", h.Typeflag))
	}
}

// openParent opens the directory rel (relative to the layer root), making
// the missing ones (0755) on the way; a symlink anywhere on the way is
// refused by the kernel (RESOLVE_NO_SYMLINKS), never followed.
func (u *unpacker) openParent(name, rel string) (int, error) {
	if rel == "." {
		return unix.Dup(u.root)
	}
	cur := rel
	var missing []string
	for {
		fd, err := u.openDir(cur)
		if err == nil {
			if len(missing) == 0 {
				return fd, nil
			}
			unix.Close(fd)
			break
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			return -1, refuse(name, "a parent is not a directory this layer made (symlink or file)")
		}
		if !errors.Is(err, unix.ENOENT) {
			return -1, fmt.Errorf("layer %q: open %s: %w", name, cur, err)
		}
		missing = append(missing, cur)
		if cur = path.Dir(cur); cur == "." {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := unix.Mkdirat(u.root, missing[i], 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("layer %q: mkdir %s: %w", name, missing[i], err)
		}
		u.made[missing[i]] = 'd'
	}
	return u.openDir(rel)
}

func (u *unpacker) openDir(rel string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV}
	for {
		fd, err := unix.Openat2(u.root, rel, how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// replace removes what an earlier entry of this layer put at base (tar's
// last entry wins), but never a directory: a non-directory over a
// directory of the same layer is refused.
func (u *unpacker) replace(pfd int, rel, base string) error {
	switch u.made[rel] {
	case 0:
		return nil
	case 'd':
		return refuse(rel, "replaces a directory of the same layer")
	}
	if err := unix.Unlinkat(pfd, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("layer %q: replace: %w", rel, err)
	}
	delete(u.made, rel)
	return nil
}

func (u *unpacker) dir(h *tar.Header, pfd int, rel, base string) error {
	switch u.made[rel] {
	case 'd':
	case 0:
		if err := unix.Mkdirat(pfd, base, 0o700); err != nil {
			return fmt.Errorf("layer dir %q: %w", h.Name, err)
		}
		u.made[rel] = 'd'
		u.st.Dirs++
	default:
		return refuse(h.Name, "directory over a non-directory of the same layer")
	}
	return u.finish(pfd, base, h, true)
}

func (u *unpacker) file(h *tar.Header, r io.Reader, pfd int, rel, base string) error {
	if h.Size < 0 || h.Size > u.lim.MaxBytes-u.st.Bytes {
		return fmt.Errorf("layer entry %q (%d bytes): the layer is over its %d-byte cap: %w", h.Name, h.Size, u.lim.MaxBytes, errdefs.ErrLimitExceeded)
	}
	if err := u.replace(pfd, rel, base); err != nil {
		return err
	}
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("layer file %q: %w", h.Name, err)
	}
	u.made[rel] = 'f'
	f := fdWriter(fd)
	n, err := io.CopyN(f, r, h.Size)
	u.st.Bytes += n
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("layer file %q: %w", h.Name, err)
	}
	u.st.Files++
	err = u.perms(fd, h, false)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("layer file %q: %w", h.Name, err)
	}
	return u.times(pfd, base, h)
}

func (u *unpacker) symlink(h *tar.Header, pfd int, rel, base string) error {
	if h.Linkname == "" || strings.ContainsRune(h.Linkname, 0) {
		return refuse(h.Name, "bad symlink target")
	}
	if err := u.replace(pfd, rel, base); err != nil {
		return err
	}
	// The target is kept as written: it is resolved only inside the
	// sandbox's root, never on the host (no walk here follows symlinks).
	if err := unix.Symlinkat(h.Linkname, pfd, base); err != nil {
		return fmt.Errorf("layer symlink %q: %w", h.Name, err)
	}
	u.made[rel] = 'l'
	u.st.Symlinks++
	if err := unix.Fchownat(pfd, base, 0, 0, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	return u.times(pfd, base, h)
}

func (u *unpacker) hardlink(h *tar.Header, pfd int, rel, base string) error {
	target, err := cleanName(h.Linkname)
	if err != nil || target == "" {
		return refuse(h.Name, "hard link target "+h.Linkname+" is not inside the layer")
	}
	if u.made[target] != 'f' {
		return refuse(h.Name, "hard link to "+target+", which is no regular file this layer made")
	}
	if target == rel {
		return refuse(h.Name, "hard link to itself")
	}
	tfd, err := u.openParent(h.Name, path.Dir(target))
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if err := u.replace(pfd, rel, base); err != nil {
		return err
	}
	if err := unix.Linkat(tfd, path.Base(target), pfd, base, 0); err != nil {
		return fmt.Errorf("layer hard link %q: %w", h.Name, err)
	}
	u.made[rel] = 'f'
	u.st.Hardlinks++
	return nil
}

// whiteout turns an OCI whiteout entry into its overlayfs form.
func (u *unpacker) whiteout(h *tar.Header, parent, base string) error {
	if base == whOpaque {
		if parent == "." {
			return refuse(h.Name, "opaque whiteout of the layer root")
		}
		if u.made[parent] != 0 && u.made[parent] != 'd' {
			return refuse(h.Name, "opaque whiteout in a non-directory")
		}
		pfd, err := u.openParent(h.Name, parent)
		if err != nil {
			return err
		}
		defer unix.Close(pfd)
		// Both spellings: a native sandbox's overlay (userxattr, in its
		// user namespace) reads user.*, gVisor's host mount trusted.*.
		p := fmt.Sprintf("/proc/self/fd/%d", pfd)
		for _, x := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
			if err := unix.Setxattr(p, x, []byte("y"), 0); err != nil {
				return fmt.Errorf("layer %q: set %s: %w", h.Name, x, err)
			}
		}
		u.st.Opaques++
		return nil
	}
	if strings.HasPrefix(base, whMeta) {
		return refuse(h.Name, "unknown whiteout meta entry")
	}
	name := strings.TrimPrefix(base, whPrefix)
	if name == "" || name == "." || name == ".." {
		return refuse(h.Name, "whiteout of no name")
	}
	target := path.Join(parent, name)
	// Anything this layer put below target made target too (openParent
	// records each directory it makes): one lookup covers a filled
	// directory, never a scan of all that was made (quadratic in the
	// entries: days of CPU for a layer at the entry cap).
	if u.made[target] != 0 {
		return refuse(h.Name, "whiteout of a name the same layer made")
	}
	pfd, err := u.openParent(h.Name, parent)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mknodat(pfd, name, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("layer whiteout %q: %w", h.Name, err)
	}
	u.made[target] = 'w'
	u.whiteouts[target] = true
	u.st.Whiteouts++
	return nil
}

// finish sets a directory's or fifo's owner, mode and times.
func (u *unpacker) finish(pfd int, base string, h *tar.Header, dir bool) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(pfd, base, how)
	if err != nil {
		return fmt.Errorf("layer %q: %w", h.Name, err)
	}
	defer unix.Close(fd)
	p := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Chown(p, 0, 0); err != nil {
		return fmt.Errorf("layer %q: chown: %w", h.Name, err)
	}
	if err := unix.Chmod(p, u.mode(h, dir)); err != nil {
		return fmt.Errorf("layer %q: chmod: %w", h.Name, err)
	}
	if dir {
		return nil // a directory's time changes with what later entries put in it
	}
	return u.times(pfd, base, h)
}

// perms sets an open regular file's owner (host root) and mode.
func (u *unpacker) perms(fd int, h *tar.Header, dir bool) error {
	if err := unix.Fchown(fd, 0, 0); err != nil {
		return err
	}
	return unix.Fchmod(fd, u.mode(h, dir))
}

// mode is the permission bits kept of h's: no setuid/setgid on files
// (counted), the sticky bit on directories only.
func (u *unpacker) mode(h *tar.Header, dir bool) uint32 {
	m := uint32(h.Mode) & 0o7777
	if dir {
		return m & (0o777 | unix.S_ISVTX | unix.S_ISGID)
	}
	if m&(unix.S_ISUID|unix.S_ISGID) != 0 {
		u.st.SetIDCount++
		if len(u.st.SetIDDropped) < 100 {
			u.st.SetIDDropped = append(u.st.SetIDDropped, h.Name)
		}
	}
	return m & 0o777
}

func (u *unpacker) times(pfd int, base string, h *tar.Header) error {
	mt := unix.NsecToTimespec(h.ModTime.UnixNano())
	if h.ModTime.IsZero() || h.ModTime.Unix() < 0 {
		mt = unix.Timespec{}
	}
	ts := []unix.Timespec{mt, mt}
	if err := unix.UtimesNanoAt(pfd, base, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("layer %q: times: %w", h.Name, err)
	}
	return nil
}

type fdWriter int

func (w fdWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(int(w), p[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}
