#!/bin/bash
# Builds the airlock binary users run: one file, three programs.
#   - the lean agent (cmd/airlock-agent): what a sandbox runs as PID 1;
#   - the core (cmd/airlock, the full program), with the agent embedded
#     (internal/runtime/agentbin, -tags airlock_agent);
#   - the front (cmd/airlock-front), with the core embedded (-tags
#     airlock_core): it answers `airlock policy` and runs the core for the
#     rest, writing it to a content-addressed file on first use; built
#     with -tags airlock_noyaml, it links no YAML decoder and hands a
#     check with --policy FILE to the core too.
# Usage: scripts/build.sh [OUT] (default bin/airlock). GO is honoured;
# LDFLAGS goes to every build; CORE_OUT, when set, is where the core is
# also written (the tests run it). Nothing is written into the source
# tree: each embedded program reaches its go:embed through a build
# overlay (-overlay).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bin/airlock}"
go="${GO:-go}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

build() { CGO_ENABLED=0 "$go" build -trimpath -ldflags "${LDFLAGS:-}" "$@"; }
# overlay NAME SRCDIR: an overlay that puts $tmp/NAME and its .sha256 at
# SRCDIR/NAME, where a go:embed of the package there reads them.
overlay() {
	sha256sum "$tmp/$1" | cut -c1-64 > "$tmp/$1.sha256"
	local d="$PWD/$2"
	printf '{"Replace":{"%s/%s":"%s/%s","%s/%s.sha256":"%s/%s.sha256"}}\n' \
		"$d" "$1" "$tmp" "$1" "$d" "$1" "$tmp" "$1" > "$tmp/$1.overlay.json"
}

build -o "$tmp/airlock-agent" ./cmd/airlock-agent
overlay airlock-agent internal/runtime/agentbin/agent
build -overlay "$tmp/airlock-agent.overlay.json" -tags airlock_agent -o "$tmp/airlock" ./cmd/airlock
overlay airlock cmd/airlock-front/core
build -overlay "$tmp/airlock.overlay.json" -tags airlock_core,airlock_noyaml -o "$out" ./cmd/airlock-front
if [ -n "${CORE_OUT:-}" ]; then cp "$tmp/airlock" "$CORE_OUT"; fi
