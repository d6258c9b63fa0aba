# The ACME add-on: Pebble (Let's Encrypt's test ACME server) and pebble-challtestsrv (its DNS), host
# processes on the node's address from Debian's pebble package, started here and stopped by down.sh.
# Every name resolves to the node's address (where Traefik listens), so HTTP-01 validations reach
# the ingress; TXT records are set through challtestsrv's management API (CoreDNS forwards
# ACME_ZONE to it: the API pods' domain verification reads them).
# Sourced by up.sh (after lib.sh, certs.sh and control-plane.sh); uses its $state and the paths of state_paths.
# shellcheck shell=bash

start_acme() {
  # Pebble's API and management endpoint serve a certificate of the node's CA (the ClusterIssuer's caBundle).
  [ -s "$certs/pebble.crt" ] || cert pebble "/CN=pebble" serverAuth "IP:$NODE_IP,DNS:pebble"
  cat >"$state/pebble.json" <<EOF2
{
  "pebble": {
    "listenAddress": "$NODE_IP:$PEBBLE_PORT",
    "managementListenAddress": "$NODE_IP:$PEBBLE_MANAGEMENT_PORT",
    "certificate": "$certs/pebble.crt",
    "privateKey": "$certs/pebble.key",
    "httpPort": 80,
    "tlsPort": 443,
    "ocspResponderURL": "",
    "externalAccountBindingRequired": false
  }
}
EOF2
  start challtestsrv pebble-challtestsrv -defaultIPv4 "$NODE_IP" -defaultIPv6 "" -dns01 "$ACME_DNS" \
    -http01 "" -https01 "" -tlsalpn01 "" -management "$NODE_IP:$CHALLTESTSRV_MANAGEMENT_PORT"
  # No random sleeps before validations, no random nonce rejections: a test's issuance takes seconds.
  start pebble env PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 \
    pebble -config "$state/pebble.json" -dnsserver "$ACME_DNS"
  wait_up challtestsrv 30 "pebble-challtestsrv" \
    curl -s -o /dev/null --max-time 2 "http://$NODE_IP:$CHALLTESTSRV_MANAGEMENT_PORT/"
  wait_up pebble 30 "Pebble's directory" \
    curl -fsS -o /dev/null --max-time 2 --cacert "$certs/ca.crt" "https://$NODE_IP:$PEBBLE_PORT/dir"
}
