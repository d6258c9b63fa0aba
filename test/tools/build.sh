#!/usr/bin/env bash
# Prepares the real parts the integration tests run against:
#   - MinIO, built from the pin in test/tools/go.mod into .cache/tools/minio;
#   - kube-apiserver and etcd (test/tools/kube/go.mod) and helm (test/tools/helm/go.mod);
#   - Mailpit, the SMTP sink of the mail tests (test/tools/mailpit/go.mod);
#   - Litestream, the SQLite replicator of the shards (test/tools/litestream/go.mod);
#   - kube-controller-manager, kube-scheduler, kubelet, kube-proxy and kubectl (test/tools/kube)
#     and CoreDNS (test/tools/coredns/go.mod) for the real node of test/kube/node/, and the Debian
#     packages it runs on (containerd, runc, CNI plugins, iptables, ...), installed when missing;
#   - the PostgreSQL server binaries (initdb, postgres), installed with apt-get when missing;
#   - Prometheus and promtool (test/tools/prometheus/go.mod) for the alert-rule tests and the node;
#   - cert-manager's and the Gateway API's CRDs (test/tools/crds/go.mod) in the Go module cache;
#   - mmdebstrap and umoci for the images without Docker (deploy/image/build.sh), with the node's packages.
#   - for the node's ingress and TLS: Traefik (test/tools/traefik), cert-manager's controller, webhook
#     and acmesolver (test/tools/cert-manager), the cert-manager and Gateway API CRDs (module cache)
#     and Debian's pebble (the ACME server and its DNS).
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

