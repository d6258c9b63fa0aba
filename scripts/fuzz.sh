#!/usr/bin/env bash
# `make fuzz`: schemathesis (pinned with hashes in test/fuzz/requirements.txt, installed into
# .cache/fuzz-venv) against a real `hostplane serve` on a loopback port with a fresh embedded data
# dir (PGlite + local folder), a site key and an account session. Every check, every phase
# (examples, coverage, fuzzing, stateful), within a time budget; exits non-zero on any finding.
#
#   bash scripts/fuzz.sh                       # bounded pass, FUZZ_MAX_TIME=180 s (what CI runs)
#   FUZZ_MAX_TIME=3600 bash scripts/fuzz.sh    # the long pass
#   FUZZ_SEED=123 bash scripts/fuzz.sh         # replay a run (the seed is printed at the end)
#   bash scripts/fuzz.sh --include-path /api/v1/files/upload   # extra args go to `schemathesis run`
#
# Also: FUZZ_WORKERS (default 1: CPython 3.11.7 races in `ast` across worker threads), FUZZ_REPORT_DIR (default .cache/fuzz/report: JUnit XML, an NDJSON
# event log and the run's console output), FUZZ_LOG_LEVEL (the server's, default warn; its log is
# copied into the report dir). Expects dist/ (builds it with `npm run build` when missing).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

max_time=${FUZZ_MAX_TIME:-180}
workers=${FUZZ_WORKERS:-1}
report_dir=${FUZZ_REPORT_DIR:-.cache/fuzz/report}
venv=.cache/fuzz-venv
requirements=test/fuzz/requirements.txt

log() { printf '[fuzz] %s\n' "$*" >&2; }

# --- schemathesis, reinstalled when the lock file changes ------------------------------------------
stamp="$venv/.installed-$(sha256sum "$requirements" | cut -c1-16)"
if [[ ! -f $stamp ]]; then
  log "installing schemathesis into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes -r "$requirements"
  touch "$stamp"
fi
py="$venv/bin/python"

if [[ ! -f dist/src/cli/main.js ]]; then
  log 'dist/ is missing: npm run build'
  npm run build
fi

