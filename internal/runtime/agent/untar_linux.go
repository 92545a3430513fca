package agent

import (
	"io"
	"os"
	"path"

	"github.com/airlock-dev/airlock/internal/tarball"
)

// untar unpacks the tar stream on files[0] below m.Path. Every path is
// resolved with RESOLVE_IN_ROOT against the destination, so neither ".."
// nor a symlink planted inside the sandbox can lead the write elsewhere.
// Entries are owned by the command user.
func (s *Server) untar(m *Message, files []*os.File) {
	defer closeAll(files)
	if len(files) != 1 || m.Path == "" || !path.IsAbs(m.Path) {
		s.reply(&Message{Op: OpError, ID: m.ID, Code: "invalid", Error: "untar needs an absolute path and one descriptor"})
		return
	}
	var n int
	end := s.hostOp()
	err := s.asUser(func() error {
		var err error
		n, err = tarball.Extract(files[0], m.Path, tarball.ExtractOptions{UID: s.hard.UID, GID: s.hard.GID})
		return err
	})
	end()
	if err != nil {
		// drain so the writer is not stuck
		_, _ = io.Copy(io.Discard, files[0])
		s.reply(&Message{Op: OpError, ID: m.ID, Code: untarErrCode(err), Error: err.Error()})
		return
	}
	s.reply(&Message{Op: OpDone, ID: m.ID, PID: n})
}

// untarErrCode: a refused write (permissions, a write scope) is "denied";
// anything else is the stream's or the destination's fault.
func untarErrCode(err error) string {
	if code := fileErrCode(err); code == "denied" {
		return code
	}
	return "invalid"
}
