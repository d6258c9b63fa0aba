// The CustomResourceDefinitions of cert-manager and of the Gateway API that the Site controller's
// tests install into their kube-apiserver: read from these modules in the Go module cache
// (test/support/kube/external-crds.ts; `go mod download` fetches them through the module proxy,
// checked against go.sum). Nothing is built from them. The real node applies the same CRDs
// (test/tools/build.sh copies them into .cache/tools/crds): cert-manager at the version of the
// controller it runs (test/tools/cert-manager), the Gateway API's standard channel at v1.6.3 (the
// newest the proxy serves for Go 1.26; Traefik v3.6 and cert-manager v1.20 read its v1 resources).
module hostplane.dev/testtools/crds

go 1.26.0

require (
	github.com/cert-manager/cert-manager v1.20.3
	sigs.k8s.io/gateway-api v1.6.3
)
