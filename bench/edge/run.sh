#!/usr/bin/env bash
# Edge cache-hit throughput of Hostplane against nginx serving the same files, and against a bare
# node:http server answering the same bytes from memory (the runtime's ceiling; see README.md).
# `make bench-edge` runs this. Loopback only; stops by itself (about 2 minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# nginx: Debian's package, when missing. (Where policy-rc.d allows it, the package also starts
# the system nginx service on port 80; the bench never uses that one.)
nginx_bin=$(command -v nginx || true)
if [ -z "$nginx_bin" ] && [ -x /usr/sbin/nginx ]; then nginx_bin=/usr/sbin/nginx; fi
if [ -z "$nginx_bin" ]; then
  echo "bench-edge: installing nginx with apt-get"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx >/dev/null
  nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
fi

# wrk: Debian's package, when missing (autocannon cannot saturate nginx on a small machine).
if ! command -v wrk >/dev/null; then
  echo "bench-edge: installing wrk with apt-get"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi
if [ ! -x node_modules/.bin/tsx ]; then
  npm ci --no-audit --no-fund
fi
if [ ! -f dist/src/cli/main.js ]; then
  npm run build
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hostplane-bench-edge.XXXXXX")
bench_pid=""
cleanup() {
  if [ -n "$bench_pid" ] && kill -0 "$bench_pid" 2>/dev/null; then
    kill -TERM "$bench_pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$bench_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$bench_pid" 2>/dev/null || true
  fi
  # The servers bench.mjs started, should it have died without stopping them.
  if [ -f "$work/pids" ]; then
    while read -r pid _; do
      if kill -0 "$pid" 2>/dev/null && grep -qaE 'nginx|main\.js|bare-node\.mjs' "/proc/$pid/cmdline" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bench.mjs has its own watchdog; timeout is the backstop. scripts/node.sh: the pinned Node (24),
# which runs Hostplane and the bare node:http server alike.
BENCH_TMPDIR="$work" NGINX_BIN="$nginx_bin" timeout --kill-after=15 900 bash scripts/node.sh exec node bench/edge/bench.mjs &
bench_pid=$!
status=0
wait "$bench_pid" || status=$?
bench_pid=""
if [ "$status" -ne 0 ] || [ "${BENCH_EXTRA:-1}" = "0" ]; then exit "$status"; fi

# The cache-miss path, a 20 MB video and memory, on PostgreSQL + MinIO (built by test/tools/build.sh).
if [ -x .cache/tools/minio ]; then
  echo
  NGINX_BIN="$nginx_bin" timeout --kill-after=15 900 bash scripts/node.sh exec npx tsx bench/edge/extra.ts
else
  echo "bench-edge: .cache/tools/minio missing (bash test/tools/build.sh): cache-miss, video and memory figures skipped"
fi
