// Package record is the CLI's verbs of the daemon's record: 'airlock
// audit' (verify, query), 'airlock bundle verify' and 'airlock purge'.
package record

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit"
	"github.com/airlock-dev/airlock/internal/bundle"
	"github.com/airlock-dev/airlock/internal/cli"
	"github.com/airlock-dev/airlock/internal/store"
	"github.com/airlock-dev/airlock/sdk"
)

const auditUsage = `usage: airlock audit <verify|query|pubkey> [flags]

  verify [--db FILE [--checkpoint FILE] [--key-file FILE]] [--json]
        recompute the whole hash chain: every event's hash, every link, no
        gaps, every blob, and the head against the checkpoint the daemon's
        key signed (a checkpoint signed by another key, unreadable, or
        missing once the log records one is a failure); exit 0 if it holds,
        1 if not. Without --db the daemon verifies (and moves its signed
        checkpoint); with --db it is done here, on the database file, with
        no daemon needed (the key: audit.key next to it, or --key-file).
  query [--sandbox ID] [--task ID] [--exec ID] [--kind K] [--project P]
        [--since T] [--until T] [--after SEQ] [--limit N] [--json]
        list events (T: RFC 3339 or a duration ago like 2h; K: exec matches
        exec.*; P: only that project's events; a project's reviewer reads
        its own project's over the API, docs/tenancy.md)
  pubkey
        print the public key (base64) that signs the daemon's checkpoints and
        review bundles, as the daemon also writes it next to its key
        (DATA-DIR/audit.pub): give it to reviewers for 'airlock bundle verify
        --key' (or --key-file FILE); the private audit.key never leaves
`

func CmdAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, auditUsage)
		return 0
	case "verify":
		return auditVerify(args[1:], stdout, stderr)
	case "query":
		return auditQuery(args[1:], stdout, stderr)
	case "pubkey":
		return auditPubkey(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "airlock audit: unknown verb %q\n%s", args[0], auditUsage)
	return 2
}

func auditVerify(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("verify", "airlock audit verify [flags]", "Recomputes the audit chain.\n", stdout, stderr)
	c.Group, c.Usage = "audit", auditUsage
	db := c.FS.String("db", "", "verify this database file here instead of asking the daemon")
	cp := c.FS.String("checkpoint", "", "a signed checkpoint to check the head against (default: audit-head.json next to --db)")
	keyFile := c.FS.String("key-file", "", "with --db: the daemon's public key (audit.pub, as 'audit pubkey' prints it) or its audit.key, which must have signed the checkpoint (default: audit.key next to --db)")
	asJSON := c.FS.Bool("json", false, "print the report as JSON")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	var rep any
	ok := false
	summary := ""
	if *db != "" {
		if _, err := os.Stat(*db); err != nil {
			return c.Fail(err)
		}
		st, err := store.Open(*db)
		if err != nil {
			return c.Fail(err)
		}
		defer st.Close()
		if *cp == "" {
			*cp = filepath.Join(filepath.Dir(*db), "audit-head.json")
		}
		// The checkpoint counts only if the daemon's key signed it.
		if *keyFile == "" {
			if k := filepath.Join(filepath.Dir(*db), "audit.key"); func() bool { _, err := os.Stat(k); return err == nil }() {
				*keyFile = k
			}
		}
		var pub ed25519.PublicKey
		if *keyFile != "" {
			var err error
			if pub, err = readKeyFile(*keyFile); err != nil {
				return c.UsageErr("--key-file: %v", err)
			}
		}
		r, err := audit.VerifyCheckpointed(context.Background(), st, *cp, pub)
		if err != nil {
			return c.Fail(err)
		}
		rep, ok, summary = r, r.OK(), r.String()
		if pub == nil && ok {
			summary += " (the checkpoint's signer was not checked: give --key-file)"
		}
	} else {
		cl, err := c.Client()
		if err != nil {
			return c.Fail(err)
		}
		r, err := cl.VerifyAudit(context.Background())
		if err != nil {
			return c.Fail(err)
		}
		ok = len(r.Problems) == 0
		rep = r
		if ok {
			summary = fmt.Sprintf("ok: %d events, head %d %.16s, %d blobs (%d purged)", r.Events, r.Head, r.Hash, r.Blobs, r.Purged)
		} else {
			var b strings.Builder
			fmt.Fprintf(&b, "FAILED: %d problems in %d events", len(r.Problems), r.Events)
			for _, p := range r.Problems {
				fmt.Fprintf(&b, "\n  event %d: %s", p.Seq, p.What)
			}
			summary = b.String()
		}
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, rep)
	} else {
		fmt.Fprintln(stdout, summary)
	}
	if !ok {
		return 1
	}
	return 0
}

