package e2b

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// MaxFile is the largest file read or written through /files.
const MaxFile = 256 << 20

func (s *Server) fileRoutes() {
	s.handleEnvd("GET /health", s.health)
	s.handleEnvd("GET /files", s.readFile)
	s.handleEnvd("POST /files", s.writeFiles)
	s.handleEnvd("POST /filesystem.Filesystem/Stat", s.stat)
	s.handleEnvd("POST /filesystem.Filesystem/ListDir", s.listDir)
	s.handleEnvd("POST /filesystem.Filesystem/MakeDir", s.makeDir)
	s.handleEnvd("POST /filesystem.Filesystem/Remove", s.remove)
	s.handleEnvd("POST /filesystem.Filesystem/Move", s.move)
	s.handleEnvd("POST /filesystem.Filesystem/WatchDir", s.watchDir)
	s.watcherRoutes()
}

// health is 204 while the sandbox runs, 502 when it is paused or gone,
// as E2B's proxy answers (the SDKs read 502 as "not running":
// isRunning() is false after pause()).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	sb, err := s.sbx.Get(r.Context(), sandboxOf(r))
	switch {
	case err != nil || sb.State == "stopped":
		writeAPIError(w, http.StatusBadGateway, "the sandbox is not running")
	case sb.State == "paused":
		writeAPIError(w, http.StatusBadGateway, "the sandbox is paused (connect resumes it)")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// files is the sandbox's file access under its policy.
func (s *Server) files(r *http.Request) (runtime.Files, error) {
	return s.fs.AgentFiles(r.Context(), sandboxOf(r))
}

// fileStatus maps a file error to the envd HTTP status.
func fileStatus(err error) int {
	if st := apiStatus(err); st != http.StatusInternalServerError {
		return st
	}
	if errors.Is(err, fs.ErrNotExist) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// readFile streams a file. Nothing is held in memory beyond a copy
// buffer: the status and headers go out with the first byte, so that a
// read refused before any byte (the policy, a file gone since Stat) still
// gets its error answer, and one that fails after it breaks the
// connection rather than end as a short but clean body.
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	f, err := s.files(r)
	if err != nil {
		writeAPIError(w, fileStatus(err), err.Error())
		return
	}
	p := resolve(r.URL.Query().Get("path"))
	fi, err := f.Stat(r.Context(), p)
	if err != nil {
		writeAPIError(w, fileStatus(err), err.Error())
		return
	}
	if fi.Type != "file" {
		writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("%s is a %s, not a file", p, fi.Type))
		return
	}
	if fi.Size > MaxFile {
		writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("%s is %d bytes: files over %d bytes are not served", p, fi.Size, MaxFile))
		return
	}
	fw := &fileWriter{w: w, name: path.Base(p), size: fi.Size}
	_, err = f.ReadFile(r.Context(), p, fw, MaxFile)
	switch {
	case err != nil && !fw.started:
		writeAPIError(w, fileStatus(err), err.Error())
	case !fw.started:
		// Empty (if only since Stat): net/http sends Content-Length: 0.
		fw.size = 0
		fw.start()
	case fw.size > 0 && fw.n == fw.size:
		// Every byte Content-Length promised is out (a file that grew
		// since Stat is served as it was then).
	case err != nil || fw.size > 0:
		// Failed, or shrank since Stat, part-way through the body.
		panic(http.ErrAbortHandler)
	}
}

// errPastLength stops a read at the Content-Length already sent.
var errPastLength = errors.New("the file grew past the size it was served at")

// fileWriter is the body of GET /files: it sends the 200 header and the
// file's headers with the first byte written, and nothing past size.
type fileWriter struct {
	w    http.ResponseWriter
	name string
	// size is the Content-Length when over 0; files Stat sizes 0 (empty,
	// or pseudo files) go without one and are sent as they come.
	size    int64
	n       int64
	started bool
}

func (fw *fileWriter) start() {
	if fw.started {
		return
	}
	fw.started = true
	h := fw.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": fw.name}))
	if fw.size > 0 {
		h.Set("Content-Length", strconv.FormatInt(fw.size, 10))
	}
	fw.w.WriteHeader(http.StatusOK)
}

func (fw *fileWriter) Write(p []byte) (int, error) {
	fw.start()
	var past error
	if left := fw.size - fw.n; fw.size > 0 && int64(len(p)) > left {
		p, past = p[:left], errPastLength
	}
	n, err := fw.w.Write(p)
	fw.n += int64(n)
	if err == nil {
		err = past
	}
	return n, err
}

