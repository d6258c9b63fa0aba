# Cluster add-ons: CoreDNS and the storage; node.env for the tests.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

# A manifest with its ${NAME}s replaced by the shell variables of those names (all of them set).
render() { # <manifest file>
  local text name
  text="$(cat "$1")"
  for name in $(grep -o '\${[A-Z_][A-Z0-9_]*}' "$1" | sort -u | tr -d '${}'); do
    [ -n "${!name+x}" ] || die "render $1: \$$name is not set"
    text="${text//\$\{$name\}/${!name}}"
  done
  printf '%s\n' "$text"
}

apply_addons() {
  render "$node_dir/manifests/coredns.yaml" | kubectl_admin apply -f - >/dev/null
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
# The add-ons: Traefik's IngressClass and GatewayClass, cert-manager's ClusterIssuer (ACME from
# Pebble), Pebble's management endpoint (its roots: /roots/0), challtestsrv's (TXT records:
# POST /set-txt), the zone CoreDNS forwards to challtestsrv, and the CA that signed Pebble's endpoints.
INGRESS_CLASS=$INGRESS_CLASS
GATEWAY_CLASS=$GATEWAY_CLASS
INGRESS_NAMESPACE=$INGRESS_NAMESPACE
CERT_MANAGER_NAMESPACE=$CERT_MANAGER_NAMESPACE
CLUSTER_ISSUER=$CLUSTER_ISSUER
ACME_DIRECTORY=https://$NODE_IP:$PEBBLE_PORT/dir
PEBBLE_MANAGEMENT=https://$NODE_IP:$PEBBLE_MANAGEMENT_PORT
CHALLTESTSRV_MANAGEMENT=http://$NODE_IP:$CHALLTESTSRV_MANAGEMENT_PORT
ACME_ZONE=$ACME_ZONE
ACME_DNS=$ACME_DNS
NODE_CA=$certs/ca.crt
EOF
  mv "$state/node.env.tmp" "$state/node.env"
}

