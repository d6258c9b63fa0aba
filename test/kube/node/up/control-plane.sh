# The control plane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler, and how up.sh starts and watches its processes.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

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
