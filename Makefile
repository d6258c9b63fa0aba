# Hostplane: the two everyday commands are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

NPM_INSTALL_STAMP := node_modules/.install-stamp

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(NPM_INSTALL_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: $(NPM_INSTALL_STAMP) ## Install npm dependencies (from the lockfile)

build: install ## Compile TypeScript to dist/
	npm run build

run: build ## Start every role in one process on :8080 with embedded defaults (state in ./data)
	node dist/src/cli/main.js serve

test-tools: ## Build/install what the tests need: MinIO (Go module proxy) and PostgreSQL (Debian)
	bash test/tools/build.sh

lint: install ## Type-check, lint and check formatting
	npm run typecheck
	npm run lint

test: build test-tools lint ## Install everything, then run the whole suite against real PostgreSQL and MinIO
	npx vitest run

bench-edge: build ## Edge cache-hit throughput against nginx (reported as a ratio)
	bash bench/edge/run.sh

clean: ## Remove build output and tool caches (not ./data)
	rm -rf dist .cache

.PHONY: help install build run test-tools lint test bench-edge clean
