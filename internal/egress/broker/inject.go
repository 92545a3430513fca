package broker

import (
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/netpolicy"
)

// csecret is a brokered secret as the policy compiled it: its id,
// placeholder, value, hosts and the header fields it may go in.
type csecret = netpolicy.CompiledSecret

// Use is one secret put into one header field of a request.
type Use struct{ Secret, Header string }

// Inject replaces placeholders with values in the header fields each
// secret names (Authorization unless it names others), and returns the
// uses. Any other header, the URL and the body go as they are: a
// placeholder the sandbox puts in a cookie or a query string reaches the
// upstream as the placeholder.
func Inject(h http.Header, secrets []*netpolicy.CompiledSecret) []Use {
	var uses []Use
	for name, vals := range h {
		for _, sec := range secrets {
			if !sec.Headers[name] {
				continue
			}
			used := false
			for i, v := range vals {
				if strings.Contains(v, sec.Placeholder) {
					vals[i] = strings.ReplaceAll(v, sec.Placeholder, sec.Value)
					used = true
				}
			}
			if used {
				uses = append(uses, Use{sec.ID, name})
			}
		}
	}
	return uses
}
