# Certificates: one CA signs every serving and client certificate; kubeconfigs from them.
# Sourced by up.sh (after lib.sh and images.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

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

