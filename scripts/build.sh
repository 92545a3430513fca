#!/bin/bash
# Builds the airlock binary users run: the front (cmd/airlock-front) with
# the core (cmd/airlock, the full program) embedded in it. One file; the
# front writes the core to a content-addressed file on first use (package
# internal/front). Usage: scripts/build.sh [OUT] (default bin/airlock).
# GO is honoured; LDFLAGS goes to both builds; CORE_OUT, when set, is
# where the embedded core is also written (the front's tests compare
# the two). Nothing is written into the source tree: the core reaches
# the front's go:embed through a build overlay.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bin/airlock}"
go="${GO:-go}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"
CGO_ENABLED=0 "$go" build -trimpath -ldflags "${LDFLAGS:-}" -o "$tmp/airlock" ./cmd/airlock
sha256sum "$tmp/airlock" | cut -c1-64 > "$tmp/airlock.sha256"
src="$PWD/cmd/airlock-front/core"
printf '{"Replace":{"%s/airlock":"%s/airlock","%s/airlock.sha256":"%s/airlock.sha256"}}\n' \
	"$src" "$tmp" "$src" "$tmp" > "$tmp/overlay.json"
CGO_ENABLED=0 "$go" build -trimpath -ldflags "${LDFLAGS:-}" -overlay "$tmp/overlay.json" \
	-tags airlock_core -o "$out" ./cmd/airlock-front
if [ -n "${CORE_OUT:-}" ]; then cp "$tmp/airlock" "$CORE_OUT"; fi
