#!/usr/bin/env bash
# up.sh <state dir>: a real single-node Kubernetes on this machine, for the tests and for people.
#
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd (Debian's 1.6, with
# runc, cgroupfs), kubelet, a CNI bridge (hpcni0, pods in 10.244.0.0/24, masqueraded), kube-proxy
# (iptables) and CoreDNS (10.96.0.10), all under <state dir> (certificates, data, logs/, pids/).
# The node's address is 10.200.0.1 on its own interface, hpnode0 (a bridge without ports): the API server, the kubelet and
# host services the pods should reach listen there; nothing listens on a public address.
# Writes <state dir>/kubeconfig (cluster-admin) and <state dir>/node.env, and returns once the node
# is Ready and CoreDNS answers. Needs root and `bash test/tools/build.sh`. Stop with down.sh.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=images.sh
source "$node_dir/images.sh"

state="$(resolve_state_dir "${1:-}")"
state_paths
started=$SECONDS
trap 'rc=$?; [ "$rc" -eq 0 ] || printf "[node] up failed after %ss: logs in %s/, clean up with down.sh %s\n" "$((SECONDS - started))" "$logs" "$state" >&2' EXIT

# --- What the node needs from this machine: a clear error naming what is missing ----------------
preflight() {
  [ "$(id -u)" -eq 0 ] || die "the node needs root (network interfaces, mounts, cgroups, iptables)"
  local bin missing=()
  for bin in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl coredns; do
    [ -x "$tools_dir/$bin" ] || missing+=("$bin")
  done
  [ "${#missing[@]}" -eq 0 ] || die "missing in .cache/tools: ${missing[*]} (run: bash test/tools/build.sh)"
  for bin in containerd ctr runc iptables ip6tables conntrack socat umoci gcc ip openssl jq mount umount; do
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

# --- Kernel settings: what kubelet and kube-proxy change, saved for down.sh to put back ---------
sysctls=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet)
save_sysctls() {
  local key
  [ -s "$state/sysctl.saved" ] && return
  for key in "${sysctls[@]}"; do
    printf '%s=%s\n' "$key" "$(sysctl -n "$key" 2>/dev/null)"
  done >"$state/sysctl.saved.tmp"
  mv "$state/sysctl.saved.tmp" "$state/sysctl.saved"
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
}

network() {
  # A bridge without ports (this kernel may have no 'dummy' module): its address is local all the same.
  ip link add "$NODE_IF" type bridge
  ip addr add "$NODE_IP/$NODE_PREFIX" dev "$NODE_IF"
  ip link set "$NODE_IF" up
  # The host reaches ClusterIPs too (kube-proxy's OUTPUT rules rewrite them to pod addresses).
  ip route add "$SERVICE_CIDR" dev "$NODE_IF" src "$NODE_IP"
}

# --- Certificates: one CA signs every serving and client certificate -------------------------
cert() { # <name> <subject> <extendedKeyUsage> [subjectAltName]
  local name="$1" subject="$2" usage="$3" san="${4:-}" ext
  ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$usage"
  [ -z "$san" ] || ext="$ext
subjectAltName=$san"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subject" \
    -keyout "$certs/$name.key" -out "$certs/$name.csr" 2>/dev/null
  openssl x509 -req -in "$certs/$name.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 3650 -extfile <(printf '%s\n' "$ext") \
    -out "$certs/$name.crt" 2>/dev/null
  rm -f "$certs/$name.csr"
}

certificates() {
  [ -s "$certs/done" ] && return
  rm -rf "$certs" && mkdir -p "$certs" && chmod 700 "$certs"
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj "/CN=hostplane-test-node-ca" -keyout "$certs/ca.key" -out "$certs/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  cert apiserver "/CN=kube-apiserver" serverAuth \
    "IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  cert admin "/O=system:masters/CN=hostplane-test-admin" clientAuth
  cert controller-manager "/CN=system:kube-controller-manager" clientAuth
  cert scheduler "/CN=system:kube-scheduler" clientAuth
  cert kube-proxy "/CN=system:kube-proxy" clientAuth
  cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth
  cert kubelet-serving "/CN=$NODE_NAME" serverAuth "IP:$NODE_IP,DNS:$NODE_NAME"
  # Service-account tokens: kube-apiserver signs them, kube-controller-manager too (legacy ones).
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$certs/sa.key" 2>/dev/null
  openssl pkey -in "$certs/sa.key" -pubout -out "$certs/sa.pub"
  echo ok >"$certs/done"
}

kubeconfig() { # <file> <cert name>
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $NODE_NAME
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority-data: $(base64 -w0 "$certs/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$certs/$2.crt")
    client-key-data: $(base64 -w0 "$certs/$2.key")
contexts:
- name: $NODE_NAME
  context: {cluster: $NODE_NAME, user: $2}
current-context: $NODE_NAME
EOF
  chmod 600 "$1"
}

# --- Processes: each in its own session, its output in logs/<name>.log, its pid in pids/ ---------
start() { # <name> <command...>
  local name="$1"
  shift
  setsid "$@" </dev/null >"$logs/$name.log" 2>&1 &
  echo $! >"$pids/$name.pid"
}

# Fails (with the tail of its log) when <name> has exited.
alive() { # <name>
  running "$1" && return 0
  tail -n 30 "$logs/$1.log" >&2 || true
  die "$1 exited (log: $logs/$1.log)"
}

wait_up() { # <name> <seconds> <what> <command...>
  local name="$1" seconds="$2" what="$3" deadline
  shift 3
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    alive "$name"
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${seconds}s waiting for $what (log: $logs/$name.log)"
    sleep 0.3
  done
}

curl_admin() { curl -fsS --max-time 3 --cacert "$certs/ca.crt" --cert "$certs/admin.crt" --key "$certs/admin.key" "$@"; }

start_etcd() {
  start etcd "$tools_dir/etcd" --name "$NODE_NAME" --data-dir "$state/etcd" \
    --listen-client-urls "http://$NODE_IP:2379" --advertise-client-urls "http://$NODE_IP:2379" \
    --listen-peer-urls "http://$NODE_IP:2380" --initial-advertise-peer-urls "http://$NODE_IP:2380" \
    --initial-cluster "$NODE_NAME=http://$NODE_IP:2380" --listen-metrics-urls "" \
    --unsafe-no-fsync --log-level warn
  wait_up etcd 30 "etcd" curl -fsS --max-time 2 "http://$NODE_IP:2379/health"
}

start_apiserver() {
  start kube-apiserver "$tools_dir/kube-apiserver" \
    --advertise-address="$NODE_IP" --bind-address="$NODE_IP" --secure-port="$API_PORT" \
    --etcd-servers="http://$NODE_IP:2379" \
    --tls-cert-file="$certs/apiserver.crt" --tls-private-key-file="$certs/apiserver.key" \
    --client-ca-file="$certs/ca.crt" \
    --kubelet-client-certificate="$certs/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$certs/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$certs/ca.crt" --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
    --service-account-key-file="$certs/sa.pub" --service-account-signing-key-file="$certs/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true --profiling=false --v=1
  wait_up kube-apiserver 90 "kube-apiserver /readyz" curl_admin "https://$NODE_IP:$API_PORT/readyz"
}

start_controllers() {
  kubeconfig "$state/controller-manager.kubeconfig" controller-manager
  kubeconfig "$state/scheduler.kubeconfig" scheduler
  local kc="$state/controller-manager.kubeconfig"
  # Every default controller (garbage collector, service-account tokens, Jobs, StatefulSets, the
  # PersistentVolume binder, ...); the CA also signs kubelet CSRs.
  start kube-controller-manager "$tools_dir/kube-controller-manager" \
    --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address="$NODE_IP" --leader-elect=false --controllers='*' \
    --use-service-account-credentials=true \
    --service-account-private-key-file="$certs/sa.key" --root-ca-file="$certs/ca.crt" \
    --cluster-signing-cert-file="$certs/ca.crt" --cluster-signing-key-file="$certs/ca.key" \
    --cluster-name="$NODE_NAME" --service-cluster-ip-range="$SERVICE_CIDR" \
    --flex-volume-plugin-dir="$state/volume-plugins" --v=1
  kc="$state/scheduler.kubeconfig"
  start kube-scheduler "$tools_dir/kube-scheduler" \
    --kubeconfig="$kc" --authentication-kubeconfig="$kc" --authorization-kubeconfig="$kc" \
    --bind-address="$NODE_IP" --leader-elect=false --v=1
}

# Debian's containerd 1.6.20 + runc 1.1.5: CRI v1 (kubelet 1.34 speaks nothing else), cgroupfs.
# Its root, state, socket, runc state and CNI files all live under the state dir.
start_containerd() {
  mkdir -p "$ctrd" "$state/cni/net.d" "$state/cni/ipam"
  cat >"$state/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_CIDR" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$state/cni/ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true }, "snat": true }
  ]
}
EOF
  cat >"$ctrd/config.toml" <<EOF
