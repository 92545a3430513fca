package lockfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// Hashes maps "name@version" to what the lockfile says of that
// package's content: the hash the package manager checks what it
// downloads against (npm, yarn v1 and pnpm's integrity, yarn berry's
// checksum, go.sum's h1: hash, Cargo.lock's checksum, Pipfile.lock's,
// poetry.lock's and uv.lock's file hashes, several joined by a space).
// A package the lockfile gives no hash for is absent: the review shows
// that as "none", never a guess.
type Hashes map[string]string

func (h Hashes) add(name, version string, hashes ...string) {
	var hs []string
	for _, s := range hashes {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(hs, s) {
			hs = append(hs, s)
		}
	}
	if name == "" || version == "" || len(hs) == 0 {
		return
	}
	key := name + "@" + version
	if old := h[key]; old != "" {
		hs = append(strings.Fields(old), hs...)
	}
	sort.Strings(hs)
	h[key] = strings.Join(slices.Compact(hs), " ")
}

// Integrity reads the content hashes of the lockfile named name (only
// its base name matters), a parallel to Parse: the same packages, keyed
// by name and version. requirements*.txt gives the --hash options of
// its pinned lines (pip's hash-checking mode); a file with none gives
// ok false (pip checks nothing then either).
func Integrity(name string, data []byte) (h Hashes, ok bool, err error) {
	h = Hashes{}
	switch Manager(name) {
	case "npm":
		err = npmIntegrity(data, h)
	case "yarn":
		yarnIntegrity(data, h)
	case "pnpm":
		pnpmIntegrity(data, h)
	case "go":
		err = goSumIntegrity(data, h)
	case "cargo", "poetry", "uv":
		err = tomlIntegrity(data, h)
	case "pipenv":
		err = pipfileIntegrity(data, h)
	case "pip":
		if !requirementsIntegrity(data, h) {
			return nil, false, nil
		}
	default:
		return nil, false, fmt.Errorf("lockfile %s: not a lockfile this reads", name)
	}
	if err != nil {
		return nil, false, fmt.Errorf("lockfile %s: %w", name, err)
	}
	return h, true, nil
}

func npmIntegrity(data []byte, h Hashes) error {
	type entry struct {
		Version      string                     `json:"version"`
		Name         string                     `json:"name"`
		Integrity    string                     `json:"integrity"`
		Dependencies map[string]json.RawMessage `json:"dependencies"`
	}
	var lf struct {
		Packages     map[string]entry           `json:"packages"`
		Dependencies map[string]json.RawMessage `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &lf); err != nil {
		return err
	}
	if lf.Packages != nil {
		for key, e := range lf.Packages {
			i := strings.LastIndex(key, "node_modules/")
			if i < 0 {
				continue
			}
			name := key[i+len("node_modules/"):]
			if e.Name != "" {
				name = e.Name
			}
			h.add(name, e.Version, e.Integrity)
		}
		return nil
	}
	var walk func(deps map[string]json.RawMessage) error
	walk = func(deps map[string]json.RawMessage) error {
		for name, raw := range deps {
			var d entry
			if err := json.Unmarshal(raw, &d); err != nil {
				return err
			}
			h.add(name, d.Version, d.Integrity)
			if err := walk(d.Dependencies); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(lf.Dependencies)
}

// yarn v1: `  integrity sha512-…`; berry: `  checksum: …` (its own
// hash of the package archive) in the entry's block.
func yarnIntegrity(data []byte, h Hashes) {
	var name, version, sum string
	flush := func() { h.add(name, version, sum); version, sum = "", "" }
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			flush()
			name = yarnName(line)
			continue
		}
		if !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "    ") {
			continue
		}
		k, v := yarnField(line)
		switch k {
		case "version":
			version = v
		case "integrity", "checksum":
			sum = v
		}
	}
	flush()
}

func yarnName(line string) string {
	spec := strings.Trim(strings.TrimSpace(strings.Split(strings.TrimSuffix(line, ":"), ",")[0]), `"`)
	i := strings.LastIndex(spec, "@")
	if i <= 0 {
		return ""
	}
	name := spec[:i]
	if j := strings.Index(name, "@npm:"); j > 0 {
		name = name[:j]
	}
	if name == "__metadata" {
		return ""
	}
	return name
}

// yarnField splits "  key value" (v1) or "  key: value" (berry).
func yarnField(line string) (k, v string) {
	t := strings.TrimSpace(line)
	k, v, _ = strings.Cut(t, " ")
	return strings.TrimSuffix(k, ":"), strings.Trim(strings.TrimSpace(v), `"`)
}

var pnpmIntegrityRE = lazyre.New(`integrity:\s*'?"?([A-Za-z0-9+/=:-]+)`)

// pnpm: each "packages:" key's `resolution: {integrity: …}` line.
func pnpmIntegrity(data []byte, h Hashes) {
	in := false
	var name, version string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, " ") {
			in = line == "packages:"
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":") {
			name, version = pnpmKey(line)
			continue
		}
		if m := pnpmIntegrityRE().FindStringSubmatch(line); m != nil && strings.Contains(line, "resolution") {
			h.add(name, version, m[1])
		}
	}
}

