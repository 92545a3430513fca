package sdk

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/airlock-dev/airlock/wire"
)

// FileInfo describes a file inside a sandbox.
type FileInfo = wire.FileInfo

// Paths given to the file methods are absolute inside the sandbox and are
// resolved there, with the rights of the sandbox's command user.

func filesQuery(path string, extra ...string) url.Values {
	q := url.Values{"path": {path}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q
}

// ReadFile copies a file of the sandbox to w.
func (c *Client) ReadFile(ctx context.Context, id, path string, w io.Writer) (int64, error) {
	p, err := sandboxPath(id, "files")
	if err != nil {
		return 0, err
	}
	a, err := c.request(ctx, http.MethodGet, p, filesQuery(path), nil, "application/octet-stream", true)
	if err != nil {
		return 0, err
	}
	defer a.close()
	n, err := io.Copy(w, a.Body)
	if err != nil {
		return n, a.readErr("GET "+p, err)
	}
	return n, nil
}

// WriteFile creates or replaces a file in the sandbox with r's content;
// mode 0 means 0644; parents creates missing directories.
func (c *Client) WriteFile(ctx context.Context, id, path string, r io.Reader, mode uint32, parents bool) error {
	p, err := sandboxPath(id, "files")
	if err != nil {
		return err
	}
	if mode == 0 {
		mode = 0o644
	}
	q := filesQuery(path, "mode", "0"+strconv.FormatUint(uint64(mode), 8), "parents", strconv.FormatBool(parents))
	return c.call(ctx, http.MethodPut, p, q, rawBody{r, "application/octet-stream"}, nil)
}

// StatFile describes one file (a symlink itself, not its target).
func (c *Client) StatFile(ctx context.Context, id, path string) (*FileInfo, error) {
	p, err := sandboxPath(id, "files", "stat")
	if err != nil {
		return nil, err
	}
	var fi FileInfo
	if err := c.call(ctx, http.MethodGet, p, filesQuery(path), nil, &fi); err != nil {
		return nil, err
	}
	return &fi, nil
}

// ListFiles lists a directory.
func (c *Client) ListFiles(ctx context.Context, id, dir string) ([]FileInfo, error) {
	p, err := sandboxPath(id, "files", "list")
	if err != nil {
		return nil, err
	}
	var w wire.FileList
	if err := c.call(ctx, http.MethodGet, p, filesQuery(dir), nil, &w); err != nil {
		return nil, err
	}
	if w.Entries == nil {
		w.Entries = []FileInfo{}
	}
	return w.Entries, nil
}

// Mkdir makes a directory (and its parents, with parents).
func (c *Client) Mkdir(ctx context.Context, id, dir string, parents bool) error {
	p, err := sandboxPath(id, "files", "mkdir")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, p, filesQuery(dir, "parents", strconv.FormatBool(parents)), nil, nil)
}

// RemoveFile removes a file or an empty directory; with recursive, a
// directory and everything in it.
func (c *Client) RemoveFile(ctx context.Context, id, path string, recursive bool) error {
	p, err := sandboxPath(id, "files")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodDelete, p, filesQuery(path, "recursive", strconv.FormatBool(recursive)), nil, nil)
}

// UploadTar unpacks a tar stream below dir in the sandbox.
func (c *Client) UploadTar(ctx context.Context, id, dir string, r io.Reader) error {
	p, err := sandboxPath(id, "files", "tar")
	if err != nil {
		return err
	}
	return c.call(ctx, http.MethodPut, p, filesQuery(dir), rawBody{r, "application/x-tar"}, nil)
}

// DownloadTar writes dir's tree in the sandbox to w as a tar stream. The
// entries the policy does not let this client read (a .env, a key) are
// left out; DownloadTarCounted also says how many.
func (c *Client) DownloadTar(ctx context.Context, id, dir string, w io.Writer) (int64, error) {
	n, _, err := c.DownloadTarCounted(ctx, id, dir, w)
	return n, err
}

// OmittedTrailer is the HTTP trailer of a tar download that counts the
// entries the daemon left out of it.
const OmittedTrailer = "Airlock-Omitted"

// DownloadTarCounted is DownloadTar that also returns how many entries the
// daemon left out because the policy does not let this client read them
// (each is recorded as file.refused). The count is known once the whole
// stream has been written; a daemon that does not send it counts 0.
func (c *Client) DownloadTarCounted(ctx context.Context, id, dir string, w io.Writer) (written int64, omitted int, err error) {
	p, err := sandboxPath(id, "files", "tar")
	if err != nil {
		return 0, 0, err
	}
	a, err := c.request(ctx, http.MethodGet, p, filesQuery(dir), nil, "application/x-tar", true)
	if err != nil {
		return 0, 0, err
	}
	defer a.close()
	n, err := io.Copy(w, a.Body)
	if err != nil {
		return n, 0, a.readErr("GET "+p, err)
	}
	if v := a.Trailer.Get(OmittedTrailer); v != "" {
		omitted, err = strconv.Atoi(v)
		if err != nil || omitted < 0 {
			return n, 0, fmt.Errorf("GET %s: malformed %s trailer %q from the airlock daemon", p, OmittedTrailer, v)
		}
	}
	return n, omitted, nil
}
