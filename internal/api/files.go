package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/airlock-dev/airlock/internal/tenant"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/filesapi"
	"github.com/airlock-dev/airlock/internal/runtime"
	"github.com/airlock-dev/airlock/wire"
)

// Limits of the file routes.
const (
	// MaxUpload is the largest body of a file or tar upload.
	MaxUpload = 256 << 20
	// MaxRead is the largest file GET /files returns.
	MaxRead = 256 << 20
)

func (s *Server) filesRoutes() {
	s.handle("GET /v1/sandboxes/{id}/files", access{role: tenant.Agent, kind: tenant.Sandbox}, s.fileRead)
	s.handle("PUT /v1/sandboxes/{id}/files", access{role: tenant.Agent, kind: tenant.Sandbox}, s.fileWrite)
	s.handle("DELETE /v1/sandboxes/{id}/files", access{role: tenant.Agent, kind: tenant.Sandbox}, s.fileRemove)
	s.handle("GET /v1/sandboxes/{id}/files/stat", access{role: tenant.Agent, kind: tenant.Sandbox}, s.fileStat)
	s.handle("GET /v1/sandboxes/{id}/files/list", access{role: tenant.Agent, kind: tenant.Sandbox}, s.fileList)
	s.handle("POST /v1/sandboxes/{id}/files/mkdir", access{role: tenant.Agent, kind: tenant.Sandbox}, s.fileMkdir)
	s.handle("GET /v1/sandboxes/{id}/files/tar", access{role: tenant.Agent, kind: tenant.Sandbox}, s.tarDownload)
	s.handle("PUT /v1/sandboxes/{id}/files/tar", access{role: tenant.Agent, kind: tenant.Sandbox}, s.tarUpload)
}

// filesFor validates the id and the path query and returns the sandbox's
// files; on error it has answered.
func (s *Server) filesFor(w http.ResponseWriter, r *http.Request) (runtime.Files, string, bool) {
	id := r.PathValue("id")
	if err := validID(id); err != nil {
		writeError(w, err)
		return nil, "", false
	}
	p := r.URL.Query().Get("path")
	if p == "" || p[0] != '/' {
		writeError(w, fmt.Errorf("path must be an absolute path inside the sandbox: %w", errdefs.ErrInvalid))
		return nil, "", false
	}
	f, err := s.files.AgentFiles(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return nil, "", false
	}
	return f, p, true
}

func boolParam(r *http.Request, name string) bool {
	v, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return v
}

func (s *Server) fileRead(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	// The answer starts with the first byte, so that a file that cannot be
	// read (missing, not a regular file, over MaxRead) gets its error status.
	lw := &lazyWriter{w: w, ctype: "application/octet-stream"}
	_, err := f.ReadFile(r.Context(), p, lw, MaxRead)
	if err != nil && !lw.started {
		writeError(w, err)
		return
	}
	lw.start() // an empty file
}

// lazyWriter sends the 200 header with the first byte written.
type lazyWriter struct {
	w       http.ResponseWriter
	ctype   string
	started bool
}

func (l *lazyWriter) start() {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", l.ctype)
		l.w.WriteHeader(http.StatusOK)
	}
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	l.start()
	return l.w.Write(p)
}

func (s *Server) fileWrite(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	mode := uint64(0o644)
	if m := r.URL.Query().Get("mode"); m != "" {
		var err error
		if mode, err = strconv.ParseUint(m, 8, 32); err != nil || mode > 0o777 {
			writeError(w, fmt.Errorf("mode %q: want octal permission bits like 0644: %w", m, errdefs.ErrInvalid))
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUpload)
	n, err := f.WriteFile(r.Context(), p, r.Body, uint32(mode), boolParam(r, "parents"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.FileWritten{Path: p, Size: n})
}

func (s *Server) fileRemove(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	if err := f.Remove(r.Context(), p, boolParam(r, "recursive")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) fileStat(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	st, err := f.Stat(r.Context(), p)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, fileInfoOut(st))
}

func (s *Server) fileList(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	list, err := f.List(r.Context(), p)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.FileList{Entries: mapAll(list, fileInfoOut)})
}

func (s *Server) fileMkdir(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	if err := f.Mkdir(r.Context(), p, boolParam(r, "parents")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, wire.DirMade{Path: p})
}

func (s *Server) tarDownload(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	if _, err := f.Stat(r.Context(), p); err != nil {
		writeError(w, err)
		return
	}
	// Entries the policy does not let the caller read are left out of the
	// archive; the trailer counts them (each is recorded as file.refused).
	w.Header().Set("Trailer", OmittedTrailer)
	lw := &lazyWriter{w: w, ctype: "application/x-tar"}
	_, err := f.Tar(r.Context(), p, lw)
	var om *filesapi.OmittedError
	if errors.As(err, &om) {
		lw.start()
		w.Header().Set(OmittedTrailer, strconv.Itoa(len(om.Paths)))
		return
	}
	if err != nil && !lw.started {
		w.Header().Del("Trailer")
		writeError(w, err)
		return
	}
	lw.start()
}

// OmittedTrailer is the HTTP trailer of a tar download that counts the
// entries left out because the policy does not let the caller read them.
const OmittedTrailer = "Airlock-Omitted"

func (s *Server) tarUpload(w http.ResponseWriter, r *http.Request) {
	f, p, ok := s.filesFor(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxUpload)
	if err := f.Untar(r.Context(), p, r.Body); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
