// Package watch is the agent's record of what each command did to the
// files of the watched directories: an inotify Watcher of the trees
// (each directory watched as it appears) that hands its records to a
// sink, and the Activity of one command that the records add up to, as
// its exit message carries it (proto.FileActivity). The agent keeps one
// Activity per running command and gives every record to all of them.
package watch

import (
	"slices"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// What a command did to one path, weakest first. A path keeps the strongest
// thing done to it, except that a path written again after it was deleted
// is written (it exists again), so the lists never share a path.
const (
	actRead    uint8 = iota + 1 // opened and closed without writing
	actChmod                    // attributes changed
	actWritten                  // created or modified
	actDeleted                  // removed or renamed away (last)
)

// maxActivity caps each list of one command's file activity.
const maxActivity = 1000

// activityBudget bounds the encoded lists of one exit message, well under
// the channel's 1 MiB message bound: paths can be long, and the message must always go out.
const activityBudget = 512 << 10

// Rec is one thing done to one path, as a Watcher hands it on.
type Rec struct {
	kind uint8
	path string
	ev   uint8 // the change as a directory watch reports it (evNone: none)
}

// The changes a directory watch reports (Rec.Event), as inotify tells
// them apart: a new name, a write, a removal, a name moved away, an
// attribute change. Reads and the close after a write are none.
const (
	evNone uint8 = iota
	evCreate
	evWrite
	evRemove
	evRename
	evChmod
)

// Path is the path the record is about (absolute).
func (r Rec) Path() string { return r.path }

// Event is the change as a directory watch reports it: "create",
// "write", "remove", "rename" (moved away), "chmod", or "" for what it
// does not report (reads).
func (r Rec) Event() string {
	return [...]string{"", "create", "write", "remove", "rename", "chmod"}[r.ev]
}

// Activity collects what one command did to the watched files while it
// ran. The zero value is empty and allocates nothing until the first event.
type Activity struct {
	paths      map[string]uint8
	n          [actDeleted + 1]int // paths per kind
	incomplete bool
	shared     bool
}

// Add adds the records to a and, when lost (events the watcher could not
// read), marks it incomplete.
func (a *Activity) Add(recs []Rec, lost bool) {
	if lost {
		a.incomplete = true
	}
	for _, r := range recs {
		a.add(r.kind, r.path)
	}
}

// MarkIncomplete says a may miss things (no watcher, a directory not
// watched when the command started).
func (a *Activity) MarkIncomplete() { a.incomplete = true }

// MarkShared says another command or a host file operation ran beside
// the command, whose events a got too.
func (a *Activity) MarkShared() { a.shared = true }

// add records kind on p.
//
// A file created and then deleted by the same command ends up in deleted
// only (it may never have been there before); one deleted and created
// again in written. Reads count only for paths not otherwise touched,
// and attribute changes only for paths not written or deleted.
func (a *Activity) add(kind uint8, p string) {
	cur := a.paths[p]
	switch {
	case cur == kind:
		return
	case kind == actRead && cur != 0:
		return
	case kind == actChmod && cur > actChmod:
		return
	}
	if cur != 0 {
		a.n[cur]--
		delete(a.paths, p)
	}
	if a.n[kind] >= maxActivity {
		// dropped (also from its old list, which no longer tells the truth)
		a.incomplete = true
		return
	}
	if a.paths == nil {
		a.paths = make(map[string]uint8)
	}
	a.paths[p] = kind
	a.n[kind]++
}

// Result is the activity as the exit message carries it: sorted lists
// within activityBudget.
func (a *Activity) Result() *proto.FileActivity {
	fa := &proto.FileActivity{Incomplete: a.incomplete, Shared: a.shared}
	for p, k := range a.paths {
		switch k {
		case actWritten:
			fa.Written = append(fa.Written, p)
		case actDeleted:
			fa.Deleted = append(fa.Deleted, p)
		case actChmod:
			fa.Chmod = append(fa.Chmod, p)
		case actRead:
			fa.Read = append(fa.Read, p)
		}
	}
	for _, l := range []([]string){fa.Written, fa.Deleted, fa.Chmod, fa.Read} {
		slices.Sort(l)
	}
	fitBudget(fa)
	return fa
}

// fitBudget drops paths from the longest lists until the encoded lists
// surely fit activityBudget; whatever it drops makes the activity
// incomplete.
func fitBudget(fa *proto.FileActivity) {
	lists := []*[]string{&fa.Written, &fa.Deleted, &fa.Chmod, &fa.Read}
	total := 0
	for _, l := range lists {
		for _, p := range *l {
			total += jsonSize(p)
		}
	}
	for total > activityBudget {
		longest := lists[0]
		for _, l := range lists[1:] {
			if len(*l) > len(*longest) {
				longest = l
			}
		}
		n := len(*longest) - 1
		total -= jsonSize((*longest)[n])
		*longest = (*longest)[:n]
		fa.Incomplete = true
	}
}

// jsonSize is at least the size of s as a JSON string in a list (Go's
// encoding: control and HTML characters as \u00XX, a bad byte as \ufffd).
func jsonSize(s string) int {
	n := 3 // quotes, comma
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}
