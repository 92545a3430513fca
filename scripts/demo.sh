#!/bin/bash
# The end-to-end demo of what airlock does today: one-shot sandboxes with
# `airlock run`. It makes a small sample repository, lets a (scripted)
# untrusted agent work on a copy of it, shows the boundary holding and
# every limit being reported, and leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
AIRLOCK="$PWD/bin/airlock"
[ -x "$AIRLOCK" ] || ./scripts/build.sh "$AIRLOCK"

work="$(mktemp -d /tmp/airlock-demo.XXXXXX)"
chmod 711 "$work"
export AIRLOCK_STATE_DIR="$work/state" AIRLOCK_DATA_DIR="$work/data" AIRLOCK_CGROUP_PARENT="airlock-demo-$$"
# the direct path (no daemon), even where a daemon runs: this demo is of airlock run itself
export AIRLOCK_RUN_DIRECT=1
cleanup() { "$AIRLOCK" reap >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ airlock run %s\n' "$*"; set +e; "$AIRLOCK" run "$@"; rc=$?; set -e; echo "(exit status $rc)"; }

step "A sample repository on the host"
repo="$work/repo"
mkdir -p "$repo"
cat > "$repo/calc.sh" <<'SH'
#!/bin/sh
# add two numbers
echo $(( $1 - $2 ))
SH
cat > "$repo/test.sh" <<'SH'
#!/bin/sh
[ "$(sh calc.sh 2 3)" = 5 ] && echo "PASS" || { echo "FAIL: 2+3 gave $(sh calc.sh 2 3)"; exit 1; }
SH
ls -l "$repo"

step "The agent inspects, fixes and tests a copy of it (/workspace); the host copy is untouched"
run --workspace "$repo" --timeout 30s -- /bin/sh -c 'sh test.sh; sed -i "s/\$1 - \$2/\$1 + \$2/" calc.sh; sh test.sh; id'
echo "host calc.sh still says: $(grep '\$1' "$repo/calc.sh")"

step "What the sandbox is made of"
run -- /bin/sh -c 'grep -E "^(Cap(Eff|Bnd|Amb)|NoNewPrivs|Seccomp):" /proc/self/status; echo "hostname: $(hostname)"; ip -o link 2>/dev/null | cut -d: -f2 || true'

step "Hostile actions fail"
run -- /bin/sh -c 'cat /etc/shadow; ls /root; echo x > /usr/bin/evil; unshare -Ur true; cat /proc/1/environ; echo "all refused"'

step "No route out: not even the host's loopback"
python3 -m http.server --bind 127.0.0.1 18080 >/dev/null 2>&1 & srv=$!
sleep 0.5
echo "host: a web server listens on 127.0.0.1:18080 -> $(bash -c 'exec 3<>/dev/tcp/127.0.0.1/18080 && echo reachable from the host')"
run -- /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/18080 && echo "connected?!" || echo "refused: the sandbox has a loopback of its own and no other interface"'
kill $srv 2>/dev/null || true

step "Limits are hit and named"
run --timeout 1s -- /bin/sh -c 'while :; do :; done'
run --memory 64M -- /bin/sh -c 'head -c 300M /dev/zero | tail'
run --pids 32 -- /bin/sh -c 'for i in $(seq 80); do sleep 5 & done 2>/dev/null; wait'
run --disk 16M -- /bin/sh -c 'head -c 64M /dev/zero > /workspace/big'
run --output-limit 64 -- /bin/sh -c 'yes airlock | head -c 100000' | tail -c 120; echo

step "The daemon and the task workflow: a repository at a commit, an agent's fix, tests, the patch"
sock="$work/airlock.sock"
"$AIRLOCK" serve --socket "$sock" 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
export AIRLOCK_SOCKET="$sock"
git -C "$repo" init -q && git -C "$repo" add . && git -C "$repo" -c user.name=demo -c user.email=demo@example.invalid commit -qm "base"
tk() { printf '$ airlock task %s\n' "$*"; "$AIRLOCK" task "$@"; }
printf '$ airlock task start --repo %s --scope "*.sh" --test "sh test.sh" --prompt "make calc.sh add"\n' "$repo"
id=$("$AIRLOCK" task start --repo "$repo" --scope '*.sh' --test 'sh test.sh' --prompt 'make calc.sh add' --ttl 10m)
echo "task $id"
set +e
tk test "$id"
tk exec "$id" -- cat calc.sh
tk exec "$id" -- sed -i 's/\$1 - \$2/\$1 + \$2/' calc.sh
echo "# the policy decides before anything reaches the sandbox:"
tk exec "$id" -- cat .env
tk exec "$id" -- sh -c 'echo "notes" > NOTES.txt'
echo "# a destructive command is held for a human; an operator approves it (narrowly, for 10m):"
(
  for _ in $(seq 100); do ap=$("$AIRLOCK" approvals 2>/dev/null | awk '/^ap-/{print $1; exit}'); [ -n "$ap" ] && break; sleep 0.1; done
  printf '$ airlock approvals\n'; "$AIRLOCK" approvals
  printf '$ airlock approve %s --for 10m\n' "$ap"; "$AIRLOCK" approve "$ap" --for 10m --reason "demo: removing a stray file is fine"
) &
tk exec "$id" -- rm -f old.sh
wait $!
tk test "$id"
set -e
tk diff --stat "$id"
tk diff "$id"
tk finish "$id"
out="$PWD/demo-output"
rm -rf "$out" && mkdir -p "$out"
cp -r "$AIRLOCK_DATA_DIR/tasks/$id/result" "$out/task-$id"
echo "# the review plane: a tamper-evident record and a signed bundle"
printf '$ airlock audit query --task %s --kind exec | cut -c1-150\n' "$id"
"$AIRLOCK" audit query --task "$id" --kind exec | cut -c1-150
printf '$ airlock audit verify\n'; "$AIRLOCK" audit verify
printf '$ airlock audit pubkey > airlock.pub   # the public key a reviewer verifies with\n'
"$AIRLOCK" audit pubkey > "$out/airlock.pub"
printf '$ airlock bundle verify --key-file airlock.pub bundle.tar.gz\n'
"$AIRLOCK" bundle verify --key-file "$out/airlock.pub" "$out/task-$id/bundle.tar.gz"
tk export "$id" -o "$out/task-$id/bundle"
kill -TERM "$daemon"; wait "$daemon" || true
echo "daemon stopped; the review material is in $out/task-$id: the signed bundle.tar.gz, unpacked in bundle/ (open bundle/report.html)"

step "Nothing is left behind"
echo "sandbox state dirs: $(ls "$AIRLOCK_STATE_DIR/sandboxes" | wc -l)"
echo "sandbox cgroups:    $(find /sys/fs/cgroup -maxdepth 2 -name "$AIRLOCK_CGROUP_PARENT" -exec sh -c 'ls -d "$1"/*/ 2>/dev/null' _ {} \; | wc -l)"
echo
echo "demo finished"
