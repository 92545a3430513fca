package bundle

import (
	"bytes"
	"errors"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

// fakeFind stands in for the secret detector: it reports each kind whose
// marker it sees, once per occurrence, out of order.
func fakeFind(b []byte) []string {
	var kinds []string
	for _, k := range []string{"github-token", "aws-access-key"} {
		for range bytes.Count(b, []byte("SECRET:"+k)) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func TestScanArtifact(t *testing.T) {
	tar := make([]byte, 1024)
	copy(tar, "hello.txt")
	copy(tar[257:], "ustar\x0000")
	utf8Cut := append(bytes.Repeat([]byte("a"), sniffLen-1), []byte("é and more")...) // é straddles the 8 KiB line

	for _, tc := range []struct {
		name    string
		path    string
		data    []byte
		symlink bool
		size    int64 // 0: len(data)
		want    Artifact
	}{
		{"text", "out/report.txt", []byte("all good\n"), false, 0,
			Artifact{Path: "out/report.txt", Type: "text", Included: true}},
		{"empty", "empty", nil, false, 0, Artifact{Path: "empty", Type: "text", Included: true}},
		{"utf-8 text", "notes.md", []byte("naïve café — ✓\n"), false, 0, Artifact{Path: "notes.md", Type: "text", Included: true}},
		{"script is text", "run.sh", []byte("#!/bin/sh\necho hi\n"), false, 0, Artifact{Path: "run.sh", Type: "text", Included: true}},
		{"ansi is still text", "log", []byte("\x1b[31mred\x1b[0m\n"), false, 0, Artifact{Path: "log", Type: "text", Included: true}},
		{"elf", "bin/app", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), false, 0, Artifact{Path: "bin/app", Type: "executable", Included: true}},
		{"mach-o 64", "bin/app", []byte{0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1}, false, 0, Artifact{Path: "bin/app", Type: "executable", Included: true}},
		{"mach-o fat", "bin/app", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2}, false, 0, Artifact{Path: "bin/app", Type: "executable", Included: true}},
		{"java class is not mach-o", "A.class", []byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52, 0}, false, 0, Artifact{Path: "A.class", Type: "binary", Included: true}},
		{"pe", "app.exe", []byte("MZ\x90\x00\x03\x00\x00\x00"), false, 0, Artifact{Path: "app.exe", Type: "executable", Included: true}},
		{"zip", "a.zip", []byte("PK\x03\x04\x14\x00"), false, 0, Artifact{Path: "a.zip", Type: "archive", Included: false}},
		{"gzip", "a.tgz", []byte{0x1f, 0x8b, 8, 0}, false, 0, Artifact{Path: "a.tgz", Type: "archive", Included: false}},
		{"tar", "a.tar", tar, false, 0, Artifact{Path: "a.tar", Type: "archive", Included: false}},
		{"xz", "a.xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0, 0}, false, 0, Artifact{Path: "a.xz", Type: "archive", Included: false}},
		{"bzip2", "a.bz2", []byte("BZh91AY&SY"), false, 0, Artifact{Path: "a.bz2", Type: "archive", Included: false}},
		{"7z", "a.7z", []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c, 0, 4}, false, 0, Artifact{Path: "a.7z", Type: "archive", Included: false}},
		{"zstd", "a.zst", []byte{0x28, 0xb5, 0x2f, 0xfd, 0}, false, 0, Artifact{Path: "a.zst", Type: "archive", Included: false}},
		{"nul is binary", "data.bin", []byte("abc\x00def"), false, 0, Artifact{Path: "data.bin", Type: "binary", Included: true}},
		{"invalid utf-8 is binary", "latin1.txt", []byte("caf\xe9\n"), false, 0, Artifact{Path: "latin1.txt", Type: "binary", Included: true}},
		{"a character cut by the sniff window is text", "big.txt", utf8Cut, false, 0, Artifact{Path: "big.txt", Size: int64(len(utf8Cut)), Type: "text", Included: true}},
		{"nul after 8 KiB is not looked at", "late.txt", append(bytes.Repeat([]byte("a"), sniffLen), 0), false, 0,
			Artifact{Path: "late.txt", Size: sniffLen + 1, Type: "text", Included: true}},
		{"large", "dump.sql", []byte("INSERT"), false, LargeArtifact + 1, Artifact{Path: "dump.sql", Size: LargeArtifact + 1, Type: "text", Large: true}},
		{"exactly the limit is not large", "dump.sql", []byte("INSERT"), false, LargeArtifact, Artifact{Path: "dump.sql", Size: LargeArtifact, Type: "text", Included: true}},
		{"secrets, deduped and sorted", ".env", []byte("A=SECRET:github-token B=SECRET:aws-access-key C=SECRET:github-token"), false, 0,
			Artifact{Path: ".env", Type: "text", Findings: []string{"aws-access-key", "github-token"}}},
		{"symlink", "link", []byte("/etc/passwd"), true, 0, Artifact{Path: "link", Type: "symlink"}},
		{"path cleaned", "./out//a/./b.txt", []byte("x"), false, 0, Artifact{Path: "out/a/b.txt", Type: "text", Included: true}},
		{"hostile path never included", "../../etc/cron.d/x", []byte("x"), false, 0, Artifact{Path: "../../etc/cron.d/x", Type: "text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			if size == 0 {
				size = int64(len(tc.data))
			}
			if tc.want.Size == 0 {
				tc.want.Size = size
			}
			got := ScanArtifact(tc.path, tc.data, tc.symlink, size, fakeFind)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ScanArtifact(%q)\n got %+v\nwant %+v", tc.path, got, tc.want)
			}
		})
	}
}

