package wire

import "time"

// FileInfo describes a file inside a sandbox (symlinks are not followed).
type FileInfo struct {
	// Name is the file's base name.
	Name string `json:"name"`
	// Path is its absolute path in the sandbox.
	Path string `json:"path"`
	// Type is "file", "dir", "symlink" or "other".
	Type string `json:"type"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
	// Mode is its permission bits.
	Mode uint32 `json:"mode"`
	// ModTime is when it was last modified.
	ModTime time.Time `json:"mtime"`
	// UID is its owner inside the sandbox.
	UID int `json:"uid"`
	// GID is its group inside the sandbox.
	GID int `json:"gid"`
	// Target is a symlink's target.
	Target string `json:"symlink_target,omitempty"`
}

// FileList is the answer of GET .../files/list.
type FileList struct {
	// Entries are the directory's files.
	Entries []FileInfo `json:"entries"`
}

// FileWritten is the answer of PUT .../files.
type FileWritten struct {
	// Path is the file written.
	Path string `json:"path"`
	// Size is how many bytes it now has.
	Size int64 `json:"size"`
}

// DirMade is the answer of POST .../files/mkdir.
type DirMade struct {
	// Path is the directory made.
	Path string `json:"path"`
}
