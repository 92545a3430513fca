package daemon

import (
	"context"

	"github.com/airlock-dev/airlock/internal/manager"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/oci"
)

// images is the API's template import: package template/oci into the
// daemon's template store, with the default layer limits.
type images struct{ store *template.Store }

func (i images) Import(ctx context.Context, name, source string) (*manager.TemplateInfo, string, error) {
	img, err := oci.Import(ctx, i.store, name, source, oci.Options{})
	if err != nil {
		return nil, "", err
	}
	return &manager.TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created}, img.Digest, nil
}
