package daemon

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/sandbox"
	"github.com/airlock-dev/airlock/internal/template"
	"github.com/airlock-dev/airlock/internal/template/oci"
)

// images is the API's template import: package template/oci into the
// daemon's template store, with the default layer limits.
type images struct{ store *template.Store }

func (i images) Import(ctx context.Context, name, source string, progress func(string)) (*sandbox.TemplateInfo, string, error) {
	opt := oci.Options{}
	if progress != nil {
		opt.Progress = func(f string, a ...any) { progress(fmt.Sprintf(f, a...)) }
	}
	img, err := oci.Import(ctx, i.store, name, source, opt)
	if err != nil {
		return nil, "", err
	}
	return &sandbox.TemplateInfo{Name: img.Name, Version: img.Version, Kind: img.Kind, Base: img.Source, Created: img.Created}, img.Digest, nil
}
