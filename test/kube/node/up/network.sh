# The network: the kernel settings, the node interface, the pods' CNI bridge, kube-proxy and the DNS check.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

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

# The pods' network: a bridge (hpcni0) with host-local addresses, masqueraded; hostPorts through portmap.
write_cni_config() {
  mkdir -p "$state/cni/net.d" "$state/cni/ipam"
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

