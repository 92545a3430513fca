package engine

import (
	"net/url"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/lazyre"
)

// The sandbox's own loopback (curl localhost:8080/health against the dev
// server the agent started) is not the network: the sandbox has loopback
// only, so nothing leaves it. Only a request whose every destination is
// loopback, known from the text, is let through as Read, and not one to
// the agent's egress proxy (3128) or DNS (53) there, nor one through a
// proxy or a name override: those do reach out.

var loopbackRE = lazyre.New(`^(?:https?://|wss?://)?(?:localhost|127(?:\.[0-9]{1,3}){3}|\[::1\]|0\.0\.0\.0)(?::[0-9]{1,5})?(?:[/?#].*)?$`)

var egressPortRE = lazyre.New(`(?:^|:)(?:3128|53)(?:$|/)`)

var proxyFlagRE = lazyre.New(`^(?:-x|--proxy|--socks\w*|--preproxy|--connect-to|--resolve|--doh-url|-e|--execute)(?:=|$)`)

var loopbackTools = SetOf("curl wget nc ncat netcat http https xh grpcurl websocat")

// loopbackOnly reports whether c names destinations and all of them are
// the sandbox's loopback.
func loopbackOnly(c *Call) bool {
	if !loopbackTools.Has(c.Name) {
		return false
	}
	found := false
	for _, w := range c.Args {
		if !w.Static {
			return false
		}
		s := w.Text
		if egressPortRE().MatchString(s) || proxyFlagRE().MatchString(s) {
			return false
		}
		if loopbackRE().MatchString(s) {
			found = true
			continue
		}
		if strings.Contains(s, "://") {
			return false
		}
		if u, err := url.Parse("x://" + s); err == nil && u.Hostname() != "" && HostOf(s) != "" {
			return false
		}
	}
	return found
}

// keepLoopbackLocal turns a network command that only reaches loopback
// into a read.
func (c *Call) keepLoopbackLocal() {
	if !slices.Contains(c.Cmd.Classes, Network) || !loopbackOnly(c) {
		return
	}
	c.Cmd.Classes = slices.DeleteFunc(c.Cmd.Classes, func(cl Class) bool { return cl == Network })
	c.Class(Read, c.Name+" only reaches the sandbox's own loopback")
	c.Cmd.Hosts = nil
}
