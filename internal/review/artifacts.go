package review

import (
	"bytes"
	"context"
	"path"
	"sort"

	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// artifacts scans the files the task added (read from the live sandbox).
func (r *Review) artifacts(ctx context.Context, sandboxID string, files []bundle.File, c *bundle.Contents) error {
	c.ArtifactData = map[string][]byte{}
	f, err := r.c.Files(ctx, sandboxID)
	if err != nil {
		return nil // a stopped sandbox: no artifacts to read
	}
	for _, cf := range files {
		if cf.Status != "added" {
			continue
		}
		rel, err := bundle.SafePath(cf.Path)
		if err != nil {
			continue
		}
		p := path.Join("/workspace", rel)
		st, err := f.Stat(ctx, p)
		if err != nil {
			continue
		}
		var data []byte
		if st.Type == "file" && st.Size <= bundle.LargeArtifact {
			var buf bytes.Buffer
			if _, err := f.ReadFile(ctx, p, &buf, bundle.LargeArtifact); err == nil {
				data = buf.Bytes()
			}
		}
		a := bundle.ScanArtifact(rel, data, st.Type == "symlink", st.Size, r.findSecrets)
		// A path that holds a secret is shown redacted, and its file is
		// not copied (its entry name would carry the secret).
		if kinds := r.findSecrets([]byte(a.Path)); len(kinds) > 0 {
			a.Path, a.Included = r.c.Redactor().String(a.Path), false
			for _, k := range kinds {
				a.Findings = appendUniq(a.Findings, k)
			}
			sort.Strings(a.Findings)
		}
		c.Artifacts = append(c.Artifacts, a)
		if a.Included {
			c.ArtifactData[rel] = data
		}
	}
	return nil
}

// findSecrets reports the kinds of secrets in data (for artifact scans).
func (r *Review) findSecrets(data []byte) []string {
	red, changed := r.c.Redactor().Redact(data)
	if !changed {
		return nil
	}
	var kinds []string
	for _, k := range redactedKindRE().FindAllSubmatch(red, -1) {
		kinds = appendUniq(kinds, string(k[1]))
	}
	sort.Strings(kinds)
	return kinds
}

var redactedKindRE = lazyre.New(`\[REDACTED:([a-z0-9-]+)\]`)
