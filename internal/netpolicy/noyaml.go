//go:build airlock_noyaml

package netpolicy

import "github.com/airlock-dev/airlock/internal/errdefs"

// decodeYAML: the front (built with airlock_noyaml) links no YAML decoder;
// see package policy's FilesSupported.
func decodeYAML([]byte, *Policy) error {
	return errdefs.Wrap(errdefs.ErrUnsupported, "egress policy: this binary reads no YAML (built with airlock_noyaml)")
}
