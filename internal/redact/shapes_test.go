package redact

import (
	"strings"
	"testing"
)

// Fake tokens of the right shapes. None of them was ever a real credential.
const (
	awsKeyID   = "AKIAIOSFODNN7EXAMPLE"
	awsSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	ghToken    = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
	ghPAT      = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW"
	glToken    = "glpat-abcdefghij0123456789"
	slackToken = "xoxb-123456789012-1234567890123-abcdefghijABCDEFGHIJ1234"
	stripeKey  = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
	googleKey  = "AIzaSyA1234567890abcdefghijklmnopqrstuv"
	npmToken   = "npm_abcdefghijABCDEFGHIJ0123456789abcdef"
	jwtToken   = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	rsaKey     = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yB8H1jh5fhXtDw9gk8xkYOYAz3w4xqp6Kjy2MZ5bBmN0X+7Gq8a2\n-----END RSA PRIVATE KEY-----"
)

func TestShapes(t *testing.T) {
	r := New()
	tests := []struct {
		name, in, want string
	}{
		// AWS access key ids.
		{"aws key id", "id " + awsKeyID + " end", "id [REDACTED:aws-access-key] end"},
		{"aws sts key id", "ASIAY34FZKBOKMUTVV7A,", "[REDACTED:aws-access-key],"},
		{"aws key id in env", "AWS_ACCESS_KEY_ID=" + awsKeyID, "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-key]"},
		{"aws key id too short", "AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPL"},
		{"aws key id too long", awsKeyID + "X", awsKeyID + "X"},
		{"aws key id inside a word", "x" + awsKeyID, "x" + awsKeyID},
		{"aws key id lowercase", strings.ToLower(awsKeyID), strings.ToLower(awsKeyID)},

		// AWS secret keys, only next to their name.
		{"aws secret ini", "aws_secret_access_key = " + awsSecret, "aws_secret_access_key = [REDACTED:aws-secret-key]"},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=" + awsSecret + "\n", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]\n"},
		{"aws secret sts json", `"SecretAccessKey": "` + awsSecret + `",`, `"SecretAccessKey": "[REDACTED:aws-secret-key]",`},
		{"aws secret flag", "--secret-access-key " + awsSecret, "--secret-access-key " + awsSecret}, // no = or :
		{"bare 40 char base64", "x " + awsSecret + " y", "x " + awsSecret + " y"},

		// GitHub.
		{"github classic", "token " + ghToken + ".", "token [REDACTED:github-token]."},
		{"github oauth", "gho_" + ghToken[4:], "[REDACTED:github-token]"},
		{"github server", "ghs_" + ghToken[4:] + "xyz", "[REDACTED:github-token]"},
		{"github fine-grained", "pat=" + ghPAT + " ok", "pat=[REDACTED:github-token] ok"},
		{"github too short", "ghp_abcdef", "ghp_abcdef"},
		{"github 35 chars", ghToken[:len(ghToken)-1], ghToken[:len(ghToken)-1]},
		{"github inside a word", "xghp_" + ghToken[4:], "xghp_" + ghToken[4:]},

		// GitLab, Slack, Stripe, Google, npm.
		{"gitlab", "PRIVATE-TOKEN: " + glToken, "PRIVATE-TOKEN: [REDACTED:gitlab-token]"},
		{"gitlab too short", "glpat-abc123", "glpat-abc123"},
		{"slack bot", "SLACK=" + slackToken, "SLACK=[REDACTED:slack-token]"},
		{"slack user", "xoxp-1234567890-abcdef", "[REDACTED:slack-token]"},
		{"slack unknown type", "xoxz-1234567890-abcdef", "xoxz-1234567890-abcdef"},
		{"slack too short", "xoxb-123", "xoxb-123"},
		{"stripe secret", "key: " + stripeKey, "key: [REDACTED:stripe-key]"},
		{"stripe restricted", "rk_live_" + stripeKey[8:], "[REDACTED:stripe-key]"},
		{"stripe publishable", "pk_live_" + stripeKey[8:], "pk_live_" + stripeKey[8:]},
		{"stripe test", "sk_test_" + stripeKey[8:], "sk_test_" + stripeKey[8:]},
		{"google", "?key=" + googleKey + "&q=1", "?key=[REDACTED:google-api-key]&q=1"},
		{"google too short", googleKey[:38], googleKey[:38]},
		{"google too long", googleKey + "x", googleKey + "x"},
		{"npm", "//npm.registry.example.test/:_authToken=" + npmToken, "//npm.registry.example.test/:_authToken=[REDACTED:npm-token]"},
		{"npm config var", "npm_config_registry=https://r.example", "npm_config_registry=https://r.example"},

		// Private keys.
		{"rsa key", "before\n" + rsaKey + "\nafter", "before\n[REDACTED:private-key]\nafter"},
		{"openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "[REDACTED:private-key]"},
		{"pkcs8 key in json", `{"key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n"}`, `{"key":"[REDACTED:private-key]\n"}`},
		{"pgp key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----", "[REDACTED:private-key]"},
		{"truncated key", "cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJ\naFDrBz9v", "cat id_rsa\n[REDACTED:private-key]"},
		{"truncated key then prose", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n(output truncated)", "[REDACTED:private-key](output truncated)"},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----"},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----"},

		// JWTs and bearer tokens.
		{"jwt", "id_token=" + jwtToken + "&x=1", "id_token=[REDACTED:jwt]&x=1"},
		{"jwt unsigned", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", "[REDACTED:jwt]"},
		{"base64 json is no jwt", "eyJhIjoxLCJiIjoyfQ==", "eyJhIjoxLCJiIjoyfQ=="},
		{"jwt header alone", "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9"},
		{"jwt inside base64", "QUJD" + jwtToken, "QUJD" + jwtToken},
		{"bearer header", "Authorization: Bearer abcdef0123456789ABCDEF\r\n", "Authorization: Bearer [REDACTED:bearer-token]\r\n"},
		{"bearer lowercase", "-H 'authorization: bearer abc.def-ghi_jkl~mno+pqr/stu='", "-H 'authorization: bearer [REDACTED:bearer-token]'"},
		{"bearer jwt", "Bearer " + jwtToken, "Bearer [REDACTED:jwt]"},
		{"bearer short", "Authorization: Bearer abc123", "Authorization: Bearer abc123"},
		{"bearer prose", "the bearer of bad news", "the bearer of bad news"},
		{"bearer challenge", `WWW-Authenticate: Bearer realm="api"`, `WWW-Authenticate: Bearer realm="api"`},

		// Passwords in URLs: only the password goes.
		{"postgres url", "DATABASE_URL=postgres://app:s3cr3t-pw@db:5432/app", "DATABASE_URL=postgres://app:[REDACTED:password-in-url]@db:5432/app"},
		{"redis url no user", "redis://:hunter2@cache:6379/0", "redis://:[REDACTED:password-in-url]@cache:6379/0"},
		{"password with colon", "https://u:pa:ss@host/", "https://u:[REDACTED:password-in-url]@host/"},
		{"url with port", "https://example.com:8443/path?a=b@c", "https://example.com:8443/path?a=b@c"},
		{"url with user only", "ssh://git@github.com/org/repo.git", "ssh://git@github.com/org/repo.git"},
		{"scp style git", "git@github.com:org/repo.git", "git@github.com:org/repo.git"},
		{"no scheme", "://u:p@h", "://u:p@h"},

		// Generic assignments: only the value goes.
		{"api_key", "api_key=abcd1234efgh", "api_key=[REDACTED:generic-api-key]"},
		{"API-KEY header", "X-API-KEY: abcd1234efgh", "X-API-KEY: [REDACTED:generic-api-key]"},
		{"apikey yaml", "  apiKey: 'abcd1234efgh'\n", "  apiKey: '[REDACTED:generic-api-key]'\n"},
		{"env token", "export DEPLOY_TOKEN=abcdefgh12345678", "export DEPLOY_TOKEN=[REDACTED:generic-api-key]"},
		{"json password", `{"password": "hunter2hunter2"}`, `{"password": "[REDACTED:generic-api-key]"}`},
		{"passwd", "DB_PASSWD=correcthorse", "DB_PASSWD=[REDACTED:generic-api-key]"},
		{"client secret", "client_secret: 0123456789abcdef", "client_secret: [REDACTED:generic-api-key]"},
		{"secret key", "SECRET_KEY=django-insecure-abc123", "SECRET_KEY=[REDACTED:generic-api-key]"},
		{"go literal", `token := "abcdefgh12345678"`, `token := "[REDACTED:generic-api-key]"`},
		{"query string", "GET /v1?api_key=abcdef123456&format=json", "GET /v1?api_key=[REDACTED:generic-api-key]&format=json"},
		{"two on a line", "token=aaaaaaaa1 password=bbbbbbbb2", "token=[REDACTED:generic-api-key] password=[REDACTED:generic-api-key]"},
		{"specific beats generic", "GITHUB_TOKEN=" + ghToken, "GITHUB_TOKEN=[REDACTED:github-token]"},
		{"password no value", "password:", "password:"},
		{"password empty", "Password: \n", "Password: \n"},
		{"password short", "password: hunter2", "password: hunter2"},
		{"token short", "token=1234567", "token=1234567"},
		{"comparison", "if token == expected_token {", "if token == expected_token {"},
		{"call", `password = os.Getenv("DB_PASSWORD")`, `password = os.Getenv("DB_PASSWORD")`},
		{"call bare", "token := newTokenSource()", "token := newTokenSource()"},
		{"field", "Token: cfg.Credentials.Token,", "Token: cfg.Credentials.Token,"},
		{"variable", "password: $DB_PASSWORD", "password: $DB_PASSWORD"},
		{"windows variable", "password=%DB_PASSWORD%", "password=%DB_PASSWORD%"},
		{"path", "secret: /etc/airlock/secret.key", "secret: /etc/airlock/secret.key"},
		{"relative path", `"tokenFile": "./testdata/token.txt"`, `"tokenFile": "./testdata/token.txt"`},
		{"plural", "tokens: 12345678901", "tokens: 12345678901"},
		{"longer word", "tokenizer: gpt2-tokenizer-large", "tokenizer: gpt2-tokenizer-large"},
		{"test name", "--- FAIL: TestPasswordReset (0.00s)", "--- FAIL: TestPasswordReset (0.00s)"},
		{"file and line", "internal/auth/token.go:42:7: undefined: secretStore", "internal/auth/token.go:42:7: undefined: secretStore"},
		{"error prose", "open /run/secrets/token: no such file or directory", "open /run/secrets/token: no such file or directory"},
		{"placeholder", "token: [REDACTED:github-token]", "token: [REDACTED:github-token]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestNotSecrets lists ordinary data that must pass through untouched.
func TestNotSecrets(t *testing.T) {
	r := New("known-secret-value")
	for _, in := range []string{
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"Merge: 1a2b3c4 5d6e7f8",
		"id=123e4567-e89b-12d3-a456-426614174000",
		"SGVsbG8sIFdvcmxkISBUaGlzIGlzIG5vdCBhIHNlY3JldC4=",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  go.tar.gz",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"golang.org/x/net v0.62.0 h1:7Q6a2Xu1m/IYcJUp2nZ+5VwJyN0v0NHJvCUtJxgLPyU=",
		"/home/user/.ssh/id_ed25519",
		"internal/secret/token_store.go",
		`C:\Users\dev\AppData\Roaming\npm\token-cache`,
		"--- PASS: TestToken/expired (0.01s)",
		"ok  \tgithub.com/airlock-dev/airlock/internal/redact\t0.123s",
		"password:",
		"password: ",
		"passwd: 123",
		"Enter password:\n",
		"https://github.com/airlock-dev/airlock/pull/42",
		"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
		"0x7fffffffffffffff 18446744073709551615",
	} {
		if fs := r.Find([]byte(in)); fs != nil {
			t.Errorf("Find(%q) = %v, want none", in, fs)
		}
	}
}

func TestRuleTable(t *testing.T) {
	documented := map[string]bool{
		"known-secret": true, "aws-access-key": true, "aws-secret-key": true, "github-token": true,
		"gitlab-token": true, "slack-token": true, "private-key": true, "jwt": true,
		"bearer-token": true, "generic-api-key": true, "stripe-key": true, "google-api-key": true,
		"npm-token": true, "password-in-url": true,
	}
	if len(kinds) != len(documented) {
		t.Errorf("%d kinds, want the %d documented on Finding", len(kinds), len(documented))
	}
	for k := range kinds {
		if !documented[k] {
			t.Errorf("kind %q is not documented on Finding", k)
		}
	}
	for _, r := range rules {
		for _, a := range r.anchors {
			if r.fold && a != strings.ToLower(a) {
				t.Errorf("rule %s: folded anchor %q must be lowercase", r.kind, a)
			}
		}
	}
}