version = 2
root = "$ctrd/root"
state = "$ctrd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$ctrd_sock"
[ttrpc]
  address = "$ctrd_sock.ttrpc"
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "$ctrd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  disable_apparmor = true
  # Never lower a container's oom_score_adj below containerd's own: kubelet asks -998 for sandboxes
  # and -997 for Guaranteed pods, which needs CAP_SYS_RESOURCE (a CI sandbox may not grant it:
  # runc then fails with "can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$ctrd/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
    max_conf_num = 1
EOF
  start containerd containerd --config "$ctrd/config.toml" --log-level warn
  wait_up containerd 30 "containerd" ctr --address "$ctrd_sock" version
}

import_node_images() {
  local archives refs=("$PAUSE_IMAGE" "$COREDNS_IMAGE" "$BUSYBOX_IMAGE") i
  mapfile -t archives < <(node_images)
  for i in 0 1 2; do
    "$node_dir/import-image.sh" "$state" "${archives[$i]}" "${refs[$i]}" >/dev/null
  done
}

start_kubelet() {
  kubeconfig "$state/kubelet.kubeconfig" kubelet
  mkdir -p "$kubelet_root" "$state/pod-logs"
  cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: $NODE_IP
healthzPort: 10248
tlsCertFile: $certs/kubelet-serving.crt
tlsPrivateKeyFile: $certs/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $certs/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$ctrd_sock
imageServiceEndpoint: unix://$ctrd_sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$DNS_SERVICE_IP]
clusterDomain: $CLUSTER_DOMAIN
resolvConf: /etc/resolv.conf
podLogsDir: $state/pod-logs
serializeImagePulls: false
# The node's images are imported, never pulled: keep them whatever the disk usage.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
volumePluginDir: $state/volume-plugins
syncFrequency: 10s
fileCheckFrequency: 10s
EOF
  start kubelet "$tools_dir/kubelet" --config="$state/kubelet.yaml" \
    --kubeconfig="$state/kubelet.kubeconfig" --root-dir="$kubelet_root" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
}