# --- a fresh server ---------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/hostplane-fuzz.XXXXXX")
server_pid=''
stop_server() {
  [[ -n $server_pid ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=''
}
cleanup() {
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
# Embedded back-ends only, whatever the calling shell points at.
unset DATABASE_URL S3_BUCKET S3_ENDPOINT HOSTPLANE_KUBERNETES
export HOST=127.0.0.1 PORT=$port HOSTPLANE_METRICS_PORT=0 HOSTPLANE_DATA_DIR="$work/data" HOSTPLANE_BASE_URL="$base"
# Loopback may set X-Forwarded-For: test/fuzz/hooks.py spreads publish requests over many client
# addresses so the per-address publish limit does not answer nearly all of them with 429.
export HOSTPLANE_SITES_DOMAIN=localhost HOSTPLANE_TRUST_PROXY=loopback LOG_LEVEL=${FUZZ_LOG_LEVEL:-warn}
# Custom domains attach at once (no DNS lookups of random names from the fuzzer).
export HOSTPLANE_DOMAIN_VERIFICATION=off

node dist/src/cli/main.js serve >"$work/server.log" 2>&1 &
server_pid=$!
log "hostplane serve (pid $server_pid) on $base, data in $work/data"
for i in $(seq 1 600); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    log 'the server exited before it was ready:'
    cat "$work/server.log" >&2
    exit 1
  fi
  "$py" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$base/readyz" \
    2>/dev/null && break
  if ((i == 600)); then
    log 'the server was not ready within 120 s'
    exit 1
  fi
  sleep 0.2
done

field() { "$py" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
site=$(node dist/src/cli/main.js admin create-site --slug fuzz --email fuzz@example.com --plan enterprise --json)
session=$(node dist/src/cli/main.js admin session --email fuzz@example.com --json)
HOSTPLANE_FUZZ_API_KEY=$(field apiKey <<<"$site")
HOSTPLANE_FUZZ_SESSION=$(field token <<<"$session")
HOSTPLANE_FUZZ_SITE_ID=$(field siteId <<<"$site")
# Spare sessions of the account for the calls that end one (sign-out, DELETE a session): hooks.py
# sends those with a spare, so the fixture's session lives through the run.
HOSTPLANE_FUZZ_SPARE_SESSIONS=$(for _ in $(seq 1 20); do
  node dist/src/cli/main.js admin session --email fuzz@example.com --json | field token
done | paste -sd, -)
HOSTPLANE_FUZZ_SESSION_ID=$("$py" -c '
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"authorization": "Bearer " + sys.argv[2]})
sessions = json.load(urllib.request.urlopen(req, timeout=10))["sessions"]
print(next(s["id"] for s in sessions if s["current"]))' "$base/api/v1/account/sessions" "$HOSTPLANE_FUZZ_SESSION")
demo=$("$py" -c '
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=json.dumps({"html_content": "<p>fuzz</p>"}).encode(),
                             headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=10))["url"])' "$base/demo/api/publish")
HOSTPLANE_FUZZ_DEMO_PAGE=${demo##*/}
# SQLite: a database installed with the master key (tokens rw, ro and user-auth), its admin and a
# user, and a few rows; hooks.py sends them with the site's Origin and repairs them when the fuzzer
# revokes or signs them out (test/fuzz/README.md).
HOSTPLANE_FUZZ_SQLITE_ORIGIN="http://fuzz.$HOSTPLANE_SITES_DOMAIN:$port"
HOSTPLANE_FUZZ_SQLITE=$("$py" test/fuzz/sqlite_fixture.py "$base" "$HOSTPLANE_FUZZ_API_KEY" "$HOSTPLANE_FUZZ_SQLITE_ORIGIN")
HOSTPLANE_FUZZ_BASE_URL=$base
export HOSTPLANE_FUZZ_API_KEY HOSTPLANE_FUZZ_SESSION HOSTPLANE_FUZZ_DEMO_PAGE HOSTPLANE_FUZZ_BASE_URL
export HOSTPLANE_FUZZ_SITE_ID HOSTPLANE_FUZZ_SPARE_SESSIONS HOSTPLANE_FUZZ_SESSION_ID
export HOSTPLANE_FUZZ_SQLITE HOSTPLANE_FUZZ_SQLITE_ORIGIN

# --- schemathesis -----------------------------------------------------------------------------------
rm -rf "$report_dir"
mkdir -p "$report_dir"
args=(
  --config-file test/fuzz/schemathesis.toml run "$base/api/v1/openapi.json"
  --checks all
  --phases examples,coverage,fuzzing,stateful
  --max-time "$max_time"
  --workers "$workers"
  --generation-database "$root/.cache/fuzz/examples"
  --report junit,ndjson --report-dir "$report_dir"
  --no-color
)
[[ -n ${FUZZ_SEED:-} ]] && args+=(--seed "$FUZZ_SEED")
log "schemathesis $("$venv/bin/schemathesis" --version | awk '{print $NF}'), budget ${max_time} s"
set +e
PYTHONDONTWRITEBYTECODE=1 SCHEMATHESIS_HOOKS="$root/test/fuzz/hooks.py" "$venv/bin/schemathesis" "${args[@]}" "$@" 2>&1 | tee "$report_dir/output.txt"
status=${PIPESTATUS[0]}
set -e

if ! kill -0 "$server_pid" 2>/dev/null; then
  log 'the server died during the run:'
  tail -n 50 "$work/server.log" >&2
  status=1
fi
stop_server
cp "$work/server.log" "$report_dir/server.log"
if ((status != 0)); then
  log "findings (exit $status): see $report_dir/output.txt, junit.xml and server.log"
fi
exit "$status"
