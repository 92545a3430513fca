package hostside

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/runtime"
)

// DefaultHostname is a sandbox's hostname when its Spec names none.
const DefaultHostname = "airlock"

// CheckSpec checks what every backend takes from a Spec the same way,
// and fills in the ID (a new one) and Hostname (DefaultHostname) left
// empty and the User (runtime.User.Resolve). overlay names the paths
// that, with spec.RootFS, go into an overlay mount's option string (the state dir), which a comma, colon or
// backslash would cut into more options.
func CheckSpec(spec *runtime.Spec, overlay ...string) error {
	if spec.RootFS == "" || !filepath.IsAbs(spec.RootFS) {
		return fmt.Errorf("root filesystem must be an absolute path: %w", errdefs.ErrInvalid)
	}
	for _, l := range spec.Lowers {
		if !filepath.IsAbs(l) {
			return fmt.Errorf("lower layer %q must be an absolute path: %w", l, errdefs.ErrInvalid)
		}
		if st, err := os.Stat(l); err != nil || !st.IsDir() {
			return fmt.Errorf("lower layer %s is not a directory: %w", l, errdefs.ErrNotFound)
		}
	}
	for _, p := range append(append([]string{spec.RootFS}, spec.Lowers...), overlay...) {
		if strings.ContainsAny(p, ",:\\") {
			return fmt.Errorf("path %q has a comma, colon or backslash, which an overlay mount cannot take: %w", p, errdefs.ErrInvalid)
		}
	}
	if st, err := os.Stat(spec.RootFS); err != nil || !st.IsDir() {
		return fmt.Errorf("root filesystem %s is not a directory: %w", spec.RootFS, errdefs.ErrNotFound)
	}
	for _, bd := range spec.Binds {
		if !filepath.IsAbs(bd.Source) || !filepath.IsAbs(bd.Target) || strings.Contains(bd.Target, "..") {
			return fmt.Errorf("bind %s:%s: paths must be absolute and clean: %w", bd.Source, bd.Target, errdefs.ErrInvalid)
		}
	}
	if spec.Workspace != "" {
		st, err := os.Stat(spec.Workspace)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", spec.Workspace, errdefs.ErrNotFound)
		}
		if !st.IsDir() {
			return fmt.Errorf("workspace %s is not a directory: %w", spec.Workspace, errdefs.ErrInvalid)
		}
	}
	if spec.ID == "" {
		spec.ID = runtime.NewID()
	} else if !runtime.ValidID(spec.ID) {
		return fmt.Errorf("sandbox id %q: use lowercase letters, digits and '-': %w", spec.ID, errdefs.ErrInvalid)
	}
	if spec.Hostname == "" {
		spec.Hostname = DefaultHostname
	}
	u, err := spec.User.Resolve()
	if err != nil {
		return err
	}
	spec.User = u
	return nil
}
