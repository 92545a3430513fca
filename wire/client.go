package wire

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ClientHeader names the program a request is made through (an MCP
// client's name/version as it announced them at initialize). It is
// asserted by the caller, not authenticated: the record shows it next to
// the actor, which is.
const ClientHeader = "X-Airlock-Client"

// MaxClient is the most bytes of a client name kept (CleanClient).
const MaxClient = 200

// CleanClient is name as it may be recorded and sent: control and format
// characters (line breaks, escapes, bidirectional overrides, zero-width
// ones) and invalid UTF-8 dropped, spaces trimmed, cut to MaxClient bytes
// at a character boundary.
func CleanClient(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxClient {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
