package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/egress"
	"github.com/airlock-dev/airlock/internal/lazyre"
)

// parseSize reads "512M", "1G", "1.5GiB", "4096", "64k" as bytes.
func parseSize(s string) (int64, error) {
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

// listFlag collects repeated flags.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// prefixFlag is a repeatable NAT64 prefix flag.
type prefixFlag []netip.Prefix

func (l *prefixFlag) String() string { return fmt.Sprint([]netip.Prefix(*l)) }
func (l *prefixFlag) Set(v string) error {
	p, err := netip.ParsePrefix(v)
	if err != nil || !egress.ValidNAT64Prefix(p.Masked()) {
		return fmt.Errorf("%q: an IPv6 prefix of length 32, 40, 48, 56, 64 or 96", v)
	}
	*l = append(*l, p.Masked())
	return nil
}

// sizeFlag is a byte size flag.
type sizeFlag struct{ v *int64 }

// String shows the size as one would write it: 64G, 512M, 1.5G.
func (f sizeFlag) String() string {
	if f.v == nil || *f.v == 0 {
		return ""
	}
	return fmtSize(*f.v)
}

// fmtSize writes n bytes as parseSize reads them back: the largest unit
// that gives at most two decimals, exactly.
func fmtSize(n int64) string {
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

// parseDuration reads a duration as Go writes it (30s, 5m, 1h30m) or with
// days (7d, 1d12h, 1.5d).
func parseDuration(s string) (time.Duration, error) {
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

// fmtDuration writes d as parseDuration reads it back, without the zero
// units of time.Duration's String (24h, not 24h0m0s).
func fmtDuration(d time.Duration) string {
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
	return fmtDuration(*f.v)
}

func (f durationFlag) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*f.v = d
	return nil
}

// durationVar defines a duration flag (days allowed) with default def.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(durationFlag{p}, name, usage)
}

// duration is durationVar returning the variable.
func duration(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, def, usage)
	return p
}

var undefinedFlag = lazyre.New(`^flag provided but not defined: -+(.*)$`)

var invalidFlagValue = lazyre.New(`^invalid value ("(?:[^"\\]|\\.)*") for flag -([^:]+): (.*)\n?$`)

// flagErrors writes the flag package's parse errors as airlock's errors:
// one line that names the command, the flag and the value, then what to
// write instead ("airlock run: --timeout: "5x": use a number with a unit:
// 30s, 5m, 2h, 7d"). The line is ended by the flag set's Usage, which the
// flag package calls right after, with the help command to run.
type flagErrors struct {
	w    io.Writer
	name func() string
}

func (f flagErrors) Write(p []byte) (int, error) {
	s := strings.TrimSuffix(string(p), "\n")
	if m := invalidFlagValue().FindStringSubmatch(s); m != nil {
		s = fmt.Sprintf("--%s: %s: %s", m[2], m[1], m[3])
	} else if m := undefinedFlag().FindStringSubmatch(s); m != nil {
		s = fmt.Sprintf("no flag --%s", m[1])
	}
	if _, err := fmt.Fprintf(f.w, "airlock %s: %s", f.name(), s); err != nil {
		return 0, err
	}
	return len(p), nil
}
func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.v = n
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dB", n)
}
