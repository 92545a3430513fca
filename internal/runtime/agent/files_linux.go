package agent

import (
	"os"
	"path"

	"github.com/airlock-dev/airlock/internal/runtime/agent/fileops"
	"github.com/airlock-dev/airlock/internal/runtime/agent/proto"
)

// The host's file operations (OpFile, OpUntar) run in package fileops as
// the command user, under the write scope in force; what is the agent's
// here is the answer and the file activity they cause (hostOp).

func (s *Server) file(m *proto.Message, files []*os.File) {
	defer closeAll(files)
	op := m.File
	if op == nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "invalid", Error: "file op missing"})
		return
	}
	end := func() {}
	if op.Kind != "stat" && op.Kind != "list" && op.Kind != "statfs" { // (reads change nothing)
		end = s.hostOp()
	}
	var out *proto.Message
	err := s.asUser(func() error {
		var err error
		out, err = fileops.Do(op, files)
		return err
	})
	end()
	if err != nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: fileops.ErrCode(err), Error: err.Error()})
		return
	}
	out.Op, out.ID = proto.OpDone, m.ID
	s.reply(out)
}

// untar unpacks the tar stream on files[0] below m.Path, entries owned by
// the command user (fileops.Untar).
func (s *Server) untar(m *proto.Message, files []*os.File) {
	defer closeAll(files)
	if len(files) != 1 || m.Path == "" || !path.IsAbs(m.Path) {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: "invalid", Error: "untar needs an absolute path and one descriptor"})
		return
	}
	var n int
	end := s.hostOp()
	err := s.asUser(func() error {
		var err error
		n, err = fileops.Untar(files[0], m.Path, s.hard.UID, s.hard.GID)
		return err
	})
	end()
	if err != nil {
		s.reply(&proto.Message{Op: proto.OpError, ID: m.ID, Code: fileops.UntarErrCode(err), Error: err.Error()})
		return
	}
	s.reply(&proto.Message{Op: proto.OpDone, ID: m.ID, PID: n})
}

// asUser runs fn as the command user under the write layers in force
// (fileops.AsUser), the same as every new command's.
func (s *Server) asUser(fn func() error) error {
	return fileops.AsUser(s.hard.UID, s.hard.GID, s.writeLayers(), fn)
}
