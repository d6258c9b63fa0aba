#!/usr/bin/env bash
# The Hostplane image (and the Litestream image of the chart's init container) built without Docker:
# a Debian root filesystem made from Debian's packages by mmdebstrap, packed with umoci into an OCI
# image layout, exported as an OCI archive that `ctr images import` (containerd) reads.
#
#   deploy/image/build.sh [hostplane|litestream|all]     (default all; `make image-oci`)
#
# Hostplane: the runtime stage of deploy/Dockerfile, from the values in deploy/image/recipe.json
# (test/unit/deploy/image-recipe.test.ts fails when the two drift). Three layers, cheapest last:
#   1. Debian (mmdebstrap, variant and packages from the recipe) + the pinned Node binary
#      (scripts/node.sh) + the user 10001 + /app: cached, keyed on the recipe, mmdebstrap's version
#      and the Node version;
#   2. production node_modules (npm ci --omit=dev --ignore-scripts): cached, keyed on layer 1 and
#      package-lock.json;
#   3. dist/, native/build/, package.json: rebuilt every time (a code change rebuilds only this).
# Litestream: Debian with ca-certificates (the init container runs `cp` on the binary and the CA
# bundle) + .cache/tools/litestream (test/tools/build.sh builds it).
#
# Needs root (mmdebstrap's root mode, and the layers keep the root filesystem's owners), mmdebstrap
# and umoci (Debian packages; test/tools/build.sh installs them), the Debian mirror, the npm
# registry, and `make build` done (dist/, native/build/). Output in .cache/images/:
#   layout/                    the cache: every layer and image, by content (tags base-*, deps-*, …)
#   <repository>-<tag>/         the image's own OCI layout       <repository>-<tag>.tar  its archive
# IMAGE_REPOSITORY (hostplane) and IMAGE_TAG (dev) name the Hostplane image; the Litestream image
# is <recipe litestream.repository>:<version of .cache/tools/litestream>.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
images="$repo/.cache/images"
layout="$images/layout"
work="$images/work"
repository="${IMAGE_REPOSITORY:-hostplane}"
tag="${IMAGE_TAG:-dev}"
what="${1:-all}"
# Bump when a layer's steps below change in a way the keys do not see.
BASE_RECIPE=1
DEPS_RECIPE=1
started=$SECONDS

log() { printf '[image] %s\n' "$*"; }
die() {
  printf '[image] error: %s\n' "$*" >&2
  exit 1
}

case "$what" in hostplane | litestream | all) ;; *) die "usage: $0 [hostplane|litestream|all]" ;; esac
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap --mode=root; the layers keep the root filesystem's owners)"
for tool in mmdebstrap umoci tar sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: apt-get install mmdebstrap umoci (or: bash test/tools/build.sh)"
done
eval "$(bash scripts/node.sh env)"
node_bin="$(command -v node)"
node_version="$(node --version)"

# recipe <dotted key>: a value of recipe.json (arrays one item a line, objects as JSON).
recipe() {
  node -e '
    const value = process.argv[2].split(".").reduce((o, k) => o[k], require(process.argv[1]));
    if (value === undefined) process.exit(1);
    console.log(Array.isArray(value) ? value.join("\n") : typeof value === "object" ? JSON.stringify(value) : value);
  ' "$here/recipe.json" "$1" || die "recipe.json has no $1"
}
key() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)"

mkdir -p "$images" "$work"
# Two builds at once (make image-oci beside a test) would race on the layout.
exec 9>"$images/.lock"
command -v flock >/dev/null 2>&1 && flock 9
[ -f "$layout/index.json" ] || umoci init --layout "$layout"

# grep reads the whole list (with -q, umoci could die of SIGPIPE and pipefail report a miss).
has_tag() { umoci ls --layout "$layout" | grep -xF "$1" >/dev/null; }

# pack <out.tar> <dir> [tar options...]: the top-level entries of <dir> as a reproducible layer.
pack() {
  local out="$1" dir="$2"
  shift 2
  local entries
  mapfile -t entries < <(cd "$dir" && ls -A)
  tar --create --file "$out" --directory "$dir" --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$epoch" --numeric-owner "$@" "${entries[@]}"
}

# add_layer <from tag or ""> <new tag> <layer.tar> <what made it>: <from> plus one layer.
add_layer() {
  local from="$1" to="$2" tarball="$3" made_by="$4"
  umoci rm --image "$layout:$to.wip" 2>/dev/null || true
  if [ -n "$from" ]; then
    umoci tag --image "$layout:$from" "$to.wip"
  else
    umoci new --image "$layout:$to.wip"
  fi
  umoci raw add-layer --image "$layout:$to.wip" --history.created "$created" \
    --history.created_by "$made_by" "$tarball"
  umoci tag --image "$layout:$to.wip" "$to"
  umoci rm --image "$layout:$to.wip"
  rm -f "$tarball"
}

