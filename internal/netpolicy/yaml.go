//go:build !airlock_noyaml

package netpolicy

import (
	"bytes"
	"io"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"go.yaml.in/yaml/v3"
)

// decodeYAML decodes a policy's YAML into p, strictly; an empty document
// leaves p as it is.
func decodeYAML(data []byte, p *Policy) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil && err != io.EOF {
		return errdefs.Wrap(errdefs.ErrInvalid, "egress policy: %v", err)
	}
	return nil
}
