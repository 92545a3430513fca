package clibase

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// ParseSize reads "512M", "1G", "1.5GiB", "4096", "64k" as bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty: use a number with a unit: 512M, 1G, 64G")
	}
	mult := float64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suf string
		m   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}} {
		if strings.HasSuffix(lower, u.suf) {
			mult = u.m
			lower = strings.TrimSuffix(lower, u.suf)
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(lower), 64)
	if err != nil || v < 0 || v != v {
		return 0, fmt.Errorf("not a size: use a number with a unit: 512M, 1G, 64G")
	}
	b := v * mult
	if b > 1<<62 {
		return 0, fmt.Errorf("too large")
	}
	return int64(b), nil
}

// ListFlag collects repeated flags.
type ListFlag []string

func (l *ListFlag) String() string     { return strings.Join(*l, ",") }
func (l *ListFlag) Set(v string) error { *l = append(*l, v); return nil }

// SizeFlag is a byte size flag: 512M, 1G (parsed into *V).
type SizeFlag struct{ V *int64 }

// String shows the size as one would write it: 64G, 512M, 1.5G.
func (f SizeFlag) String() string {
	if f.V == nil || *f.V == 0 {
		return ""
	}
	return FmtSize(*f.V)
}

// FmtSize writes n bytes as ParseSize reads them back: the largest unit
// that gives at most two decimals, exactly.
func FmtSize(n int64) string {
	for _, u := range []struct {
		suf string
		m   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.m && (n*100)%u.m == 0 {
			return strconv.FormatFloat(float64(n)/float64(u.m), 'f', -1, 64) + u.suf
		}
	}
	return strconv.FormatInt(n, 10)
}

// durationHint is what a bad duration is told to look like.
const durationHint = "use a number with a unit: 30s, 5m, 2h, 7d"

// ParseDuration reads a duration as Go writes it (30s, 5m, 1h30m) or with
// days (7d, 1d12h, 1.5d).
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "-"), "+")
	var days float64
	if i := strings.IndexByte(t, 'd'); i >= 0 {
		num := t[:i]
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 {
			return 0, fmt.Errorf("%s", durationHint)
		}
		days, t = v, t[i+1:]
	}
	var rest time.Duration
	if t != "" || days == 0 {
		var err error
		if rest, err = time.ParseDuration(t); err != nil || rest < 0 {
			return 0, fmt.Errorf("%s", durationHint)
		}
	}
	total := days*float64(24*time.Hour) + float64(rest)
	if total >= math.MaxInt64 {
		return 0, fmt.Errorf("too long: at most 106751d")
	}
	d := time.Duration(total)
	if neg {
		d = -d
	}
	return d, nil
}

// FmtDuration writes d as ParseDuration reads it back, without the zero
// units of time.Duration's String (24h, not 24h0m0s).
func FmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// durationFlag is a duration flag that also takes days.
type durationFlag struct{ v *time.Duration }

func (f durationFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return "" // the zero value: help names no default
	}
	return FmtDuration(*f.v)
}

func (f durationFlag) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*f.v = d
	return nil
}

// DurationVar defines a duration flag (days allowed) with default def.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationFlag{p}, name, usage)
}

// Duration is DurationVar returning the variable.
func Duration(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	DurationVar(fs, p, name, def, usage)
	return p
}

var undefinedFlag = lazyre.New(`^flag provided but not defined: -+(.*)$`)

var invalidFlagValue = lazyre.New(`^invalid value ("(?:[^"\\]|\\.)*") for flag -([^:]+): (.*)\n?$`)

// FlagErrors writes the flag package's parse errors as airlock's errors:
// one line that names the command, the flag and the value, then what to
// write instead ("airlock run: --timeout: "5x": use a number with a unit:
// 30s, 5m, 2h, 7d"). The line is ended by the flag set's Usage, which the
// flag package calls right after, with the help command to run.
type FlagErrors struct {
	W    io.Writer
	Name func() string // the command as typed after "airlock"
}

func (f FlagErrors) Write(p []byte) (int, error) {
	s := strings.TrimSuffix(string(p), "\n")
	if m := invalidFlagValue().FindStringSubmatch(s); m != nil {
		s = fmt.Sprintf("--%s: %s: %s", m[2], m[1], m[3])
	} else if m := undefinedFlag().FindStringSubmatch(s); m != nil {
		s = fmt.Sprintf("no flag --%s", m[1])
	}
	if _, err := fmt.Fprintf(f.W, "airlock %s: %s", f.Name(), s); err != nil {
		return 0, err
	}
	return len(p), nil
}
func (f SizeFlag) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	*f.V = n
	return nil
}

// EnvOr is the environment variable name, or def when it is empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// FmtBytes writes n bytes for people: 2GiB, 512MiB.
func FmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dB", n)
}

// CheckEnv refuses an --env that is not K=V (or holds a NUL) before any
// request is made.
func CheckEnv(env []string) error {
	for _, kv := range env {
		if i := strings.IndexByte(kv, '='); i <= 0 || strings.ContainsRune(kv, 0) {
			return fmt.Errorf("--env %q: use K=V", kv)
		}
	}
	return nil
}
