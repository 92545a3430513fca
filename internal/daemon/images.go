package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/secrets"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/oci"
)

// images is the API's template import: package template/oci into the
// daemon's template store, with the default layer limits; a registry
// credential from the secrets module (its use recorded in the audit
// log).
type images struct {
	store   *template.Store
	secrets *secrets.Secrets
}

func (i images) Import(ctx context.Context, name, source, registrySecret string, progress func(string)) (*sandbox.TemplateInfo, string, error) {
	opt := oci.Options{}
	if registrySecret != "" {
		v, err := i.secrets.Use(ctx, registrySecret, "template.import")
		if errors.Is(err, errdefs.ErrNotFound) {
			return nil, "", fmt.Errorf("registry secret %s: the daemon has no such secret ('airlock secret set %s'): %w", registrySecret, registrySecret, errdefs.ErrNotFound)
		}
		if err != nil {
			return nil, "", fmt.Errorf("registry secret %s: %w", registrySecret, err)
		}
		opt.RegistrySecret = &oci.RegistrySecret{Name: registrySecret, Value: v}
	}
	if progress != nil {
		opt.Progress = func(f string, a ...any) { progress(fmt.Sprintf(f, a...)) }
	}
	img, err := oci.Import(ctx, i.store, name, source, opt)
	if err != nil {
		return nil, "", err
	}
	return &sandbox.TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created}, img.Digest, nil
}