start_kube_proxy() {
  kubeconfig "$state/kube-proxy.kubeconfig" kube-proxy
  cat >"$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $state/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: $NODE_IP:10256
metricsBindAddress: $NODE_IP:10249
nodePortAddresses: ["$NODE_IP/32"]
# Leave the host's conntrack table settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {minSyncPeriod: 1s, syncPeriod: 30s}
# Keep the default score (lowering it needs CAP_SYS_RESOURCE).
oomScoreAdj: 0
EOF
  start kube-proxy "$tools_dir/kube-proxy" --config="$state/kube-proxy.yaml" --v=1
}

node_ready() {
  [ "$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# --- Cluster add-ons: CoreDNS and the storage ---------------------------------------------------
apply_addons() {
  sed -e "s|\${COREDNS_IMAGE}|$COREDNS_IMAGE|g" -e "s|\${DNS_SERVICE_IP}|$DNS_SERVICE_IP|g" \
    -e "s|\${CLUSTER_DOMAIN}|$CLUSTER_DOMAIN|g" "$node_dir/manifests/coredns.yaml" |
    kubectl_admin apply -f - >/dev/null
  local i pvs="$state/persistent-volumes.yaml"
  printf '' >"$pvs"
  for i in $(seq -w 1 "$PV_COUNT"); do
    # World-writable, as local-path-provisioner makes its volumes: the kubelet applies no fsGroup to
    # hostPath volumes, and the chart's pods run as UID 10001.
    mkdir -p -m 0777 "$state/volumes/pv-$i"
    sed -e "s|\${NAME}|hostpath-pv-$i|g" -e "s|\${HOST_PATH}|$state/volumes/pv-$i|g" -e "s|\${SIZE}|$PV_SIZE|g" \
      -e "s|\${STORAGE_CLASS}|$STORAGE_CLASS|g" -e "s|\${NODE_NAME}|$NODE_NAME|g" \
      "$node_dir/manifests/persistent-volume.yaml" >>"$pvs"
  done
  sed -e "s|\${STORAGE_CLASS}|$STORAGE_CLASS|g" "$node_dir/manifests/storage-class.yaml" |
    kubectl_admin apply -f - >/dev/null
  kubectl_admin apply -f "$pvs" >/dev/null
}

node_bin() {
  local bin
  for bin in "$repo"/.cache/node/*/bin/node "$(command -v node 2>/dev/null)"; do
    [ -x "$bin" ] && printf '%s\n' "$bin" && return
  done
  die "node (Node.js) not found: the DNS check uses its resolver"
}

# CoreDNS answers for the API server's Service, asked from the host through kube-proxy.
dns_answers() {
  "$(node_bin)" -e '
    const { Resolver } = require("node:dns").promises;
    const r = new Resolver({ timeout: 1000, tries: 1 });
    r.setServers([process.argv[1]]);
    r.resolve4(process.argv[2]).then((a) => process.exit(a.includes(process.argv[3]) ? 0 : 1), () => process.exit(1));
  ' "$DNS_SERVICE_IP" "kubernetes.default.svc.$CLUSTER_DOMAIN" "$API_SERVICE_IP"
}

write_env() {
  cat >"$state/node.env.tmp" <<EOF
# Written by test/kube/node/up.sh; shell syntax (source it) and KEY=value lines.
KUBECONFIG=$state/kubeconfig
KUBECTL=$tools_dir/kubectl
# kubectl's discovery cache (instead of ~/.kube/cache).
KUBECACHEDIR=$state/kubectl-cache
NODE_NAME=$NODE_NAME
NODE_IP=$NODE_IP
# Pods reach services running on the host (PostgreSQL, MinIO, ... listening on it) at this address.
HOST_IP=$NODE_IP
API_SERVER=https://$NODE_IP:$API_PORT
CONTAINERD_ADDRESS=$ctrd_sock
POD_CIDR=$POD_CIDR
SERVICE_CIDR=$SERVICE_CIDR
DNS_SERVICE_IP=$DNS_SERVICE_IP
CLUSTER_DOMAIN=$CLUSTER_DOMAIN
STORAGE_CLASS=$STORAGE_CLASS
PAUSE_IMAGE=$PAUSE_IMAGE
BUSYBOX_IMAGE=$BUSYBOX_IMAGE
COREDNS_IMAGE=$COREDNS_IMAGE
EOF
  mv "$state/node.env.tmp" "$state/node.env"
}

step() { # <what> <function>
  local t0=$SECONDS
  "$2"
  log "$1 ($((SECONDS - t0))s)"
}

check_free
take_ownership
preflight
# A previous run's data would carry its objects over: start empty (down.sh has unmounted it).
for dir in etcd containerd kubelet cni volumes pod-logs; do
  [ -e "$state/$dir" ] && rm -rf --one-file-system "${state:?}/$dir"
done
rm -f "$state/node.env" "$state/kubeconfig"
mkdir -p "$logs" "$pids"
log "state in $state"
step "kernel settings saved and set" save_sysctls
step "$NODE_IF up with $NODE_IP" network
step "certificates" certificates
kubeconfig "$state/kubeconfig" admin
step "etcd" start_etcd
step "kube-apiserver" start_apiserver
step "kube-controller-manager and kube-scheduler started" start_controllers
step "containerd" start_containerd
step "images imported (pause, coredns, busybox)" import_node_images
step "kubelet started" start_kubelet
step "kube-proxy started" start_kube_proxy
wait_up kubelet 90 "node $NODE_NAME Ready" node_ready
log "node $NODE_NAME Ready ($((SECONDS - started))s)"
step "CoreDNS and the storage applied" apply_addons
wait_up kube-proxy 120 "CoreDNS answering on $DNS_SERVICE_IP" dns_answers
for name in kube-controller-manager kube-scheduler containerd kube-apiserver etcd; do alive "$name"; done
write_env
log "up in $((SECONDS - started))s: source $state/node.env (KUBECONFIG=$state/kubeconfig)"