func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := cli.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: use a time (RFC 3339, 2026-11-29T20:00:00Z) or a duration ago (30m, 2h, 7d)", s)
	}
	return t, nil
}

func auditQuery(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("query", "airlock audit query [flags]", "Lists audit events.\n", stdout, stderr)
	c.Group, c.Usage = "audit", auditUsage
	var f sdk.AuditFilter
	c.FS.StringVar(&f.Sandbox, "sandbox", "", "only this sandbox's events")
	c.FS.StringVar(&f.Task, "task", "", "only this task's events")
	c.FS.StringVar(&f.Exec, "exec", "", "only this exec's events")
	c.FS.StringVar(&f.Kind, "kind", "", "only this kind (exec matches exec.start, exec.end, ...)")
	c.FS.StringVar(&f.Project, "project", "", "only this project's events")
	since := c.FS.String("since", "", "from this time (RFC 3339, or a duration ago: 2h, 7d)")
	until := c.FS.String("until", "", "before this time")
	c.FS.Int64Var(&f.After, "after", 0, "events after this sequence number")
	c.FS.IntVar(&f.Limit, "limit", 1000, "at most this many events")
	asJSON := c.FS.Bool("json", false, "print JSON lines")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	var err error
	if f.Since, err = parseWhen(*since); err != nil {
		return c.UsageErr("--since: %v", err)
	}
	if f.Until, err = parseWhen(*until); err != nil {
		return c.UsageErr("--until: %v", err)
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	events, err := cl.AuditEvents(context.Background(), f)
	if err != nil {
		return c.Fail(err)
	}
	for _, e := range events {
		if *asJSON {
			b, _ := jsonLine(e)
			fmt.Fprintln(stdout, b)
			continue
		}
		p := string(e.Payload)
		if len(p) > 160 {
			p = p[:157] + "..."
		}
		fmt.Fprintf(stdout, "%6d %s %-18s %-14s %s %s\n", e.Seq, e.Time.Format("2006-01-02T15:04:05.000Z"), cli.Esc(e.Kind), cli.Esc(e.Actor), cli.Esc(orDash(e.SandboxID)), cli.Esc(p))
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const bundleUsage = `usage: airlock bundle verify [--key BASE64 | --key-file FILE] [--json] BUNDLE.tar.gz

Checks a review bundle: every entry a regular file with a safe path (no
absolute paths, no .., no links), every checksum, the ed25519 signature over
the checksums and the audit chain head, and the audit excerpt's hashes.
Exit 0 if it holds, 1 if refused. --key (or --key-file: the daemon's
audit.pub, or what 'airlock audit pubkey' prints) pins the signer;
otherwise the key the manifest names is used. Never copy the private
audit.key to verify: the public key is enough.
`

func CmdBundle(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, bundleUsage)
			return 0
		}
		fmt.Fprint(stderr, bundleUsage)
		return 2
	}
	c := cli.NewCmd("verify", "airlock bundle verify [flags] FILE", "", stdout, stderr)
	c.Group, c.Usage = "bundle", bundleUsage
	keyB64 := c.FS.String("key", "", "the signer's public key (base64)")
	keyFile := c.FS.String("key-file", "", "a file with the daemon's public key (audit.pub, or what 'airlock audit pubkey' prints) that pins the signer")
	asJSON := c.FS.Bool("json", false, "print what was verified as JSON")
	pos, code, done := c.Parse(args[1:])
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.UsageErr("give one bundle file")
	}
	var trusted ed25519.PublicKey
	switch {
	case *keyB64 != "":
		k, err := base64.StdEncoding.DecodeString(*keyB64)
		if err != nil || len(k) != ed25519.PublicKeySize {
			return c.UsageErr("--key: not a base64 ed25519 public key")
		}
		trusted = k
	case *keyFile != "":
		k, err := readKeyFile(*keyFile)
		if err != nil {
			return c.UsageErr("--key-file: %v", err)
		}
		trusted = k
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return c.Fail(err)
	}
	defer f.Close()
	v, err := bundle.VerifyStream(f, trusted)
	if err != nil {
		c.Errorf("%v", err)
		return 1
	}
	if *asJSON {
		_ = cli.PrintJSON(stdout, v)
		return 0
	}
	m := v.Manifest
	fmt.Fprintf(stdout, "ok: task %s (%s@%.12s), %d entries, %d audit events, signed at chain head %d %.16s\n", cli.Esc(m.Task), cli.Esc(m.Repo), cli.Esc(m.Commit), v.Entries, v.Events, m.Chain.Seq, m.Chain.Hash)
	if trusted == nil {
		// Anyone can sign a bundle with a key of their own: say which.
		fmt.Fprintf(stdout, "signed by key %s, which was not checked: give --key or --key-file to pin the daemon's\n", m.Chain.PublicKey)
	}
	return 0
}

