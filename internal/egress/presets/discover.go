package presets

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// Env is where Discover looks. The zero value looks at this
// machine: it runs the tools and reads the files and variables below.
type Env struct {
	// Run runs a command and returns its standard output.
	Run func(ctx context.Context, name string, args ...string) (string, error)
	// ReadFile and Glob read configuration files.
	ReadFile func(path string) ([]byte, error)
	Glob     func(pattern string) ([]string, error)
	// Getenv and Environ read the environment.
	Getenv  func(key string) string
	Environ func() []string
	// Home is the user's home directory.
	Home string
}

func (e *Env) fill() {
	if e.Run == nil {
		e.Run = func(ctx context.Context, name string, args ...string) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, name, args...).Output()
			return string(out), err
		}
	}
	if e.ReadFile == nil {
		e.ReadFile = os.ReadFile
	}
	if e.Glob == nil {
		e.Glob = filepath.Glob
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Environ == nil {
		e.Environ = os.Environ
	}
	if e.Home == "" {
		e.Home, _ = os.UserHomeDir()
	}
}

// Discover finds the registry hosts this machine's package managers
// are configured to use, so that no registry is ever named in airlock's
// code:
//
//   - npm: `npm config get registry`
//   - go: `go env GOPROXY GOSUMDB` (every proxy, and the checksum database)
//   - pypi: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST and the
//     index-url, extra-index-url and trusted-host keys of pip.conf files
//     (PIP_CONFIG_FILE, /etc, XDG and home locations)
//   - debian: the http and https URIs of /etc/apt/sources.list and
//     sources.list.d (one-line and deb822 formats)
//   - crates: registry and index URLs in $CARGO_HOME/config.toml (source
//     replacement and alternative registries) and CARGO_REGISTRIES_*_INDEX
//
// A tool's built-in default that its configuration does not spell out
// (pip's and cargo's public index, or the host serving their downloads)
// cannot be found this way: add it as a rule of category registries. A
// preset that finds nothing allows nothing. The error joins what could not
// be read; the presets found are returned anyway.
func Discover(ctx context.Context, env Env) (netpolicy.Presets, error) {
	env.fill()
	p := netpolicy.Presets{}
	var errs []error
	add := func(preset, raw string) {
		if hp, ok := urlHost(raw); ok && !slices.Contains(p[preset], hp) {
			p[preset] = append(p[preset], hp)
		}
	}
	if out, err := env.Run(ctx, "npm", "config", "get", "registry"); err != nil {
		errs = append(errs, fmt.Errorf("npm: %w", err))
	} else {
		add("npm", strings.TrimSpace(out))
	}
	if out, err := env.Run(ctx, "go", "env", "GOPROXY", "GOSUMDB"); err != nil {
		errs = append(errs, fmt.Errorf("go: %w", err))
	} else {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, entry := range strings.FieldsFunc(lines[0], func(r rune) bool { return r == ',' || r == '|' }) {
			add("go", strings.TrimSpace(entry)) // "direct" and "off" are not URLs
		}
		if len(lines) > 1 {
			if f := strings.Fields(lines[1]); len(f) == 2 {
				add("go", f[1])
			} else if len(f) == 1 && f[0] != "off" {
				name, _, _ := strings.Cut(f[0], "+")
				add("go", "https://"+name)
			}
		}
	}
	discoverPip(&env, add)
	errs = append(errs, discoverApt(&env, add)...)
	discoverCargo(&env, add)
	return p, errors.Join(errs...)
}

// urlHost returns "name:port" for an http or https URL naming a host
// (registry prefixes such as "sparse+" and "mirror+" removed).
func urlHost(raw string) (string, bool) {
	for _, prefix := range []string{"sparse+", "registry+", "tor+", "mirror+"} {
		raw = strings.TrimPrefix(raw, prefix)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return "", false
	}
	def := 443
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		def = 80
	default:
		return "", false
	}
	t, err := netpolicy.ParseTarget(u.Host, def)
	if err != nil || t.IsIP() {
		return "", false
	}
	return t.String(), true
}