// writtenEntry is an answer entry of POST /files.
type writtenEntry struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// writeFiles is POST /files: one file (an octet stream, gzip or not) or
// the "file" parts of a multipart body, each written through the policed
// file API; the answer lists what was written.
func (s *Server) writeFiles(w http.ResponseWriter, r *http.Request) {
	f, err := s.files(r)
	if err != nil {
		writeAPIError(w, fileStatus(err), err.Error())
		return
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-metadata-") || strings.EqualFold(k, "X-File-Metadata") {
			writeAPIError(w, http.StatusBadRequest, "unsupported by airlock: file metadata ("+k+"): airlock's file API keeps no extended attributes, so none is written and none is shown")
			return
		}
	}
	body := http.MaxBytesReader(w, r.Body, MaxFile+(1<<20))
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var out []writtenEntry
	write := func(p string, src io.Reader) bool {
		if p == "" {
			writeAPIError(w, http.StatusBadRequest, "a path is required (the path parameter, or the part's file name)")
			return false
		}
		p = resolve(p)
		if _, err := f.WriteFile(r.Context(), p, src, 0o644, true); err != nil {
			writeAPIError(w, fileStatus(err), err.Error())
			return false
		}
		out = append(out, writtenEntry{Path: p, Name: path.Base(p), Type: "file"})
		return true
	}
	var ok bool
	switch ct {
	case "multipart/form-data":
		ok = writeParts(w, r, multipart.NewReader(body, params["boundary"]), write)
	case "application/octet-stream", "":
		ok = writeStream(w, r, body, write)
	default:
		writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("Content-Type %q: multipart/form-data or application/octet-stream", ct))
		return
	}
	if !ok {
		return
	}
	if len(out) == 0 {
		writeAPIError(w, http.StatusBadRequest, "no file part in the body")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// writeParts writes each "file" part of a multipart body; false: an
// error was answered.
func writeParts(w http.ResponseWriter, r *http.Request, mr *multipart.Reader, write func(p string, src io.Reader) bool) bool {
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return true
		}
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, "multipart body: "+err.Error())
			return false
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		p := r.URL.Query().Get("path")
		if p == "" {
			// The part's file name is the path (part.FileName would
			// keep only its last element).
			_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			p = dp["filename"]
		}
		ok := write(p, part)
		part.Close()
		if !ok {
			return false
		}
	}
}

// writeStream writes an octet-stream body (gzip or none) to the path
// parameter; false: an error was answered.
func writeStream(w http.ResponseWriter, r *http.Request, body io.Reader, write func(p string, src io.Reader) bool) bool {
	src := body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			writeAPIError(w, http.StatusBadRequest, "gzip body: "+err.Error())
			return false
		}
		defer zr.Close()
		src = io.LimitReader(zr, MaxFile+1)
	default:
		writeAPIError(w, http.StatusBadRequest, fmt.Sprintf("Content-Encoding %q: gzip or none", enc))
		return false
	}
	return write(r.URL.Query().Get("path"), src)
}

// entryInfo is filesystem.EntryInfo in the protobuf JSON mapping.
type entryInfo struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Path          string  `json:"path"`
	Size          string  `json:"size"`
	Mode          uint32  `json:"mode"`
	Permissions   string  `json:"permissions"`
	Owner         string  `json:"owner"`
	Group         string  `json:"group"`
	ModifiedTime  string  `json:"modifiedTime"`
	SymlinkTarget *string `json:"symlinkTarget,omitempty"`
}

// userName names the sandbox's users by id, as its /etc/passwd does.
func userName(id int) string {
	switch id {
	case 0:
		return "root"
	case 1000:
		return UserName
	case 65534:
		return "nobody"
	}
	return strconv.Itoa(id)
}

// entryOf is fi as E2B describes it. A symlink is described as envd
// does: its type and permission bits are those of what it resolves to
// (FILE_TYPE_UNSPECIFIED and 0 when it resolves to nothing), its
// symlinkTarget the resolved path (the link's own path when there is
// none); its name, size, times and permissions string are the link's.
func entryOf(ctx context.Context, f runtime.Files, fi runtime.FileInfo) entryInfo {
	e := entryInfo{
		Name: fi.Name, Path: fi.Path, Size: strconv.FormatInt(fi.Size, 10), Mode: fi.Mode & 0o7777,
		Owner: userName(fi.UID), Group: userName(fi.GID), ModifiedTime: fi.ModTime.UTC().Format(time.RFC3339Nano),
	}
	mode := fs.FileMode(fi.Mode & 0o777)
	e.Type = fileType(fi.Type)
	switch fi.Type {
	case "file":
	case "dir":
		mode |= fs.ModeDir
	case "symlink":
		mode |= fs.ModeSymlink
		target, tfi, ok := resolveLinks(ctx, f, fi.Path)
		e.Type, e.Mode = "FILE_TYPE_UNSPECIFIED", 0
		if !ok {
			target = fi.Path
		} else {
			e.Type, e.Mode = fileType(tfi.Type), tfi.Mode&0o777
		}
		e.SymlinkTarget = &target
	default:
		mode |= fs.ModeIrregular
	}
	e.Permissions = mode.String()
	return e
}

// fileType is E2B's FileType of a file type of the runtime's.
func fileType(t string) string {
	switch t {
	case "file":
		return "FILE_TYPE_FILE"
	case "dir":
		return "FILE_TYPE_DIRECTORY"
	}
	return "FILE_TYPE_UNSPECIFIED"
}

