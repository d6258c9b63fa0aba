# The machine: what the node needs from it, one node per machine, ownership of the machine-wide parts.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

# --- What the node needs from this machine: a clear error naming what is missing ----------------
preflight() {
  [ "$(id -u)" -eq 0 ] || die "the node needs root (network interfaces, mounts, cgroups, iptables)"
  local bin missing=()
  for bin in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl coredns \
    traefik cert-manager-controller cert-manager-webhook cert-manager-acmesolver; do
    [ -x "$tools_dir/$bin" ] || missing+=("$bin")
  done
  [ "${#missing[@]}" -eq 0 ] || die "missing in .cache/tools: ${missing[*]} (run: bash test/tools/build.sh)"
  for bin in containerd ctr runc iptables ip6tables conntrack socat umoci gcc ip openssl jq mount umount \
    pebble pebble-challtestsrv curl; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
  done
  for bin in bridge host-local portmap loopback; do
    [ -x "/usr/lib/cni/$bin" ] || missing+=("/usr/lib/cni/$bin (containernetworking-plugins)")
  done
  [ -x /bin/busybox ] || missing+=("/bin/busybox (busybox-static)")
  [ "${#missing[@]}" -eq 0 ] || die "missing tools: ${missing[*]} (run: bash test/tools/build.sh)"

  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
  grep -qw overlay /proc/filesystems || die "the kernel has no overlayfs (containerd's snapshotter needs it)"
  [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || modprobe br_netfilter 2>/dev/null || true
  [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
    die "the kernel has no br_netfilter (/proc/sys/net/bridge missing): kube-proxy cannot see bridged pod traffic"
  local probe="hpnode-probe-$$"
  ip netns add "$probe" 2>/dev/null || die "cannot create a network namespace (ip netns add failed)"
  ip netns delete "$probe"
  probe="hpp$$" # interface names have at most 15 characters
  ip link add "$probe" type bridge 2>/dev/null || die "cannot create a bridge interface (kernel module 'bridge')"
  ip link delete "$probe"
  ip link add "$probe" type veth peer name "$probe-p" 2>/dev/null || die "cannot create a veth pair (kernel module 'veth')"
  ip link delete "$probe"
  iptables -t nat -S >/dev/null 2>&1 || die "iptables cannot use the nat table ($(iptables --version))"
  if [ -d /sys/fs/cgroup/memory ]; then
    [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ] || die "the cgroup v1 memory controller is not mounted at /sys/fs/cgroup/memory"
  elif [ -e /sys/fs/cgroup/cgroup.controllers ]; then
    grep -qw memory /sys/fs/cgroup/cgroup.controllers || die "the cgroup v2 memory controller is not enabled"
  else
    die "no memory cgroup controller (neither /sys/fs/cgroup/memory nor cgroup v2)"
  fi
}

# One node per machine (its addresses are fixed): refuse when another state dir's node is up.
check_free() {
  [ "$(id -u)" -eq 0 ] || die "the node needs root (network interfaces, mounts, cgroups, iptables)"
  local name
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy; do
    running "$name" && die "$name of $state is still running: run down.sh $state first"
  done
  local other
  other="$(cat "$owner_file" 2>/dev/null || true)"
  if ip link show "$NODE_IF" >/dev/null 2>&1 || { [ -n "$other" ] && [ "$other" != "$state" ] && node_processes_in "$other"; }; then
    die "a node is already up on this machine (state dir: ${other:-unknown}): one node per machine, stop it with down.sh ${other:-<its state dir>}"
  fi
}

# Is any process of the node in <state dir> alive?
node_processes_in() { # <state dir>
  local file pid
  for file in "$1"/pids/*.pid; do
    pid="$(cat "$file" 2>/dev/null)" || continue
    [ -n "$pid" ] && pid_alive "$pid" && return 0
  done
  return 1
}

# From here on the machine's node is this state dir's (see lib.sh).
take_ownership() {
  echo "$state" >"$state/node.owner"
  echo "$state" >"$owner_file"
  record_host_paths
}

record_host_paths() {
  local path
  [ -e "$state/host-paths.created" ] && return
  for path in "${host_paths[@]}"; do
    [ -e "$path" ] || printf '%s\n' "$path"
  done >"$state/host-paths.created"
}
