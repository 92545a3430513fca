//go:build airlock_core

package main

import (
	_ "embed"
	"strings"

	"github.com/airlock-dev/airlock/internal/front"
)

// The core and its checksum. core/ holds nothing in the source tree:
// scripts/build.sh builds the core and puts both files here through a
// build overlay (-overlay), with -tags airlock_core.
var (
	//go:embed core/airlock
	coreData string
	//go:embed core/airlock.sha256
	coreSum string
)

var core = front.Core{Data: coreData, Sum: strings.TrimSpace(coreSum)}
