# The node: containerd (with runc), its images, kubelet.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

start_containerd() {
  mkdir -p "$ctrd"
  write_cni_config
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

node_ready() {
  [ "$(kubectl_admin get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

