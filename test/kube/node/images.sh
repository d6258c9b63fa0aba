# Makes the node's own OCI images from root filesystem directories with umoci (no Docker, no
# registry): the pod sandbox (pause), the cluster DNS (CoreDNS) and a busybox image for tests
# (sh, wget, nslookup, httpd). Sourced by up.sh; lib.sh first.
# shellcheck shell=bash

images_cache="$repo/.cache/node-images"

# build_image <ref> <rootfs dir> <out archive> [umoci config flags...]
# An OCI layout with one image tagged with <ref>'s tag, tarred into <out archive> (what
# import-image.sh and `ctr images import` read).
build_image() {
  local ref="$1" rootfs="$2" out="$3"
  shift 3
  local layout tag="${ref##*:}"
  layout="$(mktemp -d "${out%/*}/layout.XXXXXX")"
  umoci init --layout "$layout/oci"
  umoci new --image "$layout/oci:$tag"
  umoci insert --image "$layout/oci:$tag" "$rootfs" /
  umoci config --image "$layout/oci:$tag" --author hostplane-test-node "$@"
  umoci gc --layout "$layout/oci"
  tar -C "$layout/oci" -cf "$out.tmp" .
  mv -f "$out.tmp" "$out"
  rm -rf "$layout"
}

# The content key of an image: the hash of its inputs, so a cached archive is rebuilt when they change.
inputs_key() { # <files...>
  cat "$@" | sha256sum | cut -c1-16
}

# cached_image <name> <key> <builder function>: prints the archive path, building it when missing.
cached_image() {
  local name="$1" key="$2" builder="$3" out
  mkdir -p "$images_cache"
  out="$images_cache/$name-$key.tar"
  if [ ! -s "$out" ]; then
    rm -f "$images_cache/$name-"*.tar
    "$builder" "$out" >&2
  fi
  printf '%s\n' "$out"
}

build_pause() { # <out>
  local root
  root="$(mktemp -d "${1%/*}/pause-root.XXXXXX")"
  gcc -static -Os -s -o "$root/pause" "$node_dir/images/pause.c"
  build_image "$PAUSE_IMAGE" "$root" "$1" --config.entrypoint /pause --config.user 65535:65535
  rm -rf "$root"
}

build_coredns() { # <out>
  local root
  root="$(mktemp -d "${1%/*}/coredns-root.XXXXXX")"
  install -m 0755 "$tools_dir/coredns" "$root/coredns"
  build_image "$COREDNS_IMAGE" "$root" "$1" --config.entrypoint /coredns --config.user 65532:65532
  rm -rf "$root"
}

build_busybox() { # <out>
  local root applet
  root="$(mktemp -d "${1%/*}/busybox-root.XXXXXX")"
  mkdir -p "$root/bin" "$root/tmp" "$root/etc"
  install -m 0755 /bin/busybox "$root/bin/busybox"
  for applet in sh ls cat echo wget nslookup httpd sleep mkdir rm test true false env id hostname \
    nc ps kill date grep sed head tail wc printf touch df mount; do
    ln -s busybox "$root/bin/$applet"
  done
  chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
  build_image "$BUSYBOX_IMAGE" "$root" "$1" --config.cmd /bin/sh --config.env PATH=/bin
  rm -rf "$root"
}

# Prints the three archives' paths (pause, coredns, busybox), building the ones that changed.
node_images() {
  cached_image pause "$(inputs_key "$node_dir/images/pause.c" "$node_dir/images.sh")" build_pause
  cached_image coredns "$(inputs_key "$tools_dir/coredns" "$node_dir/images.sh")" build_coredns
  cached_image busybox "$(inputs_key /bin/busybox "$node_dir/images.sh")" build_busybox
}
