#!/usr/bin/env bash
# Builds PocketBase (the version pinned in go.mod beside this script) into .cache/tools/pocketbase
# for the SQLite benchmark. Called by bench/sqlite when the binary is missing or of another
# version; not part of test/tools/build.sh, so CI's tool build time is unchanged.
# Idempotent: a second run only checks the binary's build info and returns.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
tools_dir="$repo/.cache/tools"
bin="$tools_dir/pocketbase"
module=github.com/pocketbase/pocketbase

log() { printf '[pocketbase/build.sh] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}

command -v go >/dev/null 2>&1 || die "Go is not installed; install Go >= $(awk '$1 == "go" { print $2 }' "$here/go.mod")"
pinned="$(awk -v m="$module" '$1 == m { print $2; exit }' "$here/go.mod")"
[ -n "$pinned" ] || die "no $module version in $here/go.mod"

mkdir -p "$tools_dir"
# Two concurrent runs would race on the same output file (same lock file as test/tools/build.sh).
exec 9>"$tools_dir/.build.lock"
command -v flock >/dev/null 2>&1 && flock 9

if [ -x "$bin" ]; then
  have="$(go version -m "$bin" 2>/dev/null | awk -v m="$module" '$1 == "mod" && $2 == m { print $3; exit }' || true)"
  if [ "$have" = "$pinned" ]; then
    log "pocketbase $pinned already built (.cache/tools/pocketbase)"
    exit 0
  fi
  log "pocketbase at .cache/tools/pocketbase is ${have:-of unknown version}, pin is $pinned: rebuilding"
fi

started=$SECONDS
tmp="$bin.tmp.$$"
log "building pocketbase $pinned into .cache/tools/pocketbase ($(go version | awk '{ print $3 }'); about a minute the first time)"
(
  cd "$here"
  # GOTOOLCHAIN=local: a go.mod asking for a newer Go fails fast instead of downloading one.
  # CGO_ENABLED=0: PocketBase's default pure-Go SQLite (modernc.org/sqlite), as its releases ship.
  GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go build -trimpath -ldflags "-s -w -X $module.Version=${pinned#v}" -o "$tmp" "$module/examples/base"
) || {
  rm -f "$tmp"
  die "go build of pocketbase failed"
}
mv -f "$tmp" "$bin"
log "built pocketbase in $((SECONDS - started))s"
