// The Gateway API CRDs (standard channel) the test node applies (test/kube/node/up/ingress.sh):
// test/tools/build.sh copies config/crd/standard of this pin from the module cache into
// .cache/tools/crds/gateway-api. Nothing is built from it. v1.6.3: the newest the Go proxy serves
// for Go 1.26 (v1.7.0 needs Go 1.27); Traefik v3.6 and cert-manager v1.20 read its v1 resources.
module hostplane.dev/testtools/gateway-api

go 1.26.0

require sigs.k8s.io/gateway-api v1.6.3