func pnpmKey(line string) (name, version string) {
	key := strings.Trim(strings.TrimSuffix(strings.TrimSpace(line), ":"), `'"`)
	if i := strings.Index(key, "("); i > 0 {
		key = key[:i]
	}
	key = strings.TrimPrefix(key, "/")
	if i := strings.LastIndex(key, "@"); i > 0 {
		return key[:i], key[i+1:]
	}
	if i := strings.LastIndex(key, "/"); i > 0 {
		return key[:i], key[i+1:]
	}
	return "", ""
}

// go.sum: the module's own h1: hash (not its go.mod's).
var requirementHashRE = lazyre.New(`--hash[= ]\s*([A-Za-z0-9]+:[0-9a-fA-F]+)`)

// requirementsIntegrity adds each pinned line's --hash values (as
// "sha256:HEX", the form Pipfile.lock's and poetry.lock's take); false
// when the file has no --hash at all.
func requirementsIntegrity(data []byte, h Hashes) bool {
	any := false
	for _, line := range requirementLines(data) {
		ms := requirementHashRE().FindAllStringSubmatch(line, -1)
		name, version, ok := requirementPin(line)
		if !ok || len(ms) == 0 {
			continue
		}
		for _, m := range ms {
			h.add(name, version, m[1])
		}
		any = true
	}
	return any
}

func goSumIntegrity(data []byte, h Hashes) error {
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return fmt.Errorf("line %d: want module, version and hash", n+1)
		}
		if !strings.HasSuffix(f[1], "/go.mod") {
			h.add(f[0], f[1], f[2])
		}
	}
	return nil
}

var tomlHashRE = lazyre.New(`\b(?:hash|checksum)\s*=\s*"([^"]+)"`)

// Cargo.lock, poetry.lock and uv.lock: in each [[package]] block (and
// its sub-tables), a checksum = "…" or every hash = "…" of its files;
// older poetry.lock lists the files under [metadata.files] by name.
func tomlIntegrity(data []byte, h Hashes) error {
	p := Packages{}
	if err := parseTOMLPackages(data, p); err != nil {
		return err
	}
	var name, version, filesOf string
	var sums []string
	flush := func() { h.add(name, version, sums...); name, version, sums = "", "", nil }
	inPkg, inFiles := false, false
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") && !strings.Contains(t, "=") && !strings.HasPrefix(t, "[{") {
			if t == "[[package]]" {
				flush()
			}
			inPkg = inPkg && strings.HasPrefix(t, "[package.") || t == "[[package]]"
			inFiles = t == "[metadata.files]"
			continue
		}
		if inFiles {
			if k, _, ok := strings.Cut(t, "="); ok && !strings.HasPrefix(t, "{") {
				filesOf = strings.Trim(strings.TrimSpace(k), `"`)
			}
			for _, m := range tomlHashRE().FindAllStringSubmatch(t, -1) {
				if vs := p[filesOf]; len(vs) == 1 {
					h.add(filesOf, vs[0], m[1])
				}
			}
			continue
		}
		if !inPkg {
			continue
		}
		k, v, _ := strings.Cut(t, "=")
		switch strings.TrimSpace(k) {
		case "name":
			if name == "" {
				name = strings.Trim(strings.TrimSpace(v), `"`)
			}
		case "version":
			if version == "" {
				version = strings.Trim(strings.TrimSpace(v), `"`)
			}
		}
		for _, m := range tomlHashRE().FindAllStringSubmatch(t, -1) {
			sums = append(sums, m[1])
		}
	}
	flush()
	return nil
}

func pipfileIntegrity(data []byte, h Hashes) error {
	var lf map[string]json.RawMessage
	if err := json.Unmarshal(data, &lf); err != nil {
		return err
	}
	for _, section := range []string{"default", "develop"} {
		var deps map[string]struct {
			Version string   `json:"version"`
			Hashes  []string `json:"hashes"`
		}
		if raw, ok := lf[section]; ok {
			if err := json.Unmarshal(raw, &deps); err != nil {
				return err
			}
		}
		for name, d := range deps {
			h.add(strings.ToLower(name), strings.TrimPrefix(d.Version, "=="), d.Hashes...)
		}
	}
	return nil
}

// Rehashed lists the "name@version" keys both lockfiles hash, with
// different hashes (sorted): the same version with other content is
// what a tampered lockfile or a republished package looks like, and the
// version diff alone does not show it.
func Rehashed(before, after Hashes) []string {
	var out []string
	for k, a := range after {
		if b, ok := before[k]; ok && b != a {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