# debian_rootfs <dir> <extra packages, comma-separated>: the recipe's Debian, no docs or locales.
debian_rootfs() {
  local dir="$1" include="$2" sources
  mapfile -t sources < <(recipe debian.sources)
  rm -rf "$dir"
  # merged-usr: the /usr merge done by the hook, so the usrmerge package (and Perl) stay out.
  mmdebstrap --quiet --mode=root --format=directory --variant="$(recipe debian.variant)" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr --include="$include" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    "$(recipe debian.suite)" "$dir" "${sources[@]}" >"$work/mmdebstrap.log" 2>&1 || {
    tail -n 40 "$work/mmdebstrap.log" >&2
    die "mmdebstrap failed (log above)"
  }
  # Left by dpkg and debconf; nothing at run time reads them.
  rm -f "$dir"/var/cache/debconf/*-old "$dir"/var/lib/dpkg/*-old "$dir"/var/log/*.log "$dir"/etc/machine-id
  chmod 1777 "$dir/tmp"
}

# add_user <rootfs>: the recipe's non-root user and group (what the Dockerfile's useradd writes).
add_user() {
  local dir="$1" uid gid name
  uid="$(recipe user.uid)" gid="$(recipe user.gid)" name="$(recipe user.name)"
  printf '%s:x:%s:\n' "$name" "$gid" >>"$dir/etc/group"
  printf '%s:x:%s:%s::%s:%s\n' "$name" "$uid" "$gid" "$(recipe user.home)" "$(recipe user.shell)" >>"$dir/etc/passwd"
}

ensure_base() { # prints the tag of layer 1
  local include k tag_name rootfs t0=$SECONDS
  include="$(recipe debian.include | paste -sd,)"
  k="$(key "$BASE_RECIPE" "$(mmdebstrap --version)" "$(recipe debian)" "$include" "$node_version" \
    "$(sha256sum "$node_bin" | cut -d' ' -f1)" "$(recipe node.binary)" "$(recipe user)" "$(recipe workdir)")"
  tag_name="base-$k"
  if has_tag "$tag_name"; then
    log "layer 1 (Debian $(recipe debian.suite) + Node $node_version) cached: $tag_name" >&2
    echo "$tag_name"
    return
  fi
  log "layer 1: mmdebstrap $(recipe debian.suite) ($(recipe debian.variant) + $include) + Node $node_version" >&2
  rootfs="$work/rootfs-hostplane"
  debian_rootfs "$rootfs" "$include"
  install -D -m 0755 "$node_bin" "$rootfs$(recipe node.binary)"
  add_user "$rootfs"
  install -d -m 0755 "$rootfs$(recipe workdir)"
  pack "$work/base.tar" "$rootfs"
  rm -rf "$rootfs"
  add_layer "" "$tag_name" "$work/base.tar" "mmdebstrap $(recipe debian.suite) + node $node_version" >&2
  log "layer 1 built in $((SECONDS - t0))s" >&2
  echo "$tag_name"
}

ensure_deps() { # <base tag>; prints the tag of layers 1+2
  local base="$1" k tag_name stage app t0=$SECONDS
  k="$(key "$DEPS_RECIPE" "$base" "$(sha256sum package-lock.json | cut -d' ' -f1)" "$(recipe layers.deps)")"
  tag_name="deps-$k"
  if has_tag "$tag_name"; then
    log "layer 2 (production node_modules) cached: $tag_name" >&2
    echo "$tag_name"
    return
  fi
  log "layer 2: npm ci --omit=dev --ignore-scripts" >&2
  stage="$work/deps"
  app="$stage$(recipe workdir)"
  rm -rf "$stage"
  mkdir -p "$app"
  cp package.json package-lock.json "$app/"
  # No install scripts, as in the Dockerfile: the engine loads native/build's better-sqlite3, and
  # argon2 loads the prebuilt binary it ships.
  (cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  rm -f "$app/package.json" "$app/package-lock.json"
  pack "$work/deps.tar" "$stage" --owner=0 --group=0
  rm -rf "$stage"
  add_layer "$base" "$tag_name" "$work/deps.tar" "npm ci --omit=dev --ignore-scripts" >&2
  log "layer 2 built in $((SECONDS - t0))s" >&2
  echo "$tag_name"
}

# export_image <cache tag> <name> <full reference>: .cache/images/<name>/ and <name>.tar.
export_image() {
  local from="$1" name="$2" reference="$3" out digest compressed uncompressed
  out="$(node "$here/oci-export.mjs" "$layout" "$from" "$images/$name" "$reference")"
  read -r digest compressed uncompressed <<<"$out"
  rm -f "$images/$name.tar.tmp"
  tar --create --file "$images/$name.tar.tmp" --directory "$images/$name" --sort=name \
    --mtime="@$epoch" --owner=0 --group=0 --numeric-owner oci-layout index.json blobs
  mv -f "$images/$name.tar.tmp" "$images/$name.tar"
  log "$reference ($digest): .cache/images/$name.tar, $((compressed / 1048576)) MiB compressed, $((uncompressed / 1048576)) MiB uncompressed"
}

build_hostplane() {
  local t0=$SECONDS base deps stage app item final env_args=() arg
  [ -f dist/src/cli/main.js ] || die "dist/ is missing: run make build first"
  [ -f native/build/better_sqlite3.node ] && [ -f native/build/sqlite-guard.so ] ||
    die "native/build/ is incomplete: run make install first"
  base="$(ensure_base)"
  deps="$(ensure_deps "$base")"

  stage="$work/app"
  app="$stage$(recipe workdir)"
  rm -rf "$stage"
  mkdir -p "$app"
  while read -r item; do
    mkdir -p "$app/$(dirname "$item")"
    cp -RL "$item" "$app/$item" # -L: native/build may be a symlink (worktrees)
  done < <(recipe layers.app)
  chmod -R u+rwX,go+rX,go-w "$app"
  pack "$work/app.tar" "$stage" --owner=0 --group=0
  rm -rf "$stage"
  final="$repository-$tag"
  add_layer "$deps" "$final" "$work/app.tar" "dist native/build package.json"

  env_args+=(--config.env "PATH=$(recipe path)")
  while read -r arg; do env_args+=(--config.env "$arg"); done < <(node -e '
    for (const [k, v] of Object.entries(require(process.argv[1]).env)) console.log(`${k}=${v}`);
  ' "$here/recipe.json")
  while read -r arg; do env_args+=(--config.entrypoint "$arg"); done < <(recipe entrypoint)
  while read -r arg; do env_args+=(--config.cmd "$arg"); done < <(recipe cmd)
  while read -r arg; do env_args+=(--config.exposedports "$arg"); done < <(recipe expose)
  umoci config --image "$layout:$final" --created "$created" --history.created "$created" \
    --config.user "$(recipe user.uid):$(recipe user.gid)" --config.workingdir "$(recipe workdir)" \
    --config.label "org.opencontainers.image.version=$(node -p 'require("./package.json").version')" \
    --config.label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    "${env_args[@]}"
  export_image "$final" "$final" "docker.io/library/$repository:$tag"
  log "hostplane image done in $((SECONDS - t0))s"
}

build_litestream() {
  local t0=$SECONDS bin version include k base rootfs stage name
  bin="$repo/.cache/tools/litestream"
  [ -x "$bin" ] || die ".cache/tools/litestream is missing: run bash test/tools/build.sh"
  version="$("$bin" version)"
  version="${version#v}"
  include="$(recipe litestream.include | paste -sd,)"
  k="$(key "$BASE_RECIPE" "$(mmdebstrap --version)" "$(recipe debian)" "$include" "$(recipe user)")"
  base="litestream-base-$k"
  if has_tag "$base"; then
    log "Litestream image layer 1 (Debian + $include) cached: $base"
  else
    log "Litestream image layer 1: mmdebstrap $(recipe debian.suite) ($(recipe debian.variant) + $include)"
    rootfs="$work/rootfs-litestream"
    debian_rootfs "$rootfs" "$include"
    [ -s "$rootfs$(recipe litestream.caBundle)" ] || die "no CA bundle at $(recipe litestream.caBundle) in the rootfs"
    add_user "$rootfs"
    pack "$work/litestream-base.tar" "$rootfs"
    rm -rf "$rootfs"
    add_layer "" "$base" "$work/litestream-base.tar" "mmdebstrap $(recipe debian.suite) + $include"
  fi
  stage="$work/litestream"
  rm -rf "$stage"
  install -D -m 0755 "$bin" "$stage$(recipe litestream.binary)"
  pack "$work/litestream.tar" "$stage" --owner=0 --group=0
  rm -rf "$stage"
  name="$(recipe litestream.repository)-$version"
  add_layer "$base" "$name" "$work/litestream.tar" "litestream $version"
  umoci config --image "$layout:$name" --created "$created" --history.created "$created" \
    --config.user "$(recipe user.uid):$(recipe user.gid)" --config.workingdir / \
    --config.env "PATH=$(recipe path)" --config.entrypoint "$(recipe litestream.binary)"
  export_image "$name" "$name" "docker.io/library/$(recipe litestream.repository):$version"
  log "litestream image done in $((SECONDS - t0))s"
}

case "$what" in
  hostplane) build_hostplane ;;
  litestream) build_litestream ;;
  all) build_hostplane && build_litestream ;;
esac
# Blobs no tag refers to any more (older app layers, superseded bases).
umoci gc --layout "$layout"
rm -rf "$work"
log "done in $((SECONDS - started))s"
