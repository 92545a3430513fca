package policy

import (
	"path"
	"strings"
)

// Credential files by name. Examples and templates of them are not
// secrets (.env.example, id_rsa.pub).
var secretNames = map[string]bool{
	".env": true, ".envrc": true, ".npmrc": true, ".pypirc": true, ".netrc": true, "_netrc": true,
	".git-credentials": true, "credentials": true, "credentials.json": true, "credentials.yml": true,
	"credentials.yaml": true, "secrets.yml": true, "secrets.yaml": true, "secrets.json": true,
	"secrets.toml": true, "terraform.tfvars": true, "terraform.tfstate": true, ".htpasswd": true,
	".pgpass": true, "kubeconfig": true, "service-account.json": true, "master.key": true,
	"id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true, "shadow": true,
	"gshadow": true, ".boto": true, ".s3cfg": true, ".vault-token": true,
}

var secretExts = []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".tfvars", ".ppk", ".asc", ".kdbx", ".gpg"}

// Directories whose contents are credentials.
var secretDirs = []string{".aws/", ".ssh/", ".gnupg/", ".kube/", ".docker/config.json", ".azure/",
	".config/gcloud/", ".config/gh/", ".password-store/", ".terraform.d/credentials", ".cargo/credentials",
	".gem/credentials", ".config/hub", ".m2/settings.xml", ".gradle/gradle.properties"}

var notSecretSuffixes = []string{".example", ".sample", ".template", ".dist", ".defaults", ".default", ".pub", ".tmpl", ".md"}

// isSecretPath reports whether a path names a credential file: .env and
// its variants, private keys, credential stores and cloud configs.
func isSecretPath(p string) bool {
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
	for _, d := range secretDirs {
		if strings.Contains(slashed, "/"+d) || strings.HasSuffix(slashed+"/", "/"+d) {
			return true
		}
	}
	base := path.Base(p)
	if secretNames[base] {
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
