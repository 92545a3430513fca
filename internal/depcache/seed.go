package depcache

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/internal/tarball"
)

// Seed copies repo's stores into the sandbox's caches, before the task's
// checkout (and its write scope): the sandbox's own copy, which nothing
// it does can bring back but Collect. Recorded (cache.seed).
func (d *Caches) Seed(ctx context.Context, sandboxID, taskID, repo string) error {
	if err := d.enabled(); err != nil {
		return err
	}
	project := Project(repo)
	f, err := d.c.Files(ctx, sandboxID)
	if err != nil {
		return err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	seeded := map[string]int{}
	home := d.homeOf(sandboxID)
	for _, eco := range ecosystems {
		dir := d.storeDir(project, eco.name)
		n := countFiles(dir)
		if n == 0 {
			continue
		}
		if err := f.Mkdir(ctx, eco.dirIn(home), true); err != nil {
			return fmt.Errorf("seed %s cache: %w", eco.name, err)
		}
		pr, pw := io.Pipe()
		write := tarball.WriteDir
		if eco.seed != nil {
			write = eco.seed
		}
		go func() { pw.CloseWithError(write(pw, dir)) }()
		err := f.Untar(ctx, eco.dirIn(home), pr)
		pr.Close()
		if err != nil {
			return fmt.Errorf("seed %s cache: %w", eco.name, err)
		}
		seeded[eco.name] = n
	}
	return d.c.Record(ctx, audit.Entry{SandboxID: sandboxID, TaskID: taskID, Kind: "cache.seed", Payload: map[string]any{"project": project, "files": seeded}})
}

func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, de os.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// Collect adds to repo's stores what the task's caches hold that the
// base commit's lockfiles pin (lockfile reads one by name at that
// commit; os.ErrNotExist: none), ecosystem by ecosystem, and records
// what it added and refused (cache.add). An ecosystem whose registry
// the task's egress record never reached adds nothing.
func (d *Caches) Collect(ctx context.Context, sandboxID, taskID, repo string, lockfile func(name string) ([]byte, error)) error {
	if err := d.enabled(); err != nil {
		return err
	}
	project := Project(repo)
	reached, err := d.registriesReached(ctx, sandboxID)
	if err != nil {
		return err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	report := map[string]any{}
	for _, eco := range ecosystems {
		r := d.collectOne(ctx, sandboxID, project, eco, reached, lockfile)
		if r != nil {
			report[eco.name] = r
		}
	}
	return d.c.Record(ctx, audit.Entry{SandboxID: sandboxID, TaskID: taskID, Kind: "cache.add", Payload: map[string]any{"project": project, "ecosystems": report}})
}

// registriesReached are the preset names whose hosts an allowed CONNECT
// or request of the sandbox's egress record named.
func (d *Caches) registriesReached(ctx context.Context, sandboxID string) (map[string]bool, error) {
	log := d.c.AuditLog()
	if log == nil {
		return map[string]bool{}, nil // no record: nothing is known to have come through the proxy
	}
	d.c.FlushRefusals(ctx, sandboxID)
	events, err := log.Query(ctx, store.AuditFilter{SandboxID: sandboxID, Kind: "egress"})
	if err != nil {
		return nil, err
	}
	hosts := map[string]bool{}
	for _, e := range events {
		if e.Kind != string(egress.KindConnect) && e.Kind != string(egress.KindRequest) {
			continue
		}
		var p struct{ Decision, Host string }
		if jsonUnmarshal(e.Payload, &p) == nil && p.Decision == "allow" {
			hosts[strings.ToLower(p.Host)] = true
		}
	}
	out := map[string]bool{}
	for name, hs := range d.cfg.Presets {
		for _, h := range hs {
			if hosts[strings.ToLower(hostOnly(h))] {
				out[name] = true
			}
		}
	}
	return out, nil
}

// collectReport is what one ecosystem's collect did.
type collectReport struct {
	Added   int `json:"added"`
	Known   int `json:"known,omitempty"` // already in the store
	Refused int `json:"refused,omitempty"`
	// Why: the first refused files' reasons, by path.
	Why     map[string]string `json:"why,omitempty"`
	Skipped string            `json:"skipped,omitempty"`
	Error   string            `json:"error,omitempty"`
}

func (r *collectReport) refuse(rel, reason string) {
	r.Refused++
	if len(r.Why) < 20 {
		r.Why[rel] = reason
	}
}

func (d *Caches) collectOne(ctx context.Context, sandboxID, project string, eco ecosystem, reached map[string]bool, lockfile func(string) ([]byte, error)) *collectReport {
	var lock []byte
	for _, name := range eco.lockfiles {
		if b, err := lockfile(name); err == nil {
			lock = b
			break
		}
	}
	if lock == nil {
		return nil // not a project of this ecosystem
	}
	r := &collectReport{Why: map[string]string{}}
	if !reached[eco.preset] {
		r.Skipped = "the task's egress record shows no request to the " + eco.preset + " registry"
		return r
	}
	j, err := eco.judge(lock)
	if err != nil {
		r.Skipped = "the base commit's lockfile does not read: " + err.Error()
		return r
	}
	f, err := d.c.Files(ctx, sandboxID)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	dir := eco.dirIn(d.homeOf(sandboxID))
	if _, err := f.Stat(ctx, dir); err != nil {
		r.Skipped = "the task has no " + eco.name + " cache"
		return r
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := f.Tar(ctx, dir, pw)
		pw.CloseWithError(err)
	}()
	err = d.addFrom(tar.NewReader(pr), d.storeDir(project, eco.name), project, j, r)
	pr.CloseWithError(errors.New("collect ended"))
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// addFrom reads the sandbox's tar of one cache and adds what j keeps:
// each regular file copied to a temporary file, judged there, then
// renamed into the store (with the files j makes beside it).
func (d *Caches) addFrom(tr *tar.Reader, dir, project string, j judge, r *collectReport) error {
	tmp := filepath.Join(d.cfg.Dir, ".tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		rel := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag != tar.TypeReg || rel == "." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
			continue
		}
		if h.Size > maxFile || total+h.Size > maxCollect {
			r.refuse(rel, "too large")
			continue
		}
		name := j.Name(rel)
		if name == "" {
			continue
		}
		total += h.Size
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
			r.Known++
			continue
		}
		if err := d.judgeOne(tr, tmp, dir, project, rel, name, j, r); err != nil {
			return err
		}
	}
}

func (d *Caches) judgeOne(tr io.Reader, tmp, dir, project, rel, name string, j judge, r *collectReport) error {
	t, err := os.CreateTemp(tmp, "file-")
	if err != nil {
		return err
	}
	defer os.Remove(t.Name())
	_, err = io.Copy(t, tr)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	extra, reason, ok := j.Judge(rel, t.Name())
	if !ok {
		if reason != "" {
			r.refuse(rel, reason)
		}
		return nil
	}
	if err := d.ensureProject(project); err != nil {
		return err
	}
	for name, data := range extra {
		if err := writeNew(filepath.Join(dir, filepath.FromSlash(name)), tmp, data); err != nil {
			return err
		}
	}
	dst := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(t.Name(), 0o444); err != nil {
		return err
	}
	if err := os.Rename(t.Name(), dst); err != nil {
		return err
	}
	r.Added++
	return nil
}

// ensureProject writes the project's name beside its stores (for List).
func (d *Caches) ensureProject(project string) error {
	p := filepath.Join(d.projectDir(project), "project")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return writeNew(p, filepath.Join(d.cfg.Dir, ".tmp"), []byte(project))
}

// writeNew writes data to p through a temporary file renamed into place.
func writeNew(p, tmp string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	t, err := os.CreateTemp(tmp, "new-")
	if err != nil {
		return err
	}
	defer os.Remove(t.Name())
	if _, err := t.Write(data); err != nil {
		t.Close()
		return err
	}
	if err := t.Chmod(0o444); err != nil {
		t.Close()
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	return os.Rename(t.Name(), p)
}

func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