type pathRequest struct {
	Path  string `json:"path"`
	Depth uint32 `json:"depth"`
}

func (s *Server) fileCall(w http.ResponseWriter, r *http.Request) (runtime.Files, *pathRequest, bool) {
	var req pathRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return nil, nil, false
	}
	f, err := s.files(r)
	if err != nil {
		writeUnary(w, nil, rpcErr(err))
		return nil, nil, false
	}
	req.Path = resolve(req.Path)
	return f, &req, true
}

// fileRPCErr maps a file error to a Connect error.
func fileRPCErr(err error) *rpcError {
	if errors.Is(err, fs.ErrNotExist) {
		return &rpcError{Code: codeNotFound, Message: oneLine(err.Error())}
	}
	return rpcErr(err)
}

func (s *Server) stat(w http.ResponseWriter, r *http.Request) {
	f, req, ok := s.fileCall(w, r)
	if !ok {
		return
	}
	fi, err := f.Stat(r.Context(), req.Path)
	if err != nil {
		writeUnary(w, nil, fileRPCErr(err))
		return
	}
	writeUnary(w, map[string]any{"entry": entryOf(r.Context(), f, fi)}, nil)
}

// maxListed bounds a ListDir answer.
const maxListed = 100000

func (s *Server) listDir(w http.ResponseWriter, r *http.Request) {
	f, req, ok := s.fileCall(w, r)
	if !ok {
		return
	}
	depth := int(req.Depth)
	if depth == 0 {
		depth = 1
	}
	out := []entryInfo{}
	cf := newStatCache(f)
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		list, err := f.List(r.Context(), dir)
		if err != nil {
			return err
		}
		cf.seen(list)
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		for _, fi := range list {
			if len(out) >= maxListed {
				return fmt.Errorf("more than %d entries: list a smaller tree: %w", maxListed, errdefs.ErrLimitExceeded)
			}
			out = append(out, entryOf(r.Context(), cf, fi))
			if fi.Type == "dir" && level < depth {
				if err := walk(fi.Path, level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(req.Path, 1); err != nil {
		writeUnary(w, nil, fileRPCErr(err))
		return
	}
	writeUnary(w, map[string]any{"entries": out}, nil)
}

func (s *Server) makeDir(w http.ResponseWriter, r *http.Request) {
	f, req, ok := s.fileCall(w, r)
	if !ok {
		return
	}
	if fi, err := f.Stat(r.Context(), req.Path); err == nil {
		writeUnary(w, nil, errorf("already_exists", "%s already exists (a %s)", req.Path, fi.Type))
		return
	}
	if err := f.Mkdir(r.Context(), req.Path, true); err != nil {
		writeUnary(w, nil, fileRPCErr(err))
		return
	}
	fi, err := f.Stat(r.Context(), req.Path)
	if err != nil {
		writeUnary(w, nil, fileRPCErr(err))
		return
	}
	writeUnary(w, map[string]any{"entry": entryOf(r.Context(), f, fi)}, nil)
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	f, req, ok := s.fileCall(w, r)
	if !ok {
		return
	}
	// A path that is not there is removed already: envd's Remove
	// succeeds then (os.RemoveAll), and so does the door. The policy
	// judged the path first: a refusal is still a refusal.
	if err := f.Remove(r.Context(), req.Path, true); err != nil && !notExist(err) {
		writeUnary(w, nil, fileRPCErr(err))
		return
	}
	writeUnary(w, struct{}{}, nil)
}

type moveRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// move is files.rename: envd's Move (rename(2), the destination's
// missing parents made), under the policy as a read and removal of the
// source and a write of the destination (filesapi). It answers the
// destination's entry.
func (s *Server) move(w http.ResponseWriter, r *http.Request) {
	var req moveRequest
	if rerr := readUnary(r, &req); rerr != nil {
		writeUnary(w, nil, rerr)
		return
	}
	if req.Source == "" || req.Destination == "" {
		writeUnary(w, nil, errorf(codeInvalidArgument, "source and destination are required"))
		return
	}
	f, err := s.files(r)
	if err != nil {
		writeUnary(w, nil, rpcErr(err))
		return
	}
	from, to := resolve(req.Source), resolve(req.Destination)
	if err := f.Rename(r.Context(), from, to); err != nil {
		rerr := fileRPCErr(err)
		if rerr.Code == codeNotFound {
			rerr.Message = "source file not found: " + rerr.Message
		}
		writeUnary(w, nil, rerr)
		return
	}
	fi, err := f.Stat(r.Context(), to)
	if err != nil {
		writeUnary(w, nil, fileRPCErr(err))
		return
	}
	writeUnary(w, map[string]any{"entry": entryOf(r.Context(), f, fi)}, nil)
}

// notExist says whether a file error is a missing path (the agent's
// errors carry errdefs.ErrNotFound, the fake's fs.ErrNotExist).
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errdefs.ErrNotFound)
}
