#!/usr/bin/env bash
# Smoke test of one pillbox binary, natively or under an emulator:
#
#   packaging/smoke-test.sh BINARY [RUNNER...]
#   packaging/smoke-test.sh dist/pillbox-0.1.0-x86_64-linux
#   packaging/smoke-test.sh dist/pillbox-0.1.0-aarch64-linux qemu-aarch64-static
#   packaging/smoke-test.sh dist/pillbox-0.1.0-armv7-linux qemu-arm-static
#
# In a temporary data directory it runs `version`, `setup` (password on
# stdin), `token create`, `serve` on a free loopback port, then through the
# HTTP API with curl: a person, a medication (supply 10), a daily schedule, a
# take of it, the take read back and the supply now 9; then `backup` while
# the server runs, a graceful stop (SIGTERM, exit 0) and `check`. It prints
# one summary line, "smoke-test.sh: <binary>: ok ..." or "... FAILED at
# <step> ...", exits non-zero on any failure, and stops the server it started.
#
# Under a RUNNER (qemu-user without binfmt_misc) GLIBC_TUNABLES is set:
# `serve` otherwise starts itself again through /proc/self/exe to set it,
# which qemu-user cannot follow. On the real machine it is not needed.
#
# Needs curl and jq (apt-get install -y curl jq).
set -euo pipefail

