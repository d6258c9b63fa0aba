# Shared by up.sh, down.sh and import-image.sh: the node's fixed addresses, the paths inside a
# state directory, and small helpers. Sourced, not run.
# shellcheck shell=bash

node_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$node_dir/../../.." && pwd)"
tools_dir="$repo/.cache/tools"

# One node per machine: the addresses are private ones that only exist on this machine's own
# interfaces (hpnode0, a bridge without ports; hpcni0, the pods' bridge), so nothing is reachable from outside.
NODE_NAME=hpnode
NODE_IF=hpnode0
NODE_IP=10.200.0.1
NODE_PREFIX=24
CNI_BRIDGE=hpcni0
CNI_NETWORK=hpnode
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
API_SERVICE_IP=10.96.0.1
DNS_SERVICE_IP=10.96.0.10
CLUSTER_DOMAIN=cluster.local
API_PORT=6443
STORAGE_CLASS=hostpath
# Pre-created hostPath PersistentVolumes (Retain: a released one is not reused while the node lives).
PV_COUNT="${PV_COUNT:-24}"
PV_SIZE=10Gi
PAUSE_IMAGE=hostplane.test/pause:1
COREDNS_IMAGE=hostplane.test/coredns:1
BUSYBOX_IMAGE=hostplane.test/busybox:1
# The add-ons a platform team installs beside Hostplane (up/ingress.sh, up/cert-manager.sh, up/acme.sh):
# Traefik (Ingress and Gateway API) on the node's address, cert-manager, and Pebble (a test ACME
# server) with pebble-challtestsrv (its DNS: every name is the node's address, TXT records set
# through its management API; CoreDNS forwards ACME_ZONE to it).
INGRESS_NAMESPACE=traefik
INGRESS_CLASS=traefik
GATEWAY_CLASS=traefik
TRAEFIK_IMAGE=hostplane.test/traefik:1
CERT_MANAGER_NAMESPACE=cert-manager
CERT_MANAGER_CONTROLLER_IMAGE=hostplane.test/cert-manager-controller:1
CERT_MANAGER_WEBHOOK_IMAGE=hostplane.test/cert-manager-webhook:1
CERT_MANAGER_ACMESOLVER_IMAGE=hostplane.test/cert-manager-acmesolver:1
CLUSTER_ISSUER=pebble
PEBBLE_PORT=14000
PEBBLE_MANAGEMENT_PORT=15000
CHALLTESTSRV_DNS_PORT=8053
CHALLTESTSRV_MANAGEMENT_PORT=8055
ACME_ZONE=customer.test
ACME_DNS="$NODE_IP:$CHALLTESTSRV_DNS_PORT"

log() { printf '[node %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
  printf '[node] error: %s\n' "$*" >&2
  exit 1
}

# The state directory, absolute and without symlinks (kubelet refuses a --root-dir with one).
resolve_state_dir() { # <state dir>
  [ -n "${1:-}" ] || die "usage: $(basename "$0") <state dir>"
  mkdir -p "$1"
  (cd "$1" && pwd -P)
}

# The paths inside a state directory ($state must be set).
state_paths() {
  certs="$state/certs"
  logs="$state/logs"
  pids="$state/pids"
  ctrd="$state/containerd"
  ctrd_sock="$ctrd/containerd.sock"
  kubelet_root="$state/kubelet"
}

ctr_k8s() { ctr --address "$ctrd_sock" --namespace k8s.io "$@"; }

kubectl_admin() { "$tools_dir/kubectl" --kubeconfig "$state/kubeconfig" --cache-dir "$state/kubectl-cache" "$@"; }

# Paths outside the state dir that kubelet, containerd, its shims, the CNI plugins and `ip netns`
# create whatever they are told (hard-coded in them). up.sh records which did not exist before it
# ran (host-paths.created); down.sh removes those.
# Which state dir the node on this machine belongs to (written by up.sh, removed by down.sh): the
# machine-wide parts (interfaces, iptables chains, cgroups, kernel settings, host paths) are only
# torn down by down.sh of that state dir, never by one whose up.sh found the node taken.
owner_file=/run/hostplane-node.state

host_paths=(/run/netns /run/containerd /run/runc /var/lib/cni /var/log/containers /var/lib/kubelet)

# Waits up to <seconds> for a command to succeed; prints <what> on the way.
wait_for() { # <seconds> <what> <command...>
  local seconds="$1" what="$2" deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      die "timed out after ${seconds}s waiting for $what (logs in $logs/)"
    fi
    sleep 0.5
  done
}

# Is <pid> alive? A zombie is not: our daemons are children of PID 1 once up.sh has exited, and
# it may take a while to reap them.
pid_alive() { # <pid>
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat%% *}" != Z ]
}

# Is the process of <name>'s pid file alive?
running() { # <name>
  local pid
  pid="$(cat "$pids/$1.pid" 2>/dev/null)" || return 1
  [ -n "$pid" ] && pid_alive "$pid"
}
