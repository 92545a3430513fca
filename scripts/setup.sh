#!/bin/bash
# Installs everything airlock's build, tests and demo need on a fresh
# Debian machine of this kind (root): Debian packages, Go modules, linters.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)     # benchmark peer
command -v ip >/dev/null || need+=(iproute2)          # network escape tests (fake upstream netns)
command -v git >/dev/null || need+=(git)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)  # sandbox disks
command -v gcc >/dev/null || need+=(gcc libc6-dev)    # seccomp int 0x80 test
command -v chromium >/dev/null || need+=(chromium)    # report.html headless-browser test
if [ ${#need[@]} -gt 0 ]; then
	echo "setup: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi

go mod download
sc="$(go env GOPATH)/bin/staticcheck"
if [ ! -x "$sc" ]; then
	echo "setup: installing staticcheck"
	GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
