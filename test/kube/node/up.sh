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
# The steps live in up/, one file per concern: host.sh (preflight, ownership), network.sh (kernel
# settings, interfaces, CNI, kube-proxy), certs.sh, control-plane.sh, node.sh (containerd, images,
# kubelet), addons.sh (CoreDNS, storage, node.env); what a platform team adds beside Hostplane:
# acme.sh (Pebble and its DNS), ingress.sh (Traefik, Gateway API CRDs), cert-manager.sh.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=images.sh
source "$node_dir/images.sh"
for part in host network certs control-plane node addons acme ingress cert-manager; do
  # shellcheck source=/dev/null
  source "$node_dir/up/$part.sh"
done

state="$(resolve_state_dir "${1:-}")"
state_paths
started=$SECONDS
trap 'rc=$?; [ "$rc" -eq 0 ] || printf "[node] up failed after %ss: logs in %s/, clean up with down.sh %s\n" "$((SECONDS - started))" "$logs" "$state" >&2' EXIT

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
step "Pebble and pebble-challtestsrv on $NODE_IP" start_acme
step "Traefik and the Gateway API CRDs applied" start_ingress
step "cert-manager applied" start_cert_manager
wait_up kube-proxy 120 "CoreDNS answering on $DNS_SERVICE_IP" dns_answers
wait_up kubelet 120 "Traefik answering on $NODE_IP:80 and :443" ingress_answers
wait_up kube-apiserver 120 "cert-manager's webhook admitting the ClusterIssuer" apply_cluster_issuer
wait_up pebble 60 "ClusterIssuer $CLUSTER_ISSUER Ready (its account at Pebble)" cluster_issuer_ready
log "add-ons ready ($((SECONDS - started))s)"
for name in kube-controller-manager kube-scheduler containerd kube-apiserver etcd pebble challtestsrv; do alive "$name"; done
write_env
log "up in $((SECONDS - started))s: source $state/node.env (KUBECONFIG=$state/kubeconfig)"