const purgeUsage = `usage: airlock purge --older-than DURATION

Removes finished tasks' results (bundles included), stored command output
and audit blobs older than DURATION (e.g. 30d, 720h). Records and audit events
stay, so the chain still verifies; the purge itself is recorded first.
`

func CmdPurge(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("purge", "airlock purge --older-than DURATION", "", stdout, stderr)
	c.Group, c.Usage = "purge", purgeUsage
	d := cli.Duration(c.FS, "older-than", 0, "remove what is older than this `DURATION`, e.g. 30d (required)")
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	if *d <= 0 {
		return c.UsageErr("--older-than is required and must be positive")
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	r, err := cl.Purge(context.Background(), *d)
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintf(stdout, "purged before %s: %d task results, %d stored outputs, %d audit blobs\n", r.Before.Format(time.RFC3339), r.TaskResults, r.Outputs, r.AuditBlobs)
	return 0
}

func jsonLine(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func auditPubkey(args []string, stdout, stderr io.Writer) int {
	c := cli.NewCmd("pubkey", "airlock audit pubkey [flags]", "Prints the daemon's audit public key.\n", stdout, stderr)
	c.Group, c.Usage = "audit", auditUsage
	pos, code, done := c.Parse(args)
	if done {
		return code
	}
	if len(pos) != 0 {
		return c.UsageErr("unexpected argument %q", pos[0])
	}
	cl, err := c.Client()
	if err != nil {
		return c.Fail(err)
	}
	k, err := cl.AuditPublicKey(context.Background())
	if err != nil {
		return c.Fail(err)
	}
	fmt.Fprintln(stdout, k.PublicKey)
	return 0
}

// readKeyFile reads --key-file: the public key as audit pubkey prints it
// (base64, what reviewers are given), or the daemon's private audit.key
// (on the daemon's host only: its public half is used).
func readKeyFile(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data))); err == nil && len(k) == ed25519.PublicKeySize {
		return k, nil
	}
	if len(data) == ed25519.SeedSize {
		return ed25519.NewKeyFromSeed(data).Public().(ed25519.PublicKey), nil
	}
	return nil, fmt.Errorf("%s: not an airlock audit public key (base64) or audit.key", path)
}