func TestScanArtifactNilFind(t *testing.T) {
	got := ScanArtifact("a", []byte("SECRET:github-token"), false, 19, nil)
	if !got.Included || got.Findings != nil {
		t.Errorf("with no detector: %+v", got)
	}
}

func TestSafePath(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" means refused
	}{
		{"a", "a"},
		{"outputs/e1.stdout", "outputs/e1.stdout"},
		{"./a//b/./c/", "a/b/c"},
		{"a/.../b", "a/.../b"}, // three dots is a name
		{"..a/b..", "..a/b.."},
		{"dir with space/ünïcode", "dir with space/ünïcode"},
		{strings.Repeat("a", MaxPath), strings.Repeat("a", MaxPath)},

		{"", ""},
		{".", ""},
		{"./", ""},
		{"a/..", ""},
		{"..", ""},
		{"../x", ""},
		{"a/../b", ""}, // Clean would make it "b": refused all the same
		{"a/b/../../../etc/passwd", ""},
		{"/etc/passwd", ""},
		{"//server/share", ""},
		{"a\x00b", ""},
		{"a\\b", ""},
		{"..\\..\\windows\\system32", ""},
		{"C:\\x", ""},
		{strings.Repeat("a", MaxPath+1), ""},
		{strings.Repeat("a/", MaxPath/2+1), ""},
	} {
		got, err := SafePath(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("SafePath(%.40q) = %q, want refusal", tc.in, got)
			} else if !errors.Is(err, ErrUnsafePath) || !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("SafePath(%.40q): error %v is not ErrUnsafePath and ErrInvalid", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SafePath(%.40q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzSafePath: whatever SafePath accepts stays inside the directory a
// bundle is unpacked into, and is already clean.
func FuzzSafePath(f *testing.F) {
	for _, s := range []string{"a/b", "../a", "a/../../b", "/abs", "a\\b", "./a", "a//b/", "", "..", "a/./..", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := SafePath(p)
		if err != nil {
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("SafePath(%q): unexpected error %v", p, err)
			}
			return
		}
		if got == "" || got == "." || path.Clean(got) != got || path.IsAbs(got) || len(got) > MaxPath ||
			strings.ContainsAny(got, "\x00\\") {
			t.Fatalf("SafePath(%q) = %q, not a clean relative path", p, got)
		}
		for _, e := range strings.Split(got, "/") {
			if e == ".." {
				t.Fatalf("SafePath(%q) = %q has a .. element", p, got)
			}
		}
		root := "/bundle/root"
		if j := filepath.Join(root, got); !strings.HasPrefix(j, root+"/") {
			t.Fatalf("SafePath(%q) = %q escapes the root: %q", p, got, j)
		}
		if again, err := SafePath(got); err != nil || again != got {
			t.Fatalf("SafePath(SafePath(%q)) = %q, %v; want %q", p, again, err, got)
		}
	})
}