if [[ $# -lt 1 ]]; then
    echo "usage: $0 BINARY [RUNNER...]" >&2
    exit 2
fi
bin=$1
shift
runner=("$@")
label=$(basename "$bin")${runner[0]:+ under ${runner[0]}}
[[ -f $bin ]] || {
    echo "smoke-test.sh: $bin: no such file" >&2
    exit 2
}
for tool in curl jq; do
    command -v "$tool" >/dev/null || {
        echo "smoke-test.sh: $tool is missing (apt-get install -y curl jq)" >&2
        exit 2
    }
done
if [[ ${#runner[@]} -gt 0 ]]; then
    export GLIBC_TUNABLES=glibc.malloc.tcache_count=0
fi

started=$(date +%s)
scratch=$(mktemp -d)
data=$scratch/data
server_pid=
step=start
cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$scratch"
}
trap cleanup EXIT

fail() {
    echo "smoke-test.sh: $label: FAILED at $step: $*" >&2
    if [[ -s $scratch/serve.log ]]; then
        echo "--- last lines of the server's log" >&2
        tail -n 20 "$scratch/serve.log" >&2
    fi
    exit 1
}
pillbox() {
    "${runner[@]}" "$bin" "$@"
}
# VmRSS of a process in kB (under qemu-user: the emulator's, which holds the guest).
rss_kb() {
    sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$1/status"
}

step=version
version=$(pillbox version) || fail "exit $?"
[[ $version == "pillbox "* ]] || fail "printed: $version"
echo "smoke-test.sh: $label: $version" >&2

step=setup
password="smoke-test password $RANDOM$RANDOM"
household=$(printf '%s\n' "$password" | pillbox setup --data-dir "$data" --household Home \
    --email owner@example.org --time-zone Europe/London --name "Olive Owner" 2>"$scratch/setup.err") ||
    fail "$(cat "$scratch/setup.err")"
[[ $household =~ ^[0-9]+$ ]] || fail "printed: $household"
[[ $(stat -c %a "$data") == 700 ]] || fail "data directory mode $(stat -c %a "$data"), not 700"

step="token create"
token=$(pillbox token create --data-dir "$data" --household "$household" --email owner@example.org \
    --name smoke 2>"$scratch/token.err") || fail "$(cat "$scratch/token.err")"
[[ $token == pbx_app_* ]] || fail "printed: $token"

step=serve
# A free port: the kernel picks one for a listening socket closed at once.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000)))
base=http://127.0.0.1:$port/api/v1
# exec: $! is then the server itself (or the emulator running it), not a subshell.
serve_started=$(date +%s%N)
(exec "${runner[@]}" "$bin" serve --data-dir "$data" --listen "127.0.0.1:$port" >"$scratch/serve.log" 2>&1) &
server_pid=$!
ready=
for _ in $(seq 1 600); do
    kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
    if curl -sf -o /dev/null "$base/capabilities"; then
        ready=yes
        break
    fi
    sleep 0.1
done
[[ -n $ready ]] || fail "no answer on port $port within 60 s"
ready_ms=$((($(date +%s%N) - serve_started) / 1000000))
rss_ready=$(rss_kb "$server_pid")

# api METHOD PATH [BODY] EXPECTED-STATUS: the answer's body in $scratch/body.
api() {
    local args=(-s -o "$scratch/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $token")
    if [[ -n $3 ]]; then
        args+=(-H 'Content-Type: application/json' --data-binary "$3")
    fi
    local status
    status=$(curl "${args[@]}" "$base/households/$household$2") || fail "curl $1 $2: exit $?"
    [[ $status == "$4" ]] || fail "$1 $2: HTTP $status, not $4: $(head -c 600 "$scratch/body")"
}
# field JQ-PATH: that field of the last answer, which must be there.
field() {
    jq -er "$1" "$scratch/body" || fail "no $1 in: $(head -c 600 "$scratch/body")"
}

step="create person"
api POST /people '{"person": {"name": "Ada", "date_of_birth": "1990-01-01"}}' 201
person=$(field .data.id)
step="create medication"
api POST /medications '{"medication": {"name": "Paracetamol 500mg tablets",
    "dose_amount": "1", "dose_unit": "tablet", "current_supply": "10"}}' 201
medication=$(field .data.id)
step="create schedule"
api POST /schedules "{\"schedule\": {\"person_id\": $person, \"medication_id\": $medication,
    \"schedule_type\": \"daily\", \"schedule_config\": {\"times\": [\"08:00\"]},
    \"start_date\": \"2025-01-01\"}}" 201
schedule=$(field .data.id)
step="record take"
api POST /medication_takes "{\"medication_take\": {\"source_type\": \"schedule\",
    \"source_id\": $schedule, \"taken_at\": \"2025-01-10T08:05:00+00:00\"}}" 201
take=$(field .data.id)
step="read take back"
api GET "/medication_takes?per_page=100" "" 200
jq -e --argjson id "$take" --argjson person "$person" \
    '[.data[] | select(.id == $id and .person_id == $person and .dose_unit == "tablet"
        and .taken_at == "2025-01-10T08:05:00.000000Z")] | length == 1' "$scratch/body" >/dev/null ||
    fail "take $take not listed as recorded: $(head -c 600 "$scratch/body")"
step="read stock"
api GET "/medications/$medication" "" 200
supply=$(field .data.current_supply)
[[ $supply == 9 ]] || fail "current_supply $supply after one take of 1 from 10, not 9"

step="backup while serving"
backup_out=$(pillbox backup --data-dir "$data" --out "$scratch/backup.sqlite3" 2>&1) || fail "$backup_out"
grep -q "integrity ok" <<<"$backup_out" || fail "no 'integrity ok' in: $backup_out"
[[ -s $scratch/backup.sqlite3 ]] || fail "no backup file"

# Idle: a few seconds without requests, then the server's resident memory.
sleep 5
rss_idle=$(rss_kb "$server_pid")

step=stop
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[[ $status == 0 ]] || fail "serve exited $status after SIGTERM"

step=check
check_out=$(pillbox check --data-dir "$data" 2>&1) || fail "$check_out"

echo "smoke-test.sh: $label: ok: version, setup, token, serve (answered ${ready_ms} ms after start)," \
    "person/medication/schedule/take 201, take read back, supply 10 -> 9, backup integrity ok," \
    "SIGTERM exit 0, check ok; VmRSS ${rss_ready} kB ready, ${rss_idle} kB idle; $(($(date +%s) - started)) s"
