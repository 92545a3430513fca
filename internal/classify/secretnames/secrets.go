package secretnames

import (
	"path"
	"slices"
	"strings"
	"sync"
)

// Credential files by name. Examples and templates of them are not
// secrets (.env.example, id_rsa.pub).
// (made on first use: a policy check is a short process of its own)
var secretNames = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		".env": true, ".envrc": true, ".npmrc": true, ".pypirc": true, ".netrc": true, "_netrc": true,
		".git-credentials": true, "credentials": true, "credentials.json": true, "credentials.yml": true,
		"credentials.yaml": true, "secrets.yml": true, "secrets.yaml": true, "secrets.json": true,
		"secrets.toml": true, "terraform.tfvars": true, "terraform.tfstate": true, ".htpasswd": true,
		".pgpass": true, "kubeconfig": true, "service-account.json": true, "master.key": true,
		"id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true, "shadow": true,
		"gshadow": true, ".boto": true, ".s3cfg": true, ".vault-token": true,
		// agent and model CLIs, Cloudflare's local secrets, Terraform's token
		".claude.json": true, ".dev.vars": true, ".terraformrc": true, "terraform.rc": true,
		// shell and REPL histories hold pasted tokens and passwords
		".bash_history": true, ".zsh_history": true, ".sh_history": true, ".python_history": true,
		".node_repl_history": true, ".psql_history": true, ".mysql_history": true, ".sqlite_history": true,
		".irb_history": true, ".rediscli_history": true, ".lesshst": true, ".histfile": true,
		// browsers' cookie and password stores, keyrings
		"Cookies": true, "cookies.sqlite": true, "Login Data": true, "logins.json": true, "key4.db": true,
		"login.keyring": true,
	}
})

var secretExts = []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".tfvars", ".ppk", ".asc", ".kdbx", ".gpg"}

// Directories whose contents are credentials.
var secretDirs = []string{".aws/", ".ssh/", ".gnupg/", ".kube/", ".docker/config.json", ".azure/",
	".config/gcloud/", ".config/gh/", ".password-store/", ".terraform.d/credentials", ".cargo/credentials",
	".gem/credentials", ".config/hub", ".m2/settings.xml", ".gradle/gradle.properties",
	// agent and model CLIs' auth files
	".codex/auth.json", ".codex/credentials", ".claude/.credentials.json", ".config/claude/", ".cache/huggingface/token",
	".cache/huggingface/stored_tokens", ".huggingface/token", ".config/openai/", ".gemini/oauth_creds.json",
	".gemini/google_accounts.json", ".config/gemini/", ".config/github-copilot/", ".aider.conf.yml", ".config/anthropic/",
	// container and Kubernetes secret mounts
	"run/secrets/", "var/run/secrets/",
	// keyrings, browser profiles
	".local/share/keyrings/", ".mozilla/firefox/", ".config/google-chrome/", ".config/chromium/",
	".config/BraveSoftware/", "Library/Keychains/", ".terraform.d/"}

// slashedSecretDirs are secretDirs with a leading slash, made once (the
// check runs for every argument of every command).
var slashedSecretDirs = sync.OnceValue(func() []string {
	out := make([]string, len(secretDirs))
	for i, d := range secretDirs {
		out[i] = "/" + d
	}
	return out
})

var notSecretSuffixes = []string{".example", ".sample", ".template", ".dist", ".defaults", ".default", ".pub", ".tmpl", ".md"}

// Path reports whether a path names a credential file: .env and
// its variants, private keys, credential stores and cloud configs.
func Path(p string) bool {
	if p == "" || len(p) > 4096 {
		return false
	}
	p = strings.TrimSuffix(p, "/")
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(p, s) {
			return false
		}
	}
	if strings.HasPrefix(p, "/proc/") && strings.HasSuffix(p, "/environ") {
		return true
	}
	slashed := "/" + p
	withSlash := slashed + "/"
	for _, d := range slashedSecretDirs() {
		if strings.Contains(slashed, d) || strings.HasSuffix(withSlash, d) {
			return true
		}
	}
	base := path.Base(p)
	if secretNames()[base] {
		return true
	}
	if strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env") {
		return true
	}
	for _, pre := range []string{"id_rsa", "id_ed25519", "id_ecdsa", "id_dsa"} {
		if strings.HasPrefix(base, pre) {
			return true
		}
	}
	for _, e := range secretExts {
		if strings.HasSuffix(base, e) {
			return true
		}
	}
	return false
}

// Globs the shell expands (unquoted wildcards) may name a credential
// file: cat .e* reads .env. A glob is judged by names of its own shape (a
// wildcard as "x" and as nothing: *.pub -> x.pub, a public key; *.pem ->
// x.pem, a key) and, where an element starts with a literal character (so
// it may match a hidden file), by the credential names it matches (.e* ->
// .env, ~/.a*/credentials -> ~/.aws/credentials). A leading wildcard is
// not matched against names: the shell's * skips hidden files, and cat *
// is not taken for reading credentials.json.

// MaxGlobElems bounds the elements of a glob judged: deeper globs are not
// expanded (unknown instead).
const MaxGlobElems = 32

// MaxGlobSteps bounds the name matches tried for one command line; a line
// that needs more is unknown.
const MaxGlobSteps = 1 << 15

// globTokens are the names a glob element is matched against.
var globTokens = sync.OnceValue(func() []string {
	var out []string
	for n := range secretNames() {
		out = append(out, n)
	}
	out = append(out, ".env.local", ".env.production", ".aws", ".ssh", ".gnupg", ".kube", ".docker", ".azure",
		".config", ".password-store", ".terraform.d", ".cargo", ".gem", ".m2", ".gradle", "gcloud", "gh",
		"config.json", "settings.xml", "gradle.properties", "hub", "environ", ".codex", ".claude", ".gemini",
		".huggingface", ".cache", ".local", ".mozilla", "secrets")
	slices.Sort(out) // the name found first is shown: the same every time
	return out
})