func discoverPip(env *Env, add func(string, string)) {
	for _, v := range []string{"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"} {
		for _, u := range strings.Fields(env.Getenv(v)) {
			add("pypi", u)
		}
	}
	for _, h := range strings.Fields(env.Getenv("PIP_TRUSTED_HOST")) {
		add("pypi", "https://"+h)
	}
	files := []string{"/etc/pip.conf", "/etc/xdg/pip/pip.conf"}
	if x := env.Getenv("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "pip", "pip.conf"))
	}
	if env.Home != "" {
		files = append(files, filepath.Join(env.Home, ".config", "pip", "pip.conf"), filepath.Join(env.Home, ".pip", "pip.conf"))
	}
	if f := env.Getenv("PIP_CONFIG_FILE"); f != "" && f != os.DevNull {
		files = append(files, f)
	}
	for _, f := range files {
		data, err := env.ReadFile(f)
		if err != nil {
			continue // most of these do not exist
		}
		key := ""
		for line := range strings.Lines(string(data)) {
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';' || trimmed[0] == '[' {
				key = ""
				continue
			}
			var vals string
			if line[0] == ' ' || line[0] == '\t' {
				vals = trimmed // a continuation of the key before
			} else if k, v, ok := strings.Cut(trimmed, "="); ok {
				key, vals = strings.TrimSpace(k), v
			} else {
				key = ""
				continue
			}
			for _, v := range strings.Fields(vals) {
				switch key {
				case "index-url", "extra-index-url", "index_url", "extra_index_url":
					add("pypi", v)
				case "trusted-host", "trusted_host":
					add("pypi", "https://"+v)
				}
			}
		}
	}
}

func discoverApt(env *Env, add func(string, string)) []error {
	files := []string{"/etc/apt/sources.list"}
	for _, pat := range []string{"/etc/apt/sources.list.d/*.list", "/etc/apt/sources.list.d/*.sources"} {
		m, err := env.Glob(pat)
		if err != nil {
			return []error{fmt.Errorf("debian: %w", err)}
		}
		files = append(files, m...)
	}
	for _, f := range files {
		data, err := env.ReadFile(f)
		if err != nil {
			continue
		}
		deb822 := strings.HasSuffix(f, ".sources")
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' {
				continue
			}
			if deb822 {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "URIs") {
					for _, u := range strings.Fields(v) {
						add("debian", u)
					}
				}
				continue
			}
			f := strings.Fields(line)
			if len(f) < 2 || (f[0] != "deb" && f[0] != "deb-src") {
				continue
			}
			i := 1
			if strings.HasPrefix(f[i], "[") {
				for i < len(f) && !strings.HasSuffix(f[i], "]") {
					i++
				}
				i++
			}
			if i < len(f) {
				add("debian", f[i])
			}
		}
	}
	return nil
}

func discoverCargo(env *Env, add func(string, string)) {
	home := env.Getenv("CARGO_HOME")
	if home == "" && env.Home != "" {
		home = filepath.Join(env.Home, ".cargo")
	}
	if home != "" {
		for _, name := range []string{"config.toml", "config"} {
			data, err := env.ReadFile(filepath.Join(home, name))
			if err != nil {
				continue
			}
			for line := range strings.Lines(string(data)) {
				k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
				if !ok {
					continue
				}
				k = strings.TrimSpace(k)
				if k == "registry" || k == "index" || strings.HasSuffix(k, ".index") || strings.HasSuffix(k, ".registry") {
					add("crates", strings.Trim(strings.TrimSpace(v), `"'`))
				}
			}
		}
	}
	for _, kv := range env.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CARGO_REGISTRIES_") && strings.HasSuffix(k, "_INDEX") {
			add("crates", v)
		}
	}
}
