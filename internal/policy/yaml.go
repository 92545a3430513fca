//go:build !airlock_noyaml

package policy

import (
	"bytes"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"go.yaml.in/yaml/v3"
)

// FilesSupported reports whether Parse reads policy files in this build.
const FilesSupported = true

// decodeFile decodes a policy file's YAML, strictly; empty is an empty
// document (a policy file of the defaults).
func decodeFile(data []byte) (f *File, empty bool, err error) {
	f = &File{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil {
		if err.Error() == "EOF" {
			return &File{Version: 1}, true, nil
		}
		return nil, false, errdefs.Wrap(errdefs.ErrInvalid, "policy: %v", err)
	}
	return f, false, nil
}
