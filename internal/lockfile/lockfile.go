// Package lockfile reads the package versions a lockfile pins, for the
// evidence of what an install changed: npm (package-lock.json,
// npm-shrinkwrap.json), yarn (v1 and berry), pnpm, Go (go.sum), Cargo,
// Poetry, uv (Cargo.lock, poetry.lock, uv.lock), pip (requirements*.txt,
// Pipfile.lock), and (Integrity) the content hashes it holds for them.
// It is pure: bytes in, packages out; a file it cannot read is an error,
// never a guess.
package lockfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Manager names the package manager a lockfile belongs to ("" if it is
// not a lockfile this package reads).
func Manager(name string) string {
	base := path.Base(name)
	switch base {
	case "package-lock.json", "npm-shrinkwrap.json":
		return "npm"
	case "yarn.lock":
		return "yarn"
	case "pnpm-lock.yaml":
		return "pnpm"
	case "go.sum":
		return "go"
	case "Cargo.lock":
		return "cargo"
	case "poetry.lock":
		return "poetry"
	case "uv.lock":
		return "uv"
	case "Pipfile.lock":
		return "pipenv"
	}
	if strings.HasPrefix(base, "requirements") && strings.HasSuffix(base, ".txt") {
		return "pip"
	}
	return ""
}

// Names are the lockfile names looked for next to a project.
var Names = []string{"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "go.sum", "Cargo.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "requirements.txt"}

// Packages maps a package name to the versions the lockfile pins (sorted;
// more than one when several are installed side by side).
type Packages map[string][]string

func (p Packages) add(name, version string) {
	if name == "" || version == "" {
		return
	}
	if !slices.Contains(p[name], version) {
		p[name] = append(p[name], version)
		sort.Strings(p[name])
	}
}

// Parse reads the lockfile named name (only its base name matters).
func Parse(name string, data []byte) (Packages, error) {
	p := Packages{}
	var err error
	switch Manager(name) {
	case "npm":
		err = parseNPM(data, p)
	case "yarn":
		parseYarn(data, p)
	case "pnpm":
		parsePNPM(data, p)
	case "go":
		err = parseGoSum(data, p)
	case "cargo", "poetry", "uv":
		err = parseTOMLPackages(data, p)
	case "pipenv":
		err = parsePipfileLock(data, p)
	case "pip":
		parseRequirements(data, p)
	default:
		return nil, fmt.Errorf("lockfile %s: not a lockfile this reads", name)
	}
	if err != nil {
		return nil, fmt.Errorf("lockfile %s: %w", name, err)
	}
	return p, nil
}

func parseNPM(data []byte, p Packages) error {
	var lf struct {
		Packages map[string]struct {
			Version string `json:"version"`
			Name    string `json:"name"`
			Link    bool   `json:"link"`
		} `json:"packages"`
		Dependencies map[string]json.RawMessage `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &lf); err != nil {
		return err
	}
	if lf.Packages != nil {
		for key, e := range lf.Packages {
			i := strings.LastIndex(key, "node_modules/")
			if key == "" || i < 0 || e.Link {
				continue // the project itself, or a workspace link
			}
			name := key[i+len("node_modules/"):]
			if e.Name != "" {
				name = e.Name
			}
			p.add(name, e.Version)
		}
		return nil
	}
	// lockfileVersion 1: nested dependencies
	var walk func(deps map[string]json.RawMessage) error
	walk = func(deps map[string]json.RawMessage) error {
		for name, raw := range deps {
			var d struct {
				Version      string                     `json:"version"`
				Dependencies map[string]json.RawMessage `json:"dependencies"`
			}
			if err := json.Unmarshal(raw, &d); err != nil {
				return err
			}
			p.add(name, d.Version)
			if err := walk(d.Dependencies); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(lf.Dependencies)
}

// yarn v1: `"a@^1.0.0", a@^1.1.0:` then `  version "1.2.3"`; berry:
// `"a@npm:^1.0.0":` then `  version: 1.2.3`.
func parseYarn(data []byte, p Packages) {
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			spec := strings.TrimSpace(strings.Split(strings.TrimSuffix(line, ":"), ",")[0])
			spec = strings.Trim(spec, `"`)
			name = ""
			if i := strings.LastIndex(spec, "@"); i > 0 {
				name = spec[:i]
				if j := strings.Index(name, "@npm:"); j > 0 {
					name = name[:j]
				}
			}
			if name == "__metadata" {
				name = ""
			}
			continue
		}
		t := strings.TrimSpace(line)
		if name != "" && strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "    ") && strings.HasPrefix(t, "version") {
			v := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "version"), ":"))
			p.add(name, strings.Trim(v, `"`))
		}
	}
}

// pnpm: package keys under "packages:", as "/a@1.2.3:", "a@1.2.3:" or
// (older) "/a/1.2.3:", possibly with a peer suffix "(…)".
func parsePNPM(data []byte, p Packages) {
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue // pnpm writes a blank line between entries
		}
		if !strings.HasPrefix(line, " ") {
			in = line == "packages:"
			continue
		}
		if !in || !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") || !strings.HasSuffix(line, ":") {
			continue
		}
		key := strings.Trim(strings.TrimSuffix(strings.TrimSpace(line), ":"), `'"`)
		if i := strings.Index(key, "("); i > 0 {
			key = key[:i]
		}
		key = strings.TrimPrefix(key, "/")
		if i := strings.LastIndex(key, "@"); i > 0 {
			p.add(key[:i], key[i+1:])
		} else if i := strings.LastIndex(key, "/"); i > 0 {
			p.add(key[:i], key[i+1:])
		}
	}
}

