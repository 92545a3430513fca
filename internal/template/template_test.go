package template

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeHost creates a host tree with allowlisted sources, secrets that must
// never be copied, and merged-/usr links.
func fakeHost(t testing.TB) string {
	t.Helper()
	h := t.TempDir()
	files := map[string]string{
		// allowlisted
		"etc/bash.bashrc":                   "# bashrc\n",
		"etc/debian_version":                "12.9\n",
		"etc/inputrc":                       "set bell-style none\n",
		"etc/ld.so.cache":                   "ld.so-1.7.0 fake cache",
		"etc/ld.so.conf":                    "include /etc/ld.so.conf.d/*.conf\n",
		"etc/ld.so.conf.d/libc.conf":        "/usr/local/lib\n",
		"etc/ld.so.conf.d/x86_64.conf":      "/usr/lib/x86_64-linux-gnu\n",
		"etc/mime.types":                    "text/plain txt\n",
		"etc/protocols":                     "tcp 6 TCP\n",
		"etc/services":                      "ssh 22/tcp\n",
		"etc/ssl/certs/ca-certificates.crt": "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n",
		"etc/ssl/certs/Some_CA.pem":         "not copied\n",
		"etc/timezone":                      "Etc/UTC\n",
		"etc/alternatives/README":           "regular file, not copied\n",
		"usr/lib/os-release":                "PRETTY_NAME=\"Fake GNU/Linux\"\n",
		"usr/share/zoneinfo/Etc/UTC":        "TZif2 fake zone data",
		"var/lib/dpkg/status":               "Package: bash\nStatus: install ok installed\n",
		// host files the template must NOT reproduce
		"etc/passwd":                   "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nalice:x:1001:1001::/home/alice:/bin/zsh\n",
		"etc/group":                    "root:x:0:\nalice:x:1001:\n",
		"etc/hostname":                 "realhost\n",
		"etc/hosts":                    "10.0.0.5 internal.corp\n",
		"etc/resolv.conf":              "nameserver 10.0.0.53\n",
		"etc/shadow":                   "root:$6$secret:19000::::::\n",
		"etc/shadow-":                  "root:$6$secret:19000::::::\n",
		"etc/gshadow":                  "root:*::\n",
		"etc/sudoers":                  "root ALL=(ALL) ALL\n",
		"etc/sudoers.d/alice":          "alice ALL=(ALL) NOPASSWD: ALL\n",
		"etc/ssh/ssh_host_ed25519_key": "PRIVATE KEY\n",
		"etc/ssl/private/server.key":   "PRIVATE KEY\n",
		"etc/machine-id":               "0123456789abcdef0123456789abcdef\n",
		"etc/git-credentials":          "https://user:token@example.com\n",
		"etc/aws/credentials":          "aws_secret_access_key=xyz\n",
		"etc/npmrc":                    "//registry.example.invalid/:_authToken=secret\n",
		"etc/pip.conf":                 "[global]\nindex-url=https://user:pw@pypi.example\n",
		"etc/netrc":                    "machine example.com login u password p\n",
		"etc/docker/daemon.json":       "{}\n",
		"etc/kubernetes/admin.conf":    "token: secret\n",
		"etc/gitconfig":                "[credential]\nhelper = store\n",
		"etc/environment":              "API_KEY=secret\n",
		"etc/subuid":                   "alice:100000:65536\n",
	}
	for rel, data := range files {
		p := filepath.Join(h, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"usr/bin", "usr/sbin", "usr/lib64"} {
		if err := os.MkdirAll(filepath.Join(h, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"bin":                        "usr/bin",
		"sbin":                       "usr/sbin",
		"lib":                        "usr/lib",
		"lib64":                      "usr/lib64",
		"etc/os-release":             "../usr/lib/os-release",
		"etc/localtime":              "/usr/share/zoneinfo/Etc/UTC", // absolute: must resolve inside h
		"etc/alternatives/editor":    "/usr/bin/vim.basic",
		"etc/alternatives/pager":     "/bin/less",
		"etc/ld.so.conf.d/zz.conf":   "libc.conf",
		"etc/ld.so.conf.d/leak.conf": "../shadow", // allowlisted dir, secret target
	}
	for rel, target := range links {
		if err := os.Symlink(target, filepath.Join(h, rel)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func openTest(t testing.TB, host string) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "templates"))
	if err != nil {
		t.Fatal(err)
	}
	s.host = host
	return s
}

func mustGet(t testing.TB, s *Store) *Template {
	t.Helper()
	tp, err := s.Get("host")
	if err != nil {
		t.Fatalf("Get(host): %v", err)
	}
	return tp
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func inode(t testing.TB, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// treeDigest summarises a directory tree (names, modes, inodes, link targets
// and file content) so that any modification shows up.
func treeDigest(t testing.TB, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		fmt.Fprintf(h, "%s %v %d %d %d\n", p, fi.Mode(), st.Ino, st.Mtim.Nano(), st.Ctim.Nano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(h, "-> %s\n", target)
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// versionDirs lists the version directories stored for name.
func versionDirs(t testing.TB, s *Store, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.Root, name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"host", true},
		{"a", true},
		{"0", true},
		{"py3.12_slim-x", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{"A", false},
		{"Host", false},
		{"../x", false},
		{"a/b", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"-x", false},
		{"_x", false},
		{"a b", false},
		{"a\x00", false},
		{"é", false},
		{strings.Repeat("a", 65), false},
	} {
		err := ValidName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidName(%q) error %v does not wrap ErrInvalid", tc.name, err)
		}
	}
}

func TestOpen(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "templates")
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		t.Fatal(err)
	}
	// traversable (sandbox roots are unprivileged host uids), not listable
	if fi.Mode().Perm() != 0o711 || !fi.IsDir() {
		t.Errorf("root mode = %v, want drwx--x--x", fi.Mode())
	}
	if pfi, err := os.Stat(filepath.Dir(root)); err != nil || pfi.Mode().Perm()&0o011 != 0o011 {
		t.Errorf("parent of the root is not traversable: %v %v", pfi.Mode(), err)
	}
	if !filepath.IsAbs(s.Root) {
		t.Errorf("Root %q not absolute", s.Root)
	}
	if _, err := Open(""); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(\"\") = %v, want ErrInvalid", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file); err == nil {
		t.Errorf("Open(file) succeeded")
	}
	if list, err := s.List(); err != nil || len(list) != 0 {
		t.Errorf("List on empty store = %v, %v", list, err)
	}
}

func TestGetErrors(t *testing.T) {
	s := openTest(t, fakeHost(t))
	_, err := s.Get("nope")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(nope) = %v, want ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "host") {
		t.Errorf("error %q does not list known templates", err)
	}
	for _, n := range []string{"../x", "", "A", "a/b"} {
		if _, err := s.Get(n); !errors.Is(err, ErrInvalid) {
			t.Errorf("Get(%q) = %v, want ErrInvalid", n, err)
		}
	}
	var zero Store
	if _, err := zero.Get("host"); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero Store Get = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Get(nope) left something on disk: %v", err)
	}
}

func TestHostTemplateContent(t *testing.T) {
	host := fakeHost(t)
	s := openTest(t, host)
	tp := mustGet(t, s)

	if tp.Name != "host" {
		t.Errorf("Name = %q", tp.Name)
	}
	hx, err := hashHex(tp.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if tp.Version != hx[:12] {
		t.Errorf("Version %q is not the hash prefix of %q", tp.Version, tp.Hash)
	}
	if want := filepath.Join(s.Root, "host", hx, "rootfs"); tp.Dir != want {
		t.Errorf("Dir = %q, want %q", tp.Dir, want)
	}
	if want := []Bind{{Source: filepath.Join(host, "usr"), Target: "/usr"}}; !slices.Equal(tp.Binds, want) {
		t.Errorf("Binds = %v, want %v", tp.Binds, want)
	}
	if time.Since(tp.Created) > time.Minute || tp.Created.IsZero() {
		t.Errorf("Created = %v", tp.Created)
	}
	root := tp.Dir

	// Generated /etc.
	wantFiles := map[string]string{
		"etc/passwd":   "root:x:0:0:root:/root:/bin/bash\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"etc/group":    "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n",
		"etc/hostname": "airlock\n",
		// Copied from the host; symlinks resolved inside the host root.
		"etc/localtime":                     "TZif2 fake zone data",
		"etc/os-release":                    "PRETTY_NAME=\"Fake GNU/Linux\"\n",
		"etc/services":                      "ssh 22/tcp\n",
		"etc/ld.so.cache":                   "ld.so-1.7.0 fake cache",
		"etc/ld.so.conf.d/libc.conf":        "/usr/local/lib\n",
		"etc/ld.so.conf.d/zz.conf":          "/usr/local/lib\n",
		"etc/ssl/certs/ca-certificates.crt": "-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n",
		"etc/timezone":                      "Etc/UTC\n",
	}
	for rel, want := range wantFiles {
		p := filepath.Join(root, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", rel, fi.Mode())
		}
		if got := readFile(t, p); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	for _, c := range []struct{ rel, want string }{
		{"etc/hosts", "127.0.0.1\tlocalhost airlock\n"},
		{"etc/hosts", "::1\tlocalhost ip6-localhost ip6-loopback\n"},
		{"etc/resolv.conf", "nameserver 127.0.0.1\n"},
		{"etc/nsswitch.conf", "passwd:    files\n"},
		{"etc/nsswitch.conf", "hosts:     files dns\n"},
		{"etc/profile", "export PATH\n"},
	} {
		if got := readFile(t, filepath.Join(root, c.rel)); !strings.Contains(got, c.want) {
			t.Errorf("%s = %q, want it to contain %q", c.rel, got, c.want)
		}
	}
	if got := readFile(t, filepath.Join(root, "etc/resolv.conf")); !strings.Contains(got, "#") || strings.Contains(got, "10.0.0.53") {
		t.Errorf("resolv.conf = %q", got)
	}

	// Secrets and host identity must be absent.
	for _, rel := range []string{
		"etc/shadow", "etc/shadow-", "etc/gshadow", "etc/sudoers", "etc/sudoers.d",
		"etc/ssh", "etc/ssl/private", "etc/machine-id", "etc/git-credentials", "etc/aws",
		"etc/npmrc", "etc/pip.conf", "etc/netrc", "etc/docker", "etc/kubernetes",
		"etc/gitconfig", "etc/environment", "etc/subuid", "etc/ld.so.conf.d/leak.conf",
		"etc/ssl/certs/Some_CA.pem", "etc/alternatives/README",
	} {
		if _, err := os.Lstat(filepath.Join(root, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s present in template (err=%v)", rel, err)
		}
	}
	for _, rel := range []string{"etc/passwd", "etc/group", "etc/hosts", "etc/hostname"} {
		got := readFile(t, filepath.Join(root, rel))
		for _, leak := range []string{"alice", "daemon", "realhost", "internal.corp"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s leaks host content %q: %q", rel, leak, got)
			}
		}
	}
	walkNoSecrets(t, root)

	// Directories.
	for rel, want := range map[string]fs.FileMode{
		"usr": 0o755, "proc": 0o755, "dev": 0o755, "sys": 0o755, "run": 0o755,
		"var": 0o755, "workspace": 0o755, "home": 0o755, "home/sandbox": 0o755,
		"mnt": 0o755, "etc": 0o755, "etc/ssl/certs": 0o755, "etc/alternatives": 0o755,
		"root": 0o700, "tmp": 0o777 | fs.ModeSticky, "var/tmp": 0o777 | fs.ModeSticky,
	} {
		fi, err := os.Lstat(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if !fi.IsDir() || fi.Mode()&(fs.ModePerm|fs.ModeSticky) != want {
			t.Errorf("%s: mode %v, want dir %v", rel, fi.Mode(), want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "usr")); len(ents) != 0 {
		t.Errorf("usr is not empty: %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "etc/ssl/certs")); len(ents) != 1 {
		t.Errorf("etc/ssl/certs has %d entries, want only ca-certificates.crt", len(ents))
	}

	// Symlinks: merged /usr, and alternatives kept as symlinks.
	for rel, want := range map[string]string{
		"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64",
		"etc/alternatives/editor": "/usr/bin/vim.basic", "etc/alternatives/pager": "/bin/less",
	} {
		got, err := os.Readlink(filepath.Join(root, rel))
		if err != nil || got != want {
			t.Errorf("readlink %s = %q, %v; want %q", rel, got, err, want)
		}
	}
	for _, rel := range []string{"lib32", "libx32"} { // absent on the fake host
		if _, err := os.Lstat(filepath.Join(root, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists but host has no usr/%s", rel, rel)
		}
	}
	// bin resolves to usr/bin, the (empty) mount point of the host /usr bind.
	if target, _ := os.Readlink(filepath.Join(root, "bin")); filepath.Join(root, target) != filepath.Join(root, "usr/bin") {
		t.Errorf("bin -> %q does not resolve to usr/bin", target)
	}
	if fi, err := os.Lstat(filepath.Join(root, "usr")); err != nil || !fi.IsDir() {
		t.Errorf("usr mount point missing: %v", err)
	}

	// Ownership.
	if os.Geteuid() == 0 {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Error(err)
				return err
			}
			fi, _ := d.Info()
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || st.Gid != 0 {
				t.Errorf("%s owned by %d:%d", p, st.Uid, st.Gid)
			}
			return nil
		})
	}

	// Manifest.
	var m manifest
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(filepath.Dir(root), "template.json"))), &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "host" || m.Hash != tp.Hash || m.Version != tp.Version || !slices.Equal(m.Binds, tp.Binds) || m.Fingerprint == "" || !strings.HasPrefix(m.UsrFingerprint, "dpkg-status:sha256:") {
		t.Errorf("manifest = %+v", m)
	}
	if m.Summary.Files == 0 || m.Summary.Symlinks != 6 || len(m.Summary.FileList) != m.Summary.Files {
		t.Errorf("manifest summary = %+v", m.Summary)
	}

	// List reports it.
	list, err := s.List()
	if err != nil || len(list) != 1 || !sameTemplate(list[0], tp) {
		t.Errorf("List = %v, %v; want [%v]", list, err, tp)
	}
}

func sameTemplate(a, b *Template) bool {
	return a.Name == b.Name && a.Version == b.Version && a.Hash == b.Hash && a.Dir == b.Dir &&
		slices.Equal(a.Binds, b.Binds) && a.Created.Equal(b.Created)
}

// walkNoSecrets fails if any path in the tree looks like a secret.
func walkNoSecrets(t *testing.T, root string) {
	t.Helper()
	bad := []string{"shadow", "sudoers", "ssh/", "/ssh", "private", "machine-id", "credential", "npmrc", "pip.conf", "netrc", "docker", "kubernetes", "gitconfig", "environment"}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&fs.ModeSymlink != 0 && strings.HasPrefix(rel, "etc/alternatives/") {
			// Alternatives are symlinks named after programs (e.g. ssh-askpass)
			// and carry no content.
			return nil
		}
		for _, b := range bad {
			if strings.Contains(strings.ToLower("/"+rel+"/"), b) {
				t.Errorf("template contains %q (matches %q)", rel, b)
			}
		}
		return nil
	})
}

