// The CustomResourceDefinitions of cert-manager and of the Gateway API that the Site controller's
// tests install into their kube-apiserver: read from these modules in the Go module cache
// (test/support/kube/external-crds.ts; `go mod download` fetches them through the module proxy,
// checked against go.sum). Nothing is built from them. Keep the versions with those the real node
// runs (cert-manager's controller, Traefik's Gateway API).
module hostplane.dev/testtools/crds

go 1.24.0

require (
	github.com/cert-manager/cert-manager v1.21.2
	sigs.k8s.io/gateway-api v1.6.3
)