// GlobResult is what judging a glob found.
type GlobResult int

const (
	GlobClean GlobResult = iota
	GlobSecret
	GlobTooDeep
)

// JudgeGlob judges an unquoted glob; name is the credential name it
// may expand to. steps counts the matches tried.
func JudgeGlob(pat string, steps *int) (GlobResult, string) {
	if *steps > MaxGlobSteps || strings.Count(pat, "/") >= MaxGlobElems {
		return GlobTooDeep, ""
	}
	elems := strings.Split(pat, "/")
	xs := make([]string, len(elems))
	empty := make([]string, len(elems))
	for i, e := range elems {
		xs[i], empty[i] = globShape(e, "x"), globShape(e, "")
	}
	for _, shape := range []string{strings.Join(xs, "/"), strings.Join(empty, "/")} {
		*steps++
		if Path(shape) {
			return GlobSecret, shape
		}
	}
	for i, e := range elems {
		if e == "" || strings.IndexByte("*?[", e[0]) >= 0 || !strings.ContainsAny(e, "*?[") {
			continue
		}
		for _, t := range globTokens() {
			if *steps++; *steps > MaxGlobSteps {
				return GlobTooDeep, ""
			}
			if ok, _ := path.Match(e, t); !ok {
				continue
			}
			cand := make([]string, len(xs))
			copy(cand, xs)
			cand[i] = t
			if p := strings.Join(cand, "/"); Path(p) {
				return GlobSecret, p
			}
		}
	}
	return GlobClean, ""
}

// globShape is a name of the element's shape: each * and ? as fill, a
// bracket as its first character.
func globShape(e, fill string) string {
	if !strings.ContainsAny(e, "*?[") {
		return e
	}
	var b strings.Builder
	for i := 0; i < len(e); i++ {
		switch c := e[i]; c {
		case '\\':
			if i+1 < len(e) {
				i++
				b.WriteByte(e[i])
			}
		case '*', '?':
			b.WriteString(fill)
		case '[':
			j := strings.IndexByte(e[i+1:], ']')
			if j < 0 {
				b.WriteByte(c)
				continue
			}
			class := e[i+1 : i+1+j]
			if j == 0 { // []...] : ] is the first member
				if k := strings.IndexByte(e[i+2:], ']'); k >= 0 {
					class, j = e[i+1:i+2+k], k+1
				}
			}
			if class == "" || class[0] == '!' || class[0] == '^' {
				b.WriteString("x")
			} else {
				b.WriteByte(class[0])
			}
			i += j + 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ExtglobAlternatives turns bash's extended globs into plain ones (at most
// max): @(a|b) and +(a|b) as each alternative, ?(a) and *(a) also as
// nothing, !(a) as *.
func ExtglobAlternatives(pat string, max int) []string {
	out := []string{pat}
	for n := 0; n < max; n++ {
		done := true
		var next []string
		for _, p := range out {
			i := -1
			for j := 0; j+1 < len(p); j++ {
				if strings.IndexByte("@?+*!", p[j]) >= 0 && p[j+1] == '(' && (j == 0 || p[j-1] != '\\') {
					i = j
					break
				}
			}
			if i < 0 {
				next = append(next, p)
				continue
			}
			done = false
			depth, end := 0, -1
			for j := i + 1; j < len(p) && end < 0; j++ {
				switch p[j] {
				case '(':
					depth++
				case ')':
					if depth--; depth == 0 {
						end = j
					}
				}
			}
			if end < 0 {
				next = append(next, p) // not an extglob after all
				continue
			}
			pre, body, post := p[:i], p[i+2:end], p[end+1:]
			var alts []string
			switch p[i] {
			case '!':
				alts = []string{"*"}
			case '?', '*':
				alts = append(strings.Split(body, "|"), "")
			default:
				alts = strings.Split(body, "|")
			}
			for _, a := range alts {
				next = append(next, pre+a+post)
			}
		}
		if len(next) > max {
			next = next[:max]
		}
		out = next
		if done {
			break
		}
	}
	return out
}

// secretWord reports whether a word of a variable's name says it holds a
// credential. This and secretPair are switches, not maps made at package
// init: every airlock process, a policy check too, would pay for those.
func secretWord(w string) bool {
	switch w {
	case "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY", "CREDENTIAL",
		"CREDENTIALS", "PAT", "DSN", "PRIVATEKEY", "ACCESSKEY":
		return true
	}
	return false
}

// secretPair reports whether two words of a variable's name, joined by
// "_", say it holds a credential.
func secretPair(w string) bool {
	switch w {
	case "API_KEY", "PRIVATE_KEY", "ACCESS_KEY", "SESSION_KEY", "SECRET_KEY", "AUTH_TOKEN", "SIGNING_KEY",
		"ENCRYPTION_KEY", "CLIENT_SECRET":
		return true
	}
	return false
}

// Var reports whether a variable's name says it holds a
// credential: a whole word of it is TOKEN, SECRET, PASSWORD... (MAX_TOKENS
// and TOKENIZER_PATH are not).
func Var(name string) bool {
	parts := strings.Split(strings.ToUpper(name), "_")
	for i, p := range parts {
		if secretWord(p) {
			return true
		}
		if i > 0 && secretPair(parts[i-1]+"_"+p) {
			return true
		}
	}
	return false
}

// Template reports whether p ends as an example or template of a
// credential file does (.env.example, config.sample), a public key and
// documentation aside.
func Template(p string) bool {
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(p, s) && s != ".pub" && s != ".md" {
			return true
		}
	}
	return false
}
