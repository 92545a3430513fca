//go:build !airlock_core

package main

import "github.com/airlock-dev/airlock/internal/front"

// Built without -tags airlock_core: no core embedded, so every verb but
// 'policy' needs AIRLOCK_CORE (front.PathEnv) to name one.
var core = front.Core{}
