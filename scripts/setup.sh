#!/bin/bash
# Installs everything airlock's build, tests and demo need on a fresh
# Debian machine of this kind (root): Debian packages, Go modules, linters.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)     # benchmark peer (airlock run)
command -v socat >/dev/null || need+=(socat)          # benchmark peer (egress tunnel)
command -v ip >/dev/null || need+=(iproute2)          # network escape tests (fake upstream netns)
command -v git >/dev/null || need+=(git)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)  # sandbox disks
command -v gcc >/dev/null || need+=(gcc libc6-dev)    # seccomp int 0x80 test
command -v chromium >/dev/null || need+=(chromium)    # report.html headless-browser test
command -v node >/dev/null || need+=(nodejs)          # the published MCP client in the tests
command -v npm >/dev/null || need+=(npm)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)  # cgroup v2 VM test (test/vm)
command -v depmod >/dev/null || need+=(kmod)                        # its kernel modules
command -v curl >/dev/null || need+=(curl)            # egress tests: a client inside sandboxes
command -v runsc >/dev/null || need+=(runsc)          # the gVisor backend (internal/runtime/gvisor)
[ -d /usr/lib/python3/dist-packages/pytest ] || need+=(python3-pytest)  # the README task test's Python project
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)  # template debian, and the Debian image the template tests import
command -v umoci >/dev/null || need+=(umoci)            # template tests: OCI layouts, and the import benchmark's peer
command -v skopeo >/dev/null || need+=(skopeo)          # the import benchmark's peer
if [ ${#need[@]} -gt 0 ]; then
	echo "setup: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The cgroup v2 VM test's kernel (a Debian package, unpacked into a cache;
# nothing to do once cached). Its test fails under CI without it.
./test/vm/prepare.sh || echo "setup: WARNING: test/vm/prepare.sh failed: the cgroup v2 VM test cannot run" >&2

go mod download
# The published JavaScript clients the tests drive airlock with, at the
# exact versions of test/node/package-lock.json, from npm's configured registry.
if [ ! -d test/node/node_modules/@modelcontextprotocol/sdk ] || [ test/node/package-lock.json -nt test/node/node_modules/.package-lock.json ]; then
	echo "setup: installing test/node packages"
	npm ci --prefix test/node --no-audit --no-fund --loglevel=error
fi
sc="$(go env GOPATH)/bin/staticcheck"
if [ ! -x "$sc" ]; then
	echo "setup: installing staticcheck"
	GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
gi="$(go env GOPATH)/bin/goimports"
if [ ! -x "$gi" ]; then
	echo "setup: installing goimports"
	GOFLAGS= go install golang.org/x/tools/cmd/goimports@v0.52.0
fi
vc="$(go env GOPATH)/bin/govulncheck"
if [ ! -x "$vc" ]; then
	echo "setup: installing govulncheck"
	GOFLAGS= go install golang.org/x/vuln/cmd/govulncheck@v1.9.0
fi
