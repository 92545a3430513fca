// Package presets finds the package registries this machine is
// configured to use (npm, go, pypi, debian, crates), so that egress
// policies can name them as presets while airlock's code names no host.
//
//	p, err := presets.Discover(ctx, presets.Env{}) // the zero Env: this machine
//	svc, err := egress.New(egress.Config{Presets: p, ...})
//
// Invariants:
//   - It reads only: tools' own reports (`npm config get`, `go env`), their
//     configuration files and the environment, through Env, which tests
//     replace; nothing is fetched.
//   - A preset that finds nothing allows nothing: a tool's built-in default
//     that its configuration does not spell out is not guessed.
//   - Every host it returns is a name with its port (never an address),
//     as netpolicy.ParseTarget reads it.
//
// It imports nothing of airlock's but netpolicy.
package presets
