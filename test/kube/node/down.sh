#!/usr/bin/env bash
# down.sh <state dir>: stops the node up.sh started and leaves the machine as it was: the pods'
# containers and sandboxes killed (through containerd), their network namespaces, veths and the
# CNI bridge gone, every mount under <state dir> unmounted, the node interface, the KUBE-*/CNI-*
# iptables chains and kubelet's cgroups removed, the kernel settings put back, the node's data
# deleted. Keeps logs/ (for a post-mortem), the certificates and configs of <state dir> (up.sh
# starts afresh in it). Idempotent; safe after a failed up.sh.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ -n "${1:-}" ] || die "usage: down.sh <state dir>"
[ -d "$1" ] || {
  log "no state dir $1: nothing to stop"
  exit 0
}
state="$(cd "$1" && pwd -P)"
state_paths
[ "$(id -u)" -eq 0 ] || die "down.sh needs root"
started=$SECONDS

# SIGTERM to each, then SIGKILL to those still alive after <grace> seconds; only the pids in our
# pid files. They stop in parallel (each takes a second or two).
stop() { # <grace seconds> <name...>
  local grace="$1" name pid deadline live=()
  shift
  for name in "$@"; do
    pid="$(cat "$pids/$name.pid" 2>/dev/null)" || continue
    if [ -n "$pid" ] && pid_alive "$pid"; then
      kill -TERM "$pid" 2>/dev/null
      live+=("$name:$pid")
    fi
  done
  deadline=$((SECONDS + grace))
  for name in "${live[@]}"; do
    pid="${name#*:}"
    while pid_alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    if pid_alive "$pid"; then
      [ "$grace" -lt 5 ] || log "${name%%:*} did not stop within ${grace}s of SIGTERM: killed"
      kill -KILL "$pid" 2>/dev/null
      while pid_alive "$pid"; do sleep 0.1; done
    fi
  done
  for name in "$@"; do rm -f "$pids/$name.pid"; done
}

# The network namespaces of the pod sandboxes, read from containerd before it stops.
netns_paths=()
container_ids=()
stop_containers() {
  running containerd || return 0
  local ids id path
  ids="$(ctr_k8s containers ls -q 2>/dev/null)"
  for id in $ids; do
    container_ids+=("$id")
    path="$(ctr_k8s containers info "$id" 2>/dev/null |
      jq -r '.Spec.linux.namespaces[]? | select(.type == "network") | .path // empty' 2>/dev/null)"
    [[ "$path" == */netns/* ]] && netns_paths+=("$path")
  done
  for id in $ids; do ctr_k8s tasks kill --signal SIGKILL "$id" >/dev/null 2>&1; done
  for id in $ids; do ctr_k8s tasks delete --force "$id" >/dev/null 2>&1; done
  for id in $ids; do ctr_k8s containers delete "$id" >/dev/null 2>&1; done
}

# containerd's shims outlive it; ours are the ones started with our socket as their -address.
stop_shims() {
  local file pid
  for file in $(grep -laF -- "$ctrd_sock" /proc/[0-9]*/cmdline 2>/dev/null); do
    pid="${file#/proc/}"
    pid="${pid%/cmdline}"
    if tr '\0' ' ' <"$file" 2>/dev/null | grep -E -- "^[^ ]*containerd-shim.* -address $ctrd_sock( |$)" >/dev/null; then
      kill -KILL "$pid" 2>/dev/null
    fi
  done
  return 0
}

delete_netns() {
  local path
  for path in "${netns_paths[@]}"; do
    [ -e "$path" ] || continue
    umount "$path" 2>/dev/null || umount -l "$path" 2>/dev/null
    rm -f "$path"
  done
}

