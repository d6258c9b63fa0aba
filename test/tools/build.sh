#!/usr/bin/env bash
# Prepares the real parts the integration tests run against:
#   - MinIO, built from the pin in test/tools/go.mod into .cache/tools/minio;
#   - the PostgreSQL server binaries (initdb, postgres), installed with apt-get when missing.
# Idempotent: a second run only checks and returns in well under a second.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tools_dir="$repo/.cache/tools"
minio_bin="$tools_dir/minio"
started=$SECONDS

log() { printf '[build.sh] %s\n' "$*"; }
die() {
  printf '[build.sh] error: %s\n' "$*" >&2
  exit 1
}
trap 'rc=$?; if [ "$rc" -ne 0 ]; then printf "[build.sh] failed (exit %s) after %ss\n" "$rc" "$((SECONDS - started))" >&2; fi' EXIT

# --- MinIO -----------------------------------------------------------------------------------

# The version of github.com/minio/minio pinned in go.mod (the `tool` directive's module).
pinned_minio="$(awk '$1 == "github.com/minio/minio" && $2 ~ /^v/ { print $2; exit }' "$here/go.mod")"
[ -n "$pinned_minio" ] || die "no github.com/minio/minio version in $here/go.mod"

# The version a built binary carries in its build info ("mod github.com/minio/minio vX ...").
built_minio_version() {
  go version -m "$minio_bin" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/minio/minio" { print $3; exit }'
}

build_minio() {
  command -v go >/dev/null 2>&1 || die "Go is not installed (needed to build MinIO); install Go >= $(awk '$1 == "go" { print $2 }' "$here/go.mod")"
  mkdir -p "$tools_dir"
  local t0=$SECONDS tmp="$tools_dir/minio.tmp.$$"
  log "building MinIO $pinned_minio into .cache/tools/minio ($(go version | awk '{ print $3 }'); takes a few minutes the first time)"
  (
    cd "$here"
    GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
      go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/minio/minio
  ) || {
    rm -f "$tmp"
    die "go build of MinIO failed"
  }
  mv -f "$tmp" "$minio_bin"
  log "built MinIO in $((SECONDS - t0))s"
}

ensure_minio() {
  if [ -x "$minio_bin" ]; then
    local have
    have="$(built_minio_version || true)"
    if [ "$have" = "$pinned_minio" ]; then
      log "MinIO $pinned_minio already built (.cache/tools/minio)"
      return
    fi
    # Without `go` we cannot read the build info: keep the binary rather than fail.
    if [ -z "$have" ] && ! command -v go >/dev/null 2>&1; then
      log "MinIO present at .cache/tools/minio (version not checked: no Go on PATH)"
      return
    fi
    log "MinIO at .cache/tools/minio is ${have:-of unknown version}, pin is $pinned_minio: rebuilding"
  fi
  build_minio
}

# --- PostgreSQL ------------------------------------------------------------------------------

find_initdb() {
  local candidate
  # Newest major version first.
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/postgres" ]; then
      printf '%s\n' "$candidate/initdb"
      return 0
    fi
  done
  command -v initdb 2>/dev/null
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "PostgreSQL is not installed and installing it needs root: run 'apt-get install -y postgresql' as root (sudo is not available)"
  fi
}

ensure_postgres() {
  local initdb
  if initdb="$(find_initdb)"; then
    log "PostgreSQL server binaries present ($("$initdb" --version 2>/dev/null || echo "$initdb"))"
    return
  fi
  command -v apt-get >/dev/null 2>&1 ||
    die "PostgreSQL server binaries (initdb, postgres) not found and apt-get is unavailable: install PostgreSQL yourself"
  local t0=$SECONDS
  log "PostgreSQL server binaries not found: installing the 'postgresql' package with apt-get"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
  initdb="$(find_initdb)" || die "installed 'postgresql' but still cannot find initdb"
  log "installed PostgreSQL in $((SECONDS - t0))s ($("$initdb" --version))"
}

# Two concurrent runs would race on the same output file.
mkdir -p "$tools_dir"
exec 9>"$tools_dir/.build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi

ensure_minio
ensure_postgres
log "done in $((SECONDS - started))s"
