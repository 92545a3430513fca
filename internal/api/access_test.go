package api

import (
	"os"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/tenant"
)

// routeRoles maps each route's pattern to the role it needs.
func routeRoles(s *Server) map[string]tenant.Role {
	out := map[string]tenant.Role{}
	for _, r := range s.Routes() {
		out[r.Pattern] = r.Role
	}
	return out
}

// docRoles reads the route table of docs/tenancy.md: lines
// "| `METHOD /path` | role | ... |".
func docRoles(t *testing.T) map[string]tenant.Role {
	t.Helper()
	b, err := os.ReadFile("../../docs/tenancy.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tenant.Role{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pattern := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if !strings.Contains(pattern, " /") {
			continue
		}
		out[pattern] = tenant.Role(strings.TrimSpace(cells[2]))
	}
	return out
}
