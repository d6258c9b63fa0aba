# Cluster add-ons: CoreDNS and the storage; node.env for the tests.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

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

