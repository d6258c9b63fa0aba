# The ingress add-on: the Gateway API CRDs (standard channel) and Traefik, the node's ingress
# controller for Ingress and the Gateway API, on the node's address (hostPorts 80 and 443).
# Sourced by up.sh (after lib.sh, images.sh and addons.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

build_traefik() { # <out>
  local root
  root="$(mktemp -d "${1%/*}/traefik-root.XXXXXX")"
  install -m 0755 "$tools_dir/traefik" "$root/traefik"
  build_image "$TRAEFIK_IMAGE" "$root" "$1" --config.entrypoint /traefik --config.user 65532:65532
  rm -rf "$root"
}

# The CRDs of sigs.k8s.io/gateway-api, copied from the module cache by test/tools/build.sh.
apply_gateway_api_crds() {
  local dir="$tools_dir/crds/gateway-api" file
  [ -d "$dir" ] || die "no Gateway API CRDs in $dir (run: bash test/tools/build.sh)"
  for file in "$dir"/*.yaml; do
    kubectl_admin apply --server-side -f "$file" >/dev/null
  done
  kubectl_admin wait --for condition=Established --timeout 60s crd/gateways.gateway.networking.k8s.io \
    crd/httproutes.gateway.networking.k8s.io crd/gatewayclasses.gateway.networking.k8s.io >/dev/null
}

start_ingress() {
  local archive
  archive="$(cached_image traefik "$(inputs_key "$tools_dir/traefik" "$node_dir/up/ingress.sh")" build_traefik)"
  "$node_dir/import-image.sh" "$state" "$archive" "$TRAEFIK_IMAGE" >/dev/null
  apply_gateway_api_crds
  render "$node_dir/manifests/traefik.yaml" | kubectl_admin apply -f - >/dev/null
}

# Traefik answers on the node's address: a request for a host no route knows gets its 404.
ingress_answers() {
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H 'Host: no-route.invalid' "http://$NODE_IP/")" = 308 ] ||
    [ "$(curl -sk -o /dev/null -w '%{http_code}' --max-time 2 --resolve "no-route.invalid:443:$NODE_IP" https://no-route.invalid/)" = 404 ]
}
