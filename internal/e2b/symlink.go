package e2b

import (
	"context"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/internal/runtime"
)

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel bounds them (ELOOP after 40).
const maxLinks = 40

// resolveLinks is p with every symlink in it followed, which is what
// E2B reports as a symlink's target (envd's EntryInfo: the resolved path,
// not the link's text), and what it finally names. Each component is
// looked up in the sandbox with Stat, so an absolute target is resolved
// in the sandbox's root, never the host's. ok is false when p does not
// resolve: a dangling link, a loop, a component that is not a directory.
func resolveLinks(ctx context.Context, f runtime.Files, p string) (string, runtime.FileInfo, bool) {
	todo := components(p)
	cur := "/"
	var last runtime.FileInfo
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			// cur holds no symlink any more: its parent is lexical.
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := f.Stat(ctx, next)
		if err != nil {
			return "", runtime.FileInfo{}, false
		}
		if fi.Type == "symlink" {
			if links++; links > maxLinks || fi.Target == "" {
				return "", runtime.FileInfo{}, false
			}
			if path.IsAbs(fi.Target) {
				cur = "/"
			}
			todo = append(components(fi.Target), todo...)
			continue
		}
		if len(todo) > 0 && fi.Type != "dir" {
			return "", runtime.FileInfo{}, false
		}
		cur, last = next, fi
	}
	if cur == "/" {
		fi, err := f.Stat(ctx, "/")
		if err != nil {
			return "", runtime.FileInfo{}, false
		}
		last = fi
	}
	return cur, last, true
}

// components are p's path elements, without empty ones and ".".
func components(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// statCache is a request's file access with its Stat answers kept: the
// symlinks of one listing share the directories their resolution walks,
// and a listing already knows its entries (seen).
type statCache struct {
	runtime.Files
	m map[string]statAnswer
}

type statAnswer struct {
	fi  runtime.FileInfo
	err error
}

// maxCached bounds a statCache (past it, Stat is asked every time).
const maxCached = 1 << 16

func newStatCache(f runtime.Files) *statCache {
	return &statCache{Files: f, m: map[string]statAnswer{}}
}

func (c *statCache) Stat(ctx context.Context, p string) (runtime.FileInfo, error) {
	if a, ok := c.m[p]; ok {
		return a.fi, a.err
	}
	fi, err := c.Files.Stat(ctx, p)
	if len(c.m) < maxCached && ctx.Err() == nil {
		c.m[p] = statAnswer{fi, err}
	}
	return fi, err
}

// seen keeps what a listing said of its entries.
func (c *statCache) seen(list []runtime.FileInfo) {
	for _, fi := range list {
		if len(c.m) >= maxCached {
			return
		}
		c.m[fi.Path] = statAnswer{fi: fi}
	}
}