// TestRealHost builds the host template from this machine's real / (which
// has shadow, ssh, sudoers, ...) and checks that /etc holds only the
// allowlisted and generated names.
func TestRealHost(t *testing.T) {
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Skip("no /etc/passwd")
	}
	s := openTest(t, "/")
	start := time.Now()
	tp := mustGet(t, s)
	t.Logf("cold build of host template %s took %v", tp.Version, time.Since(start))
	allowed := map[string]bool{"alternatives": true, "ld.so.conf.d": true, "ssl": true}
	for _, g := range generatedEtc {
		allowed[g.name] = true
	}
	for _, c := range etcCopies {
		allowed[strings.Split(strings.TrimPrefix(c, "etc/"), "/")[0]] = true
	}
	ents, err := os.ReadDir(filepath.Join(tp.Dir, "etc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !allowed[e.Name()] {
			t.Errorf("etc/%s is not allowlisted", e.Name())
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(tp.Dir, "etc/ssl")); len(ents) != 1 || ents[0].Name() != "certs" {
		t.Errorf("etc/ssl = %v, want only certs", ents)
	}
	walkNoSecrets(t, tp.Dir)
	if !slices.Equal(tp.Binds, []Bind{{"/usr", "/usr"}}) {
		t.Errorf("Binds = %v", tp.Binds)
	}
	for _, x := range usrLinks {
		fi, err := os.Lstat(filepath.Join("/", x))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if got, err := os.Readlink(filepath.Join(tp.Dir, x)); err != nil || got != "usr/"+x {
			t.Errorf("/%s: readlink = %q, %v", x, got, err)
		}
	}
	if got := readFile(t, filepath.Join(tp.Dir, "etc/passwd")); !strings.Contains(got, "sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/bash\n") || strings.Count(got, "\n") != 3 {
		t.Errorf("passwd = %q", got)
	}
	tp2 := mustGet(t, s)
	if tp2.Hash != tp.Hash || s.scans.Load() != 1 || s.builds.Load() != 1 {
		t.Errorf("second Get: hash %s vs %s, scans=%d builds=%d", tp2.Hash, tp.Hash, s.scans.Load(), s.builds.Load())
	}
}

