#!/usr/bin/env bash
# import-image.sh <state dir> <oci archive> [<image ref>]: puts an image into the node's
# containerd (namespace k8s.io, unpacked for overlayfs) under <image ref>, so pods using that ref
# with imagePullPolicy Never or IfNotPresent run it. <oci archive> is a tar of an OCI image layout
# (umoci's layout directory, tarred) holding one image; its tag may differ from <image ref>'s (the
# image is renamed). Without <image ref> the archive's own ref name is kept (it must then be a
# full reference, or a tag of <repository> given as IMPORT_BASE_NAME).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ "$#" -ge 2 ] || die "usage: import-image.sh <state dir> <oci archive> [<image ref>]"
state="$(resolve_state_dir "$1")"
state_paths
archive="$2"
ref="${3:-}"
[ -s "$archive" ] || die "no OCI archive at $archive"
running containerd || die "the node of $state is not up (containerd is not running)"

# The archive's own name for its image: the first manifest's org.opencontainers.image.ref.name.
own="$(tar -xOf "$archive" ./index.json 2>/dev/null || tar -xOf "$archive" index.json)" ||
  die "$archive is not an OCI image layout archive (no index.json)"
own="$(printf '%s' "$own" | jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"] // empty')"
[ -n "$own" ] || die "$archive names no image (index.json has no org.opencontainers.image.ref.name)"

# ctr turns a bare tag into <base name>:<tag>; a full reference ("repo:tag") is kept as it is.
if [[ "$own" == *[:/]* ]]; then
  imported="$own"
  ctr_k8s images import "$archive" >&2
else
  base="${ref%:*}"
  [ -n "$ref" ] || base="${IMPORT_BASE_NAME:?the archive names only the tag $own: give an <image ref>}"
  imported="$base:$own"
  ctr_k8s images import --base-name "$base" "$archive" >&2
fi
ctr_k8s images ls -q | grep -xF "$imported" >/dev/null || die "ctr imported nothing named $imported from $archive"

if [ -n "$ref" ] && [ "$ref" != "$imported" ]; then
  ctr_k8s images tag --force "$imported" "$ref" >/dev/null
  ctr_k8s images rm "$imported" >/dev/null
fi
printf '%s\n' "${ref:-$imported}"
