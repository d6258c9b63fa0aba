#!/usr/bin/env bash
# Prepares the real parts the integration tests run against:
#   - MinIO, built from the pin in test/tools/go.mod into .cache/tools/minio;
#   - kube-apiserver and etcd (test/tools/kube/go.mod) and helm (test/tools/helm/go.mod);
#   - Mailpit, the SMTP sink of the mail tests (test/tools/mailpit/go.mod);
#   - Litestream, the SQLite replicator of the shards (test/tools/litestream/go.mod);
#   - the PostgreSQL server binaries (initdb, postgres), installed with apt-get when missing;
#   - mmdebstrap, umoci and runc (the images without Docker), installed with apt-get when missing.
# Idempotent: a second run only checks and returns in well under a second.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tools_dir="$repo/.cache/tools"
started=$SECONDS

log() { printf '[build.sh] %s\n' "$*"; }
die() {
  printf '[build.sh] error: %s\n' "$*" >&2
  exit 1
}
trap 'rc=$?; if [ "$rc" -ne 0 ]; then printf "[build.sh] failed (exit %s) after %ss\n" "$rc" "$((SECONDS - started))" >&2; fi' EXIT

# --- Go tools -------------------------------------------------------------------------------
# Each tool is built from a wrapper module under test/tools (its own go.mod pins the version and
# go.sum the checksums), so `go build` needs nothing but the Go module proxy.

# The version of <module> required by the wrapper module in <dir>/go.mod.
pinned_version() { # <wrapper dir> <module>
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) { print $i; exit } }' "$1/go.mod"
}

# The version of <module> a built binary carries in its build info ("mod <module> vX ...").
built_version() { # <binary> <module>
  go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m { print $3; exit }'
}

# ensure_go_tool <name> <wrapper dir> <module> <package> [ldflags...]
ensure_go_tool() {
  local name="$1" dir="$2" module="$3" package="$4"
  shift 4
  local bin="$tools_dir/$name" pinned have
  pinned="$(pinned_version "$dir" "$module")"
  [ -n "$pinned" ] || die "no $module version in $dir/go.mod"
  if [ -x "$bin" ]; then
    have="$(built_version "$bin" "$module" || true)"
    if [ "$have" = "$pinned" ]; then
      log "$name $pinned already built (.cache/tools/$name)"
      return
    fi
    # Without `go` we cannot read the build info: keep the binary rather than fail.
    if [ -z "$have" ] && ! command -v go >/dev/null 2>&1; then
      log "$name present at .cache/tools/$name (version not checked: no Go on PATH)"
      return
    fi
    log "$name at .cache/tools/$name is ${have:-of unknown version}, pin is $pinned: rebuilding"
  fi
  command -v go >/dev/null 2>&1 || die "Go is not installed (needed to build $name); install Go >= $(awk '$1 == "go" { print $2 }' "$dir/go.mod")"
  local t0=$SECONDS tmp="$bin.tmp.$$"
  log "building $name $pinned into .cache/tools/$name ($(go version | awk '{ print $3 }'); takes minutes the first time)"
  (
    cd "$dir"
    # GOTOOLCHAIN=local: a go.mod asking for a newer Go fails fast instead of downloading one.
    GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
      go build -trimpath -ldflags "-s -w $*" -o "$tmp" "$package"
  ) || {
    rm -f "$tmp"
    die "go build of $name failed"
  }
  mv -f "$tmp" "$bin"
  log "built $name in $((SECONDS - t0))s"
}

ensure_minio() {
  ensure_go_tool minio "$here" github.com/minio/minio github.com/minio/minio
}

# kube-apiserver and etcd (the version that Kubernetes release requires) for the cluster tests;
# kubectl is not needed: the tests talk to the API with @kubernetes/client-node.
ensure_kube() {
  local kube_dir="$here/kube" version minor
  version="$(pinned_version "$kube_dir" k8s.io/kubernetes)"
  minor="$(printf '%s' "$version" | cut -d. -f2)"
  # Without the version ldflags /version reports v0.0.0-master.
  ensure_go_tool kube-apiserver "$kube_dir" k8s.io/kubernetes k8s.io/kubernetes/cmd/kube-apiserver \
    "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ensure_go_tool etcd "$kube_dir" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3
}

# helm, told which Kubernetes minor to assume (plain builds assume 1.20) — the one kube-apiserver is.
ensure_helm() {
  local helm_dir="$here/helm" version minor
  version="$(pinned_version "$helm_dir" helm.sh/helm/v3)"
  minor="$(pinned_version "$here/kube" k8s.io/kubernetes | cut -d. -f2)"
  ensure_go_tool helm "$helm_dir" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm \
    "-X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
}

# Mailpit: an SMTP server that keeps what it receives and shows it through an HTTP API.
ensure_mailpit() {
  ensure_go_tool mailpit "$here/mailpit" github.com/axllent/mailpit github.com/axllent/mailpit
}

# Litestream: replicates each shard's SQLite databases to S3 (the shards register them on its
# control socket). The version ldflag makes `litestream version` report the pin.
ensure_litestream() {
  local version
  version="$(pinned_version "$here/litestream" github.com/benbjohnson/litestream)"
  ensure_go_tool litestream "$here/litestream" github.com/benbjohnson/litestream \
    github.com/benbjohnson/litestream/cmd/litestream "-X main.Version=$version"
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
    die "installing $* needs root (sudo is not available): run it as root"
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

# --- Chromium (headless browser for the /docs and embed tests) ---------------------------------

ensure_chromium() {
  if command -v chromium >/dev/null 2>&1; then
    log "Chromium present ($(chromium --version 2>/dev/null | head -1))"
    return
  fi
  command -v apt-get >/dev/null 2>&1 || die "chromium not found and apt-get is unavailable: install Chromium yourself"
  local t0=$SECONDS
  log "chromium not found: installing Debian's 'chromium' package with apt-get"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
  command -v chromium >/dev/null 2>&1 || die "installed 'chromium' but it is still not on the PATH"
  log "installed Chromium in $((SECONDS - t0))s"
}

# --- Image tools (deploy/image/build.sh, test/e2e/image.test.ts) ------------------------------

# mmdebstrap makes the images' Debian root filesystems, umoci packs and unpacks OCI images, runc runs
# them (Debian packages, installed with apt-get when missing).
ensure_image_tools() {
  local missing=() tool
  for tool in mmdebstrap umoci runc; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || missing+=("$tool")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "image tools present (mmdebstrap $(mmdebstrap --version | awk '{ print $2 }'), umoci, runc)"
    return
  fi
  command -v apt-get >/dev/null 2>&1 || die "${missing[*]} not found and apt-get is unavailable: install them yourself"
  local t0=$SECONDS
  log "${missing[*]} not found: installing with apt-get"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  log "installed ${missing[*]} in $((SECONDS - t0))s"
}

# Two concurrent runs would race on the same output file.
mkdir -p "$tools_dir"
exec 9>"$tools_dir/.build.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi

ensure_minio
ensure_kube
ensure_helm
ensure_mailpit
ensure_litestream
ensure_postgres
ensure_chromium
ensure_image_tools
log "done in $((SECONDS - started))s"