# The version of <module> a built binary carries in its build info ("mod <module> vX ...", or
# "dep <module> vX ..." when the main package is the wrapper's own, as cert-manager's are).
built_version() { # <binary> <module>
  go version -m "$1" 2>/dev/null | awk -v m="$2" '($1 == "mod" || $1 == "dep") && $2 == m { print $3; exit }'
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
    # GO_BUILD_TAGS: a tool built with only the parts the tests use (e.g. Prometheus's discovery).
    GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 \
      go build -trimpath -tags "${GO_BUILD_TAGS:-}" -ldflags "-s -w $*" -o "$tmp" "$package"
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
  # Without the version ldflags /version reports v0.0.0-master (and a kubelet of v0.0.0 is older
  # than any apiserver's minimum). kube-apiserver serves the envtest harness; the rest make the
  # real node of test/kube/node/ (kubectl drives it from the scripts).
  local cmd
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    ensure_go_tool "$cmd" "$kube_dir" k8s.io/kubernetes "k8s.io/kubernetes/cmd/$cmd" \
      "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  done
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

# CoreDNS: the cluster DNS of the test node (test/kube/node/), packed into an image by up.sh.
ensure_coredns() {
  ensure_go_tool coredns "$here/coredns" github.com/coredns/coredns github.com/coredns/coredns
}

# cert-manager's and the Gateway API's CRDs for the Site controller's tests: their modules, pinned
# in test/tools/crds, into the Go module cache (nothing is built; test/support/kube/external-crds.ts
# reads the YAML from there). Cached: a second run makes no network call.
ensure_crd_modules() {
  if ! command -v go >/dev/null 2>&1; then
    log "no Go on PATH: the CRD modules of test/tools/crds are fetched when a test first needs them"
    return
  fi
  (cd "$here/crds" && go mod download github.com/cert-manager/cert-manager sigs.k8s.io/gateway-api) ||
    die "go mod download in test/tools/crds failed"
  log "cert-manager and Gateway API CRD modules in the Go module cache"
}

# --- What a platform team installs beside Hostplane, for the test node --------------------------
# Traefik (Ingress and the Gateway API) and cert-manager's controller, webhook and HTTP-01 solver
# (no cainjector: up.sh puts the webhook's CA into its configurations). The node packs each binary
# into an image. Pebble, the ACME server, is Debian's package (a node package below).

ensure_traefik() {
  local version
  version="$(pinned_version "$here/traefik" github.com/traefik/traefik/v3)"
  ensure_go_tool traefik "$here/traefik" github.com/traefik/traefik/v3 github.com/traefik/traefik/v3/cmd/traefik \
    "-X github.com/traefik/traefik/v3/pkg/version.Version=$version"
}

ensure_cert_manager() {
  local component version
  for component in controller webhook acmesolver; do
    version="$(pinned_version "$here/cert-manager/$component" github.com/cert-manager/cert-manager)"
    ensure_go_tool "cert-manager-$component" "$here/cert-manager/$component" github.com/cert-manager/cert-manager . \
      "-X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$version"
  done
}

# CRDs the node applies, copied from the module cache at the version test/tools/crds pins (the one
# the Site controller's tests read too) into .cache/tools/crds/<name>.
ensure_crds() { # <name> <module> <directory in the module>
  local out="$tools_dir/crds/$1" version dir
  set -- "$1" "$here/crds" "$2" "$3"
  version="$(pinned_version "$2" "$3")"
  if [ "$(cat "$out/.version" 2>/dev/null)" = "$version" ]; then
    log "$1 CRDs $version present (.cache/tools/crds/$1)"
    return
  fi
  command -v go >/dev/null 2>&1 || die "Go is not installed (needed to download the $1 CRDs)"
  dir="$(cd "$2" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$3@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir/$4" ] || die "no $4 in $3@$version (module cache: ${dir:-none})"
  rm -rf "$out" && mkdir -p "$out"
  find "$dir/$4" -maxdepth 1 -name '*.yaml' ! -name 'kustomization.yaml' ! -name '*vap*' -exec cp {} "$out/" \;
  chmod u+w "$out"/*.yaml
  echo "$version" >"$out/.version"
  log "$1 CRDs $version copied into .cache/tools/crds/$1"
}

ensure_ingress_tools() {
  ensure_traefik
  ensure_cert_manager
  ensure_crds cert-manager github.com/cert-manager/cert-manager deploy/crds
  ensure_crds gateway-api sigs.k8s.io/gateway-api config/crd/standard
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

# apt-get on a fresh machine may find the dpkg lock held (unattended upgrades, cloud-init): wait for it.
apt_install() {
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@"
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
  apt_install postgresql
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
  apt_install chromium
  command -v chromium >/dev/null 2>&1 || die "installed 'chromium' but it is still not on the PATH"
  log "installed Chromium in $((SECONDS - t0))s"
}

# --- The node's Debian packages ---------------------------------------------------------------
# The real node of test/kube/node/ runs pods with Debian bookworm's containerd 1.6.20 and runc
# 1.1.5: containerd 1.6 serves the CRI v1 API kubelet 1.34 requires (v1alpha2 is gone from
# kubelet since 1.26) and runs on cgroup v1 with the cgroupfs driver; kubelet 1.34 only warns
# that the runtime cannot report its cgroup driver (RuntimeConfig, containerd >= 1.7) and uses
# its own setting. CNI plugins (bridge, host-local, portmap, loopback), iptables for kube-proxy,
# conntrack and socat for kubelet/kube-proxy, umoci and gcc to make the pause and CoreDNS images
# (mmdebstrap and umoci also make the Hostplane and Litestream images: deploy/image/build.sh),
# busybox-static for the test image (sh, wget, nslookup, httpd), jq and curl for the scripts, and
# Pebble, Let's Encrypt's test ACME server, with pebble-challtestsrv (its DNS): Debian's 2.4.0 serves
# what cert-manager needs (ACME, HTTP-01 through the ingress, a management endpoint for its roots)
# and installs in seconds, where a build from the Go proxy would add minutes to a cold CI.
# "<package>:<file that proves it is installed>"
node_packages=(
  containerd:/usr/bin/containerd
  containerd:/usr/bin/ctr
  runc:/usr/sbin/runc
  containernetworking-plugins:/usr/lib/cni/bridge
  iptables:/usr/sbin/iptables
  conntrack:/usr/sbin/conntrack
  socat:/usr/bin/socat
  umoci:/usr/bin/umoci
  mmdebstrap:/usr/bin/mmdebstrap
  busybox-static:/bin/busybox
  gcc:/usr/bin/gcc
  libc6-dev:/usr/include/stdio.h
  jq:/usr/bin/jq
  curl:/usr/bin/curl
  pebble:/usr/bin/pebble
  pebble:/usr/bin/pebble-challtestsrv
)

# --- Prometheus and promtool ------------------------------------------------------------------
# From the Go module proxy (test/tools/prometheus/go.mod), not Debian's prometheus package: Debian
# builds it without Kubernetes service discovery, which the real node's Prometheus needs to find
# the pods as the chart's ServiceMonitor describes them. Only that discovery is compiled in (the
# build tags of Prometheus's plugins/), which halves a cold build; promtool comes from the same pin,
# so the rule unit tests of `make test` run the rules as the server evaluates them.

ensure_prometheus() {
  local version
  version="$(pinned_version "$here/prometheus" github.com/prometheus/prometheus)"
  GO_BUILD_TAGS=remove_all_sd,enable_kubernetes_sd ensure_go_tool prometheus "$here/prometheus" \
    github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/prometheus \
    "-X github.com/prometheus/common/version.Version=$version"
  GO_BUILD_TAGS=remove_all_sd,enable_kubernetes_sd ensure_go_tool promtool "$here/prometheus" \
    github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/promtool \
    "-X github.com/prometheus/common/version.Version=$version"
}

ensure_node_packages() {
  local entry missing=() pkg
  for entry in "${node_packages[@]}"; do
    pkg="${entry%%:*}"
    if [ ! -e "${entry#*:}" ] && [[ " ${missing[*]} " != *" $pkg "* ]]; then missing+=("$pkg"); fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "node packages present (containerd $(containerd --version 2>/dev/null | awk '{ print $3 }'), runc $(runc --version 2>/dev/null | awk 'NR == 1 { print $3 }'))"
    return
  fi
  command -v apt-get >/dev/null 2>&1 ||
    die "the test node needs Debian packages that are missing: ${missing[*]} (apt-get is unavailable: install them yourself)"
  local t0=$SECONDS
  log "node packages missing: ${missing[*]}: installing them with apt-get"
  apt_install "${missing[@]}"
  for entry in "${node_packages[@]}"; do
    [ -e "${entry#*:}" ] || die "installed ${entry%%:*} but ${entry#*:} is still missing"
  done
  # Debian starts the containerd service on install; the node runs its own containerd.
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
ensure_prometheus
ensure_coredns
ensure_crd_modules
ensure_ingress_tools
ensure_postgres
ensure_chromium
ensure_node_packages
log "done in $((SECONDS - started))s"