func parseGoSum(data []byte, p Packages) error {
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return fmt.Errorf("line %d: want module, version and hash", n+1)
		}
		if strings.HasSuffix(f[1], "/go.mod") {
			continue // the module's go.mod only, not its code
		}
		p.add(f[0], f[1])
	}
	return nil
}

// [[package]] blocks with name = "..." and version = "..." (Cargo.lock,
// poetry.lock, uv.lock).
func parseTOMLPackages(data []byte, p Packages) error {
	var name, version string
	in, inArray := false, false
	flush := func() {
		if in {
			p.add(name, version)
		}
		name, version = "", ""
	}
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		case inArray: // the lines of a multi-line array, up to its "]"
			inArray = !strings.HasPrefix(t, "]")
			continue
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
			flush()
			in = t == "[[package]]"
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return fmt.Errorf("line %d is not TOML this reads", i+1)
		}
		v = strings.TrimSpace(v)
		inArray = strings.HasPrefix(v, "[") && !strings.HasSuffix(v, "]")
		if !in {
			continue
		}
		v = strings.Trim(v, `"`)
		switch strings.TrimSpace(k) {
		case "name":
			name = v
		case "version":
			version = v
		}
	}
	flush()
	return nil
}

func parsePipfileLock(data []byte, p Packages) error {
	var lf map[string]json.RawMessage
	if err := json.Unmarshal(data, &lf); err != nil {
		return err
	}
	for _, section := range []string{"default", "develop"} {
		var deps map[string]struct {
			Version string `json:"version"`
		}
		if raw, ok := lf[section]; ok {
			if err := json.Unmarshal(raw, &deps); err != nil {
				return err
			}
		}
		for name, d := range deps {
			p.add(strings.ToLower(name), strings.TrimPrefix(d.Version, "=="))
		}
	}
	return nil
}

// requirements: pinned lines "name==version" (others name no version),
// a line continued with a backslash read as one (pip-compile's
// --generate-hashes writes each --hash on a line of its own).
func parseRequirements(data []byte, p Packages) {
	for _, line := range requirementLines(data) {
		if name, version, ok := requirementPin(line); ok {
			p.add(name, version)
		}
	}
}

// requirementLines are the logical lines of a requirements file:
// continuations joined, comments ("#" at the start or after a space)
// cut.
func requirementLines(data []byte) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			line = ""
		}
		if t := strings.TrimRight(line, " \t"); strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSuffix(t, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// requirementPin is a logical line's "name==version" (name lower case,
// extras dropped), before its markers (";") and options ("--hash=...").
func requirementPin(line string) (name, version string, ok bool) {
	line, _, _ = strings.Cut(line, ";")
	if i := strings.Index(line, " --"); i >= 0 {
		line = line[:i]
	}
	name, version, ok = strings.Cut(strings.TrimSpace(line), "==")
	if !ok {
		return "", "", false
	}
	if i := strings.Index(name, "["); i > 0 {
		name = name[:i]
	}
	version = strings.TrimSpace(version)
	if f := strings.Fields(version); len(f) > 0 {
		version = f[0]
	}
	return strings.ToLower(strings.TrimSpace(name)), version, version != ""
}

// Change is one package's difference between two lockfiles.
type Change struct {
	Name   string   `json:"name"`
	From   []string `json:"from,omitempty"`
	To     []string `json:"to,omitempty"`
	Change string   `json:"change"` // added, removed, changed
}

// Diff lists what changed from before to after, by name.
func Diff(before, after Packages) []Change {
	var out []Change
	for name, to := range after {
		from, ok := before[name]
		switch {
		case !ok:
			out = append(out, Change{Name: name, To: to, Change: "added"})
		case !slices.Equal(from, to):
			out = append(out, Change{Name: name, From: from, To: to, Change: "changed"})
		}
	}
	for name, from := range before {
		if _, ok := after[name]; !ok {
			out = append(out, Change{Name: name, From: from, Change: "removed"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InstallScripts lists the packages ("name@version", sorted) whose
// install scripts a lockfile says run at install: npm's
// hasInstallScript (lockfileVersion 2 and 3) and pnpm's requiresBuild.
// Other lockfiles do not say; they give none (ok false).
func InstallScripts(name string, data []byte) (pkgs []string, ok bool, err error) {
	switch Manager(name) {
	case "npm":
		var lf struct {
			Packages map[string]struct {
				Version          string `json:"version"`
				Name             string `json:"name"`
				HasInstallScript bool   `json:"hasInstallScript"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(data, &lf); err != nil {
			return nil, false, fmt.Errorf("lockfile %s: %w", name, err)
		}
		for key, e := range lf.Packages {
			if !e.HasInstallScript || key == "" {
				continue // (the project's own scripts are not a dependency's)
			}
			n := e.Name
			if i := strings.LastIndex(key, "node_modules/"); n == "" && i >= 0 {
				n = key[i+len("node_modules/"):]
			}
			if n == "" {
				n = key // a linked directory without a name
			}
			pkgs = append(pkgs, n+"@"+e.Version)
		}
	case "pnpm":
		var cur string
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":") {
				cur = strings.Trim(strings.TrimSuffix(strings.TrimSpace(line), ":"), `'"/`)
			}
			if strings.TrimSpace(line) == "requiresBuild: true" && cur != "" {
				pkgs = append(pkgs, cur)
			}
		}
	default:
		return nil, false, nil
	}
	sort.Strings(pkgs)
	return slices.Compact(pkgs), true, nil
}