unmount_state() {
  local mnt pass
  for pass in 1 2 3; do
    # Deepest first; mountinfo escapes spaces as \040.
    mapfile -t mnts < <(awk -v s="$state/" 'index($5, s) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
    [ "${#mnts[@]}" -eq 0 ] && return 0
    for mnt in "${mnts[@]}"; do
      mnt="$(printf '%b' "$mnt")"
      umount "$mnt" 2>/dev/null || { [ "$pass" -eq 3 ] && umount -l "$mnt" 2>/dev/null; }
    done
  done
  awk -v s="$state/" 'index($5, s) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo &&
    log "warning: mounts left under $state"
  return 0
}

# The node's data (etcd, images, containers, pod volumes): only once nothing is mounted under the
# state dir (rm would otherwise reach through a bind mount). logs/, pod-logs/ (the containers'
# output), certificates and configs stay.
remove_runtime_data() {
  local dir
  if awk -v s="$state/" 'index($5, s) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    log "warning: mounts left under $state: keeping its data"
    return 0
  fi
  for dir in etcd containerd kubelet cni volumes kubectl-cache; do
    rm -rf --one-file-system "${state:?}/$dir"
  done
}

delete_links() {
  local link
  if ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
    for link in $(ip -o link show master "$CNI_BRIDGE" 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1); do
      ip link delete "$link" 2>/dev/null
    done
    ip link delete "$CNI_BRIDGE" 2>/dev/null
  fi
  ip link show "$NODE_IF" >/dev/null 2>&1 && ip link delete "$NODE_IF"
  return 0
}

# Every KUBE-* and CNI-* chain (kube-proxy's, kubelet's, the bridge and portmap plugins'), and the
# rules of the built-in chains jumping to them. The node is the only Kubernetes on this machine.
flush_iptables() {
  local cmd table rule chain
  for cmd in iptables ip6tables; do
    command -v "$cmd" >/dev/null 2>&1 || continue
    for table in filter nat mangle raw; do
      "$cmd" -t "$table" -S >/dev/null 2>&1 || continue
      "$cmd" -t "$table" -S | grep -E -- '-j (KUBE|CNI)-' | grep -vE -- '^-A (KUBE|CNI)-' | sed 's/^-A /-D /' |
        while IFS= read -r rule; do eval "$cmd -t $table $rule" 2>/dev/null; done
      for chain in $("$cmd" -t "$table" -S | awk '$1 == "-N" && $2 ~ /^(KUBE|CNI)-/ { print $2 }'); do
        "$cmd" -t "$table" -F "$chain" 2>/dev/null
      done
      for chain in $("$cmd" -t "$table" -S | awk '$1 == "-N" && $2 ~ /^(KUBE|CNI)-/ { print $2 }'); do
        "$cmd" -t "$table" -X "$chain" 2>/dev/null
      done
    done
  done
}

# kubelet's cgroupfs hierarchy (/kubepods/...) in every controller, leaves first.
remove_cgroups() {
  local dir
  for dir in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$dir" ] || continue
    find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  return 0
}

restore_sysctls() {
  local line
  [ -s "$state/sysctl.saved" ] || return 0
  while IFS= read -r line; do
    [ -n "${line#*=}" ] && sysctl -qw "$line" 2>/dev/null
  done <"$state/sysctl.saved"
  rm -f "$state/sysctl.saved"
}

# What kubelet and the CNI plugins write outside the state dir.
remove_host_files() {
  local link id path
  for link in /var/log/containers/*.log; do
    [ -L "$link" ] && [[ "$(readlink "$link")" == "$state/"* ]] && rm -f "$link"
  done
  # libcni's cache of the results, one file per network and container.
  for id in "${container_ids[@]}"; do
    rm -f /var/lib/cni/results/*-"$id"-* 2>/dev/null
  done
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  [ -s "$state/host-paths.created" ] || return 0
  while IFS= read -r path; do
    case "$path" in
    /run/netns)
      # `ip netns` bind-mounts it onto itself; keep it while other namespaces live in it.
      if [ -d "$path" ] && [ -z "$(ls -A "$path")" ]; then
        umount "$path" 2>/dev/null
        rmdir "$path" 2>/dev/null
      fi
      ;;
    *) [ -e "$path" ] && rm -rf --one-file-system "$path" ;;
    esac
  done < <(tac "$state/host-paths.created")
  rm -f "$state/host-paths.created"
  return 0
}

# Does the machine's node belong to this state dir? Otherwise (an up.sh that found the node taken,
# or a state dir already down) only what is under the state dir is ours to clean.
owner=false
if [ -e "$state/node.owner" ] && { [ ! -e "$owner_file" ] || [ "$(cat "$owner_file")" = "$state" ]; }; then
  owner=true
fi

mkdir -p "$logs"
# The control loops first, so nothing restarts what is being stopped; Pebble and its DNS (host processes).
stop 10 kube-proxy kubelet kube-scheduler kube-controller-manager pebble challtestsrv
stop_containers
stop 10 containerd
stop_shims
delete_netns
# kube-apiserver waits for its watches to end on SIGTERM; its data is thrown away anyway.
stop 2 kube-apiserver etcd
unmount_state
remove_runtime_data
if $owner; then
  delete_links
  flush_iptables
  remove_cgroups
  remove_host_files
  restore_sysctls
  rm -f "$owner_file" "$state/node.owner"
elif [ -s "$owner_file" ]; then
  log "the machine's node is $(cat "$owner_file")'s: left its interfaces, iptables chains and cgroups alone"
fi
log "down in $((SECONDS - started))s ($state)"
