#!/usr/bin/env bash
# down.sh <state dir>: stops the node up.sh started and leaves the machine as it was: the pods'
# containers and sandboxes killed (through containerd), their network namespaces, veths and the
# CNI bridge gone, every mount under <state dir> unmounted, the node interface, the KUBE-*/CNI-*
# iptables chains and kubelet's cgroups removed, the kernel settings put back. Keeps <state dir>
# (logs/ for a post-mortem; up.sh starts afresh in it). Idempotent; safe after a failed up.sh.
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

# SIGTERM, then SIGKILL after <grace> seconds; only the pid in our pid file.
stop() { # <name> [grace seconds]
  local name="$1" grace="${2:-10}" pid deadline
  pid="$(cat "$pids/$name.pid" 2>/dev/null)" || return 0
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    deadline=$((SECONDS + grace))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$pids/$name.pid"
}

# The network namespaces of the pod sandboxes, read from containerd before it stops.
netns_paths=()
stop_containers() {
  running containerd || return 0
  local ids id path
  ids="$(ctr_k8s containers ls -q 2>/dev/null)"
  for id in $ids; do
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
  local proc pid
  for proc in /proc/[0-9]*; do
    pid="${proc#/proc/}"
    if tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "-address $ctrd_sock "; then
      kill -KILL "$pid" 2>/dev/null
    fi
  done
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
  local link
  for link in /var/log/containers/*.log; do
    [ -L "$link" ] && [[ "$(readlink "$link")" == "$state/"* ]] && rm -f "$link"
  done
  rm -f /var/lib/cni/results/"$CNI_NETWORK"-* 2>/dev/null
  return 0
}

mkdir -p "$logs"
# The control loops first, so nothing restarts what is being stopped.
stop kube-proxy
stop kubelet
stop kube-scheduler
stop kube-controller-manager
stop_containers
stop containerd
stop_shims
delete_netns
stop kube-apiserver
stop etcd
unmount_state
delete_links
flush_iptables
remove_cgroups
remove_host_files
restore_sysctls
log "down in $((SECONDS - started))s ($state)"