func TestGetStable(t *testing.T) {
	host := fakeHost(t)
	s := openTest(t, host)
	a := mustGet(t, s)
	ino := inode(t, a.Dir)
	digest := treeDigest(t, filepath.Dir(a.Dir))
	b := mustGet(t, s)
	if a.Hash != b.Hash || a.Version != b.Version || a.Dir != b.Dir || !a.Created.Equal(b.Created) {
		t.Errorf("second Get differs: %+v vs %+v", a, b)
	}
	if got := inode(t, b.Dir); got != ino {
		t.Errorf("Dir inode changed %d -> %d", ino, got)
	}
	if s.scans.Load() != 1 || s.builds.Load() != 1 {
		t.Errorf("scans=%d builds=%d, want 1/1", s.scans.Load(), s.builds.Load())
	}
	// Returned values are copies.
	b.Binds[0].Source = "/evil"
	if c := mustGet(t, s); c.Binds[0].Source == "/evil" {
		t.Error("Get returns a shared Binds slice")
	}

	// A new Store on the same root (a new process) uses the stored
	// fingerprint: no scan, no build.
	s2, err := Open(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	s2.host = host
	c := mustGet(t, s2)
	if c.Hash != a.Hash || c.Dir != a.Dir || !c.Created.Equal(a.Created) || s2.scans.Load() != 0 || s2.builds.Load() != 0 {
		t.Errorf("fresh store: %+v scans=%d builds=%d", c, s2.scans.Load(), s2.builds.Load())
	}
	if got := treeDigest(t, filepath.Dir(a.Dir)); got != digest {
		t.Error("version directory modified by later Gets")
	}

	// A store on a different root builds the same content address.
	s3 := openTest(t, host)
	if d := mustGet(t, s3); d.Hash != a.Hash {
		t.Errorf("same host, different store: hash %s vs %s", d.Hash, a.Hash)
	}
}

func TestSourceChangeCreatesNewVersion(t *testing.T) {
	host := fakeHost(t)
	s := openTest(t, host)
	old := mustGet(t, s)
	oldDigest := treeDigest(t, filepath.Dir(old.Dir))

	// Touching a source without changing content rescans but keeps the
	// version, and the next Get is fast again.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(host, "etc/services"), later, later); err != nil {
		t.Fatal(err)
	}
	same := mustGet(t, s)
	if same.Hash != old.Hash || s.scans.Load() != 2 || s.builds.Load() != 1 {
		t.Errorf("after touch: hash %s (was %s) scans=%d builds=%d", same.Hash, old.Hash, s.scans.Load(), s.builds.Load())
	}
	mustGet(t, s)
	if s.scans.Load() != 2 {
		t.Errorf("touch: fingerprint not re-recorded, scans=%d", s.scans.Load())
	}

	steps := []struct {
		what   string
		change func(t *testing.T)
		check  func(t *testing.T, tp *Template)
	}{
		{"rewrite allowlisted file", func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(host, "etc/services"), []byte("http 80/tcp\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, tp *Template) {
			if got := readFile(t, filepath.Join(tp.Dir, "etc/services")); got != "http 80/tcp\n" {
				t.Errorf("etc/services = %q", got)
			}
		}},
		{"retarget symlinked source", func(t *testing.T) {
			os.WriteFile(filepath.Join(host, "usr/share/zoneinfo/Etc/CET"), []byte("TZif2 CET"), 0o644)
			os.Remove(filepath.Join(host, "etc/localtime"))
			if err := os.Symlink("/usr/share/zoneinfo/Etc/CET", filepath.Join(host, "etc/localtime")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, tp *Template) {
			if got := readFile(t, filepath.Join(tp.Dir, "etc/localtime")); got != "TZif2 CET" {
				t.Errorf("etc/localtime = %q", got)
			}
		}},
		{"add alternative", func(t *testing.T) {
			if err := os.Symlink("/usr/bin/nano", filepath.Join(host, "etc/alternatives/nano-ed")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, tp *Template) {
			if got, _ := os.Readlink(filepath.Join(tp.Dir, "etc/alternatives/nano-ed")); got != "/usr/bin/nano" {
				t.Errorf("etc/alternatives/nano-ed -> %q", got)
			}
		}},
		{"ld.so.conf.d file edited in place", func(t *testing.T) {
			f, err := os.OpenFile(filepath.Join(host, "etc/ld.so.conf.d/x86_64.conf"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("/opt/lib\n")
			f.Close()
		}, func(t *testing.T, tp *Template) {
			if got := readFile(t, filepath.Join(tp.Dir, "etc/ld.so.conf.d/x86_64.conf")); !strings.Contains(got, "/opt/lib") {
				t.Errorf("x86_64.conf = %q", got)
			}
		}},
		{"host packages changed", func(t *testing.T) {
			f, err := os.OpenFile(filepath.Join(host, dpkgStatus), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("\nPackage: curl\nStatus: install ok installed\n")
			f.Close()
		}, func(t *testing.T, tp *Template) {}},
		{"allowlisted file removed", func(t *testing.T) {
			if err := os.Remove(filepath.Join(host, "etc/mime.types")); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, tp *Template) {
			if _, err := os.Lstat(filepath.Join(tp.Dir, "etc/mime.types")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("etc/mime.types still present: %v", err)
			}
		}},
	}
	seen := map[string]bool{old.Hash: true}
	prev := []*Template{old}
	prevDigest := []string{oldDigest}
	for _, st := range steps {
		t.Run(st.what, func(t *testing.T) {
			st.change(t)
			tp := mustGet(t, s)
			if seen[tp.Hash] {
				t.Fatalf("version %s not new", tp.Version)
			}
			seen[tp.Hash] = true
			st.check(t, tp)
			for i, p := range prev {
				if got := treeDigest(t, filepath.Dir(p.Dir)); got != prevDigest[i] {
					t.Errorf("old version %s was modified", p.Version)
				}
			}
			cur, err := s.readCurrent("host")
			if err != nil || cur.Hash != tp.Hash {
				t.Errorf("current = %+v, %v; want %s", cur, err, tp.Hash)
			}
			if list, err := s.List(); err != nil || len(list) != 1 || list[0].Hash != tp.Hash {
				t.Errorf("List = %v, %v", list, err)
			}
			prev = append(prev, tp)
			prevDigest = append(prevDigest, treeDigest(t, filepath.Dir(tp.Dir)))
		})
	}
	if got := len(versionDirs(t, s, "host")); got != len(steps)+1 {
		t.Errorf("%d version dirs, want %d", got, len(steps)+1)
	}
	// Reverting content returns to an existing version without building.
	builds := s.builds.Load()
	os.WriteFile(filepath.Join(host, "etc/mime.types"), []byte("text/plain txt\n"), 0o600)
	tp := mustGet(t, s)
	if tp.Hash != prev[len(prev)-2].Hash || s.builds.Load() != builds {
		t.Errorf("revert: got %s, want %s (builds %d -> %d)", tp.Version, prev[len(prev)-2].Version, builds, s.builds.Load())
	}
}

func TestConcurrentGet(t *testing.T) {
	host := fakeHost(t)
	t.Run("one store", func(t *testing.T) {
		s := openTest(t, host)
		checkConcurrent(t, s.Root, func(int) *Store { return s })
		if s.builds.Load() != 1 || s.scans.Load() != 1 {
			t.Errorf("builds=%d scans=%d, want 1/1", s.builds.Load(), s.scans.Load())
		}
	})
	t.Run("one store per goroutine", func(t *testing.T) {
		// Simulates 8 processes building the same content at once: every
		// builder must succeed, one rename wins and the rest are discarded.
		root := filepath.Join(t.TempDir(), "templates")
		stores := make([]*Store, 8)
		for i := range stores {
			s, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			s.host = host
			stores[i] = s
		}
		checkConcurrent(t, root, func(i int) *Store { return stores[i] })
		var builds int64
		for _, s := range stores {
			builds += s.builds.Load()
		}
		if builds != 1 {
			t.Errorf("%d renames succeeded, want 1", builds)
		}
	})
}

func checkConcurrent(t *testing.T, root string, store func(int) *Store) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	res := make([]*Template, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			<-start
			res[i], errs[i] = store(i).Get("host")
		})
	}
	close(start)
	wg.Wait()
	for i := range 8 {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if res[i].Hash != res[0].Hash || res[i].Dir != res[0].Dir || !res[i].Created.Equal(res[0].Created) {
			t.Errorf("goroutine %d got %+v, goroutine 0 got %+v", i, res[i], res[0])
		}
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "host" {
			t.Errorf("leftover %s in store root", e.Name())
		}
	}
	ents, _ = os.ReadDir(filepath.Join(root, "host"))
	var names []string
	for _, e := range ents {
		if e.Name() != ".lock" { // the template's lock file, if a builder took it
			names = append(names, e.Name())
		}
	}
	if len(names) != 2 || !slices.Contains(names, currentFile) {
		t.Errorf("store/host = %v, want one version dir and current", names)
	}
}

func TestRecovery(t *testing.T) {
	host := fakeHost(t)
	t.Run("corrupt current", func(t *testing.T) {
		s := openTest(t, host)
		a := mustGet(t, s)
		os.WriteFile(filepath.Join(s.Root, "host", currentFile), []byte("garbage"), 0o644)
		s2, _ := Open(s.Root)
		s2.host = host
		b := mustGet(t, s2)
		if b.Hash != a.Hash || s2.builds.Load() != 0 {
			t.Errorf("got %s builds=%d", b.Version, s2.builds.Load())
		}
		if cur, err := s2.readCurrent("host"); err != nil || cur.Hash != a.Hash {
			t.Errorf("current not repaired: %+v %v", cur, err)
		}
	})
	t.Run("version removed", func(t *testing.T) {
		s := openTest(t, host)
		a := mustGet(t, s)
		if err := os.RemoveAll(filepath.Dir(a.Dir)); err != nil {
			t.Fatal(err)
		}
		b := mustGet(t, s) // in-memory cache must notice
		if b.Hash != a.Hash || s.builds.Load() != 2 {
			t.Errorf("got %s builds=%d", b.Version, s.builds.Load())
		}
		if _, err := os.Stat(filepath.Join(b.Dir, "etc/passwd")); err != nil {
			t.Error(err)
		}
	})
	t.Run("broken version dir", func(t *testing.T) {
		s := openTest(t, host)
		a := mustGet(t, s)
		os.Remove(filepath.Join(filepath.Dir(a.Dir), manifestFile))
		os.Remove(filepath.Join(s.Root, "host", currentFile))
		s2, _ := Open(s.Root)
		s2.host = host
		b := mustGet(t, s2)
		if b.Hash != a.Hash || s2.builds.Load() != 1 {
			t.Errorf("got %s builds=%d", b.Version, s2.builds.Load())
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(b.Dir), manifestFile)); err != nil {
			t.Error(err)
		}
	})
	t.Run("stale build dirs", func(t *testing.T) {
		s := openTest(t, host)
		stale := filepath.Join(s.Root, buildPrefix+"host-stale")
		fresh := filepath.Join(s.Root, buildPrefix+"host-fresh")
		os.MkdirAll(filepath.Join(stale, "rootfs"), 0o755)
		os.MkdirAll(fresh, 0o755)
		old := time.Now().Add(-2 * staleBuildAge)
		os.Chtimes(stale, old, old)
		mustGet(t, s)
		if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale build dir kept: %v", err)
		}
		if _, err := os.Stat(fresh); err != nil {
			t.Errorf("young build dir removed: %v", err)
		}
	})
}

