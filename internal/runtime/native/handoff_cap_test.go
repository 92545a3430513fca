package native

import "github.com/airlock-dev/airlock/internal/runtime"

// setMaxProxyConns sets the spec's proxy connection cap (a file of its
// own so that the benchmark also builds against trees without the cap).
func setMaxProxyConns(s *runtime.Spec, n int) { s.MaxProxyConns = n }
