# Hostplane: the two everyday commands are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Node.js: the version pinned in scripts/node.sh. When the machine's `node` is older than its major,
# the script provides the pinned build in .cache/node/<version>/ and its bin/ goes first on PATH for
# every recipe. `plan` prints "<version used> [<bin dir>]" and downloads nothing; `node` does.
NODE_PLAN := $(shell bash scripts/node.sh plan)
NODE_USED := $(word 1,$(NODE_PLAN))
NODE_BIN := $(word 2,$(NODE_PLAN))
ifneq ($(NODE_BIN),)
export PATH := $(NODE_BIN):$(PATH)
# node-gyp builds native addons against this Node's headers (an npmrc's nodedir would win otherwise).
export npm_config_nodedir := $(patsubst %/bin,%,$(NODE_BIN))
endif

# Named after the Node version: node_modules (native modules included) is reinstalled by that Node's
# npm when it changes (npm ci removes node_modules, old stamps with it).
NPM_INSTALL_STAMP := node_modules/.install-stamp-node$(NODE_USED)

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

node: ## Provide the pinned Node.js in .cache/node/ when the machine's is older
	@bash scripts/node.sh ensure >/dev/null

$(NPM_INSTALL_STAMP): package.json package-lock.json | node
	npm ci --no-audit --no-fund
	@touch $@

install: $(NPM_INSTALL_STAMP) ## Install npm dependencies (from the lockfile) and build the SQLite engine's native parts
	@bash native/build.sh

build: install ## Compile TypeScript to dist/
	npm run build

run: build ## Start every role in one process on :8080 with embedded defaults (state in ./data)
	node dist/src/cli/main.js serve

test-tools: ## Build/install what the tests need: MinIO (Go module proxy) and PostgreSQL (Debian)
	bash test/tools/build.sh

lint: install ## Type-check, lint and check formatting
	npm run typecheck
	npm run lint

test: build test-tools image-oci lint ## Install everything, then run the whole suite against real PostgreSQL and MinIO
	npx vitest run

test-node: build test-tools ## The chart on a real node: kubelet + containerd + runc, the image built without Docker, helm install → test → uninstall
	npx vitest run --config vitest.node.config.ts

fuzz: build ## Schemathesis against a real `hostplane serve` (bounded; FUZZ_MAX_TIME=3600 for the long pass)
	bash scripts/fuzz.sh

bench-edge: build ## Edge cache-hit throughput against nginx (reported as a ratio)
	bash bench/edge/run.sh

bench-sqlite: build ## SQLite API point reads and inserts against PocketBase (built on first use; wrk)
	@command -v wrk >/dev/null || { echo "bench-sqlite: installing wrk with apt-get"; \
	  $$([ "$$(id -u)" -eq 0 ] || echo sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk; }
	npx tsx bench/sqlite/bench.ts $(BENCH_ARGS)

bench-files: build ## The files index at 1,000 / 10,000 / 100,000 files in one site (PostgreSQL and PGlite)
	npx tsx bench/files/bench.ts $(BENCH_ARGS)

bench-replication: build ## SQLite replication: restore time (5 / 50 MiB), cost per open database, exec latency on vs off
	npx tsx bench/replication/bench.ts $(BENCH_ARGS)

bench-console: build ## The console's time to first render and bundle size, against PocketBase's dashboard (Chromium)
	npx tsx bench/console/first-render.ts $(BENCH_ARGS)

clean: ## Remove build output and tool caches (not ./data)
	rm -rf dist .cache native/build

.PHONY: help node install build run test-tools lint test test-node fuzz bench-edge bench-sqlite bench-files bench-replication bench-console clean

# --- Cluster: container image, chart lint, a local kind cluster --------------------------------------
# kind-up needs Docker, kind, kubectl and helm on the PATH (none of it runs in CI or the test suite).
KIND_CLUSTER ?= hostplane
KIND_NAMESPACE ?= hostplane
IMAGE_REPOSITORY ?= hostplane
IMAGE_TAG ?= dev
INGRESS_NGINX_VERSION ?= controller-v1.12.1
HELM ?= $(if $(wildcard .cache/tools/helm),.cache/tools/helm,helm)
KIND_KUBECTL = kubectl --context kind-$(KIND_CLUSTER)

image: ## Build the container image from deploy/Dockerfile (hostplane:dev)
	docker build -f deploy/Dockerfile -t $(IMAGE_REPOSITORY):$(IMAGE_TAG) .

image-oci: build test-tools ## The same image and the Litestream image without Docker (mmdebstrap + umoci; root): OCI archives in .cache/images/
	IMAGE_REPOSITORY=$(IMAGE_REPOSITORY) IMAGE_TAG=$(IMAGE_TAG) bash deploy/image/build.sh all

chart-lint: ## helm lint --strict the chart (values checked against values.schema.json)
	$(HELM) lint --strict charts/hostplane \
	  --set config.baseUrl=https://api.hostplane.example,config.sitesDomain=sites.hostplane.example
	$(HELM) lint --strict charts/hostplane -f deploy/kind/values.yaml

kind-up: image ## Local cluster: kind + ingress-nginx + PostgreSQL + MinIO + the chart (API on http://api.localhost)
	kind get clusters | grep -qx '$(KIND_CLUSTER)' || kind create cluster --name $(KIND_CLUSTER) --config deploy/kind/cluster.yaml
	$(KIND_KUBECTL) apply -f https://raw.githubusercontent.com/kubernetes/ingress-nginx/$(INGRESS_NGINX_VERSION)/deploy/static/provider/kind/deploy.yaml
	$(KIND_KUBECTL) -n ingress-nginx rollout status deployment/ingress-nginx-controller --timeout=300s
	$(KIND_KUBECTL) create namespace $(KIND_NAMESPACE) --dry-run=client -o yaml | $(KIND_KUBECTL) apply -f -
	$(KIND_KUBECTL) -n $(KIND_NAMESPACE) apply -f deploy/kind/postgres.yaml -f deploy/kind/minio.yaml
	$(KIND_KUBECTL) -n $(KIND_NAMESPACE) rollout status deployment/postgres --timeout=300s
	$(KIND_KUBECTL) -n $(KIND_NAMESPACE) rollout status deployment/minio --timeout=300s
	kind load docker-image $(IMAGE_REPOSITORY):$(IMAGE_TAG) --name $(KIND_CLUSTER)
	$(HELM) upgrade --install hostplane charts/hostplane --kube-context kind-$(KIND_CLUSTER) \
	  --namespace $(KIND_NAMESPACE) -f deploy/kind/values.yaml \
	  --set image.repository=$(IMAGE_REPOSITORY),image.tag=$(IMAGE_TAG) --wait --timeout 10m
	$(HELM) test hostplane --kube-context kind-$(KIND_CLUSTER) --namespace $(KIND_NAMESPACE)
	@echo "API: http://api.localhost   sites: http://<slug>.sites.localhost   (kubectl -n $(KIND_NAMESPACE) apply -f deploy/examples/site-basic.yaml)"

kind-down: ## Delete the kind cluster
	kind delete cluster --name $(KIND_CLUSTER)

.PHONY: image image-oci chart-lint kind-up kind-down
