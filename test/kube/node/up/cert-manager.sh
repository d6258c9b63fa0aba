# The cert-manager add-on: its CRDs (from the module cache, copied by test/tools/build.sh), its
# webhook (serving a certificate of the node's CA, which the webhook configurations carry: no
# cainjector), its controller, and the node's ClusterIssuer (Pebble, HTTP-01 through Traefik).
# Sourced by up.sh (after lib.sh, images.sh, certs.sh and addons.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

cert_manager_image() { # <component> <ref> <out>
  local root
  root="$(mktemp -d "${3%/*}/cert-manager-$1-root.XXXXXX")"
  install -m 0755 "$tools_dir/cert-manager-$1" "$root/$1"
  build_image "$2" "$root" "$3" --config.entrypoint "/$1" --config.user 65532:65532
  rm -rf "$root"
}
build_cert_manager_controller() { cert_manager_image controller "$CERT_MANAGER_CONTROLLER_IMAGE" "$1"; }
build_cert_manager_webhook() { cert_manager_image webhook "$CERT_MANAGER_WEBHOOK_IMAGE" "$1"; }
build_cert_manager_acmesolver() { cert_manager_image acmesolver "$CERT_MANAGER_ACMESOLVER_IMAGE" "$1"; }

start_cert_manager() {
  local component ref archive dir="$tools_dir/crds/cert-manager" ns="$CERT_MANAGER_NAMESPACE"
  for component in controller webhook acmesolver; do
    ref="CERT_MANAGER_${component^^}_IMAGE"
    archive="$(cached_image "cert-manager-$component" \
      "$(inputs_key "$tools_dir/cert-manager-$component" "$node_dir/up/cert-manager.sh")" \
      "build_cert_manager_$component")"
    "$node_dir/import-image.sh" "$state" "$archive" "${!ref}" >/dev/null
  done
  [ -d "$dir" ] || die "no cert-manager CRDs in $dir (run: bash test/tools/build.sh)"
  kubectl_admin apply --server-side -f "$dir" >/dev/null
  kubectl_admin wait --for condition=Established --timeout 60s crd/certificates.cert-manager.io \
    crd/clusterissuers.cert-manager.io crd/challenges.acme.cert-manager.io >/dev/null
  [ -s "$certs/cert-manager-webhook.crt" ] || cert cert-manager-webhook "/CN=cert-manager-webhook" serverAuth \
    "DNS:cert-manager-webhook.$ns.svc,DNS:cert-manager-webhook.$ns.svc.$CLUSTER_DOMAIN"
  kubectl_admin create namespace "$ns" --dry-run=client -o yaml | kubectl_admin apply -f - >/dev/null
  kubectl_admin -n "$ns" create secret tls cert-manager-webhook-tls --cert "$certs/cert-manager-webhook.crt" \
    --key "$certs/cert-manager-webhook.key" --dry-run=client -o yaml | kubectl_admin apply -f - >/dev/null
  CA_BUNDLE="$(base64 -w0 "$certs/ca.crt")" render "$node_dir/manifests/cert-manager.yaml" |
    kubectl_admin apply -f - >/dev/null
}

# Fails until the webhook admits it (the ClusterIssuer goes through it).
apply_cluster_issuer() {
  CA_BUNDLE="$(base64 -w0 "$certs/ca.crt")" render "$node_dir/manifests/pebble-issuer.yaml" |
    kubectl_admin apply -f - >/dev/null
}

# The ClusterIssuer registered its ACME account with Pebble.
cluster_issuer_ready() {
  [ "$(kubectl_admin get clusterissuer "$CLUSTER_ISSUER" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