func TestResolveIn(t *testing.T) {
	h := t.TempDir()
	os.MkdirAll(filepath.Join(h, "a/b"), 0o755)
	os.WriteFile(filepath.Join(h, "a/b/f"), []byte("x"), 0o644)
	os.Symlink("/a/b", filepath.Join(h, "abs"))
	os.Symlink("../../../../a/b/f", filepath.Join(h, "a/up"))
	os.Symlink("loop2", filepath.Join(h, "loop1"))
	os.Symlink("loop1", filepath.Join(h, "loop2"))
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"a/b/f", "a/b/f", false},
		{"abs/f", "a/b/f", false},
		{"a/up", "a/b/f", false},
		{"../../a/./b//f", "a/b/f", false},
		{"loop1", "", true},
		{"a/missing", "", true},
		{"a/b/f/x", "", true},
	} {
		got, _, err := resolveIn(h, tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("resolveIn(%q) = %q, %v; want %q err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestIsDenied(t *testing.T) {
	for _, p := range []string{"etc/shadow", "etc/gshadow-", "etc/sudoers.d/x", "etc/ssh/sshd_config", "etc/ssl/private/k", "etc/machine-id", "etc/git-credentials", "etc/npmrc", "etc/pip.conf", "etc/netrc", "etc/docker/daemon.json", "etc/kubernetes", "etc/gitconfig", "root/.ssh/id_rsa", "etc/Shadow"} {
		if !isDenied(p) {
			t.Errorf("isDenied(%q) = false", p)
		}
	}
	for _, p := range []string{"etc/passwd", "etc/ssl/certs/ca-certificates.crt", "etc/alternatives/ssh-askpass", "usr/lib/os-release", "etc/ld.so.conf.d/libc.conf"} {
		if isDenied(p) {
			t.Errorf("isDenied(%q) = true", p)
		}
	}
}

func BenchmarkGetCached(b *testing.B) {
	s := openTest(b, "/")
	want := mustGet(b, s)
	b.ReportAllocs()
	for b.Loop() {
		tp, err := s.Get("host")
		if err != nil || tp.Hash != want.Hash {
			b.Fatal(tp, err)
		}
	}
	if s.scans.Load() != 1 {
		b.Fatalf("rescanned: scans=%d", s.scans.Load())
	}
}

// BenchmarkGetNewProcess measures what `airlock run` pays: a fresh Store on
// an existing root (Open + Get, nothing cached in memory).
func BenchmarkGetNewProcess(b *testing.B) {
	root := openTest(b, "/").Root
	s, _ := Open(root)
	want := mustGet(b, s)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(root)
		if err != nil {
			b.Fatal(err)
		}
		tp, err := s.Get("host")
		if err != nil || tp.Hash != want.Hash || s.scans.Load() != 0 {
			b.Fatal(tp, err, s.scans.Load())
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := hostFingerprint("/"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	for b.Loop() {
		s := openTest(b, "/")
		mustGet(b, s)
	}
}

// The host template's PATH finds the toolchains the host installed under
// /usr (Go's tarball in /usr/local/go): a task's `go test ./...` once
// failed with "go: not found" (issue 19). It follows the host as it is:
// a toolchain installed later is found without a new version.
func TestHostTemplatePathFindsToolchains(t *testing.T) {
	host := fakeHost(t)
	s := openTest(t, host)
	tpl, err := s.Get("host")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tpl.Env, []string{"PATH=/usr/local/bin:/usr/bin:/bin"}) {
		t.Errorf("no toolchain: %q", tpl.Env)
	}
	for _, d := range []string{"usr/local/go/bin", "usr/local/cargo/bin"} {
		if err := os.MkdirAll(filepath.Join(host, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	again, err := s.Get("host")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Env, []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin:/usr/local/cargo/bin"}) || again.Version != tpl.Version {
		t.Errorf("with go and cargo: %q (version %s, was %s)", again.Env, again.Version, tpl.Version)
	}
	again.Env[0] = "changed"
	if third, _ := s.Get("host"); third.Env[0] == "changed" {
		t.Error("Get handed out a shared slice")
	}
}
