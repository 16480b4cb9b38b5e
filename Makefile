# Gauntlet. The two commands a fresh machine needs: `make demo` and `make test`.
# Everything they need (Debian packages, the pinned control plane and CoreDNS) is installed or
# built on first use and cached.

SHELL := /bin/bash
GO ?= go
CACHE_DIR ?= $(or $(GAUNTLET_CACHE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gauntlet)
K8S_VERSION := $(shell awk '$$1=="k8s.io/kubernetes"{print $$2}' build/controlplane/go.mod)
CONTROLPLANE_DIR := $(CACHE_DIR)/controlplane/$(K8S_VERSION)
KIND_BINARIES_DIR := $(CACHE_DIR)/kind-binaries/$(K8S_VERSION)
COREDNS_VERSION := $(shell awk '$$1=="github.com/coredns/coredns"{print $$2} $$1=="require" && $$2=="github.com/coredns/coredns"{print $$3}' build/coredns/go.mod)
COREDNS_DIR := $(CACHE_DIR)/coredns/$(COREDNS_VERSION)
CERTMANAGER_VERSION := $(shell awk '$$1=="require" && $$2=="github.com/cert-manager/cert-manager"{print $$3}' build/certmanager/go.mod)
CERTMANAGER_DIR := $(CACHE_DIR)/cert-manager/$(CERTMANAGER_VERSION)
CNPG_VERSION := $(shell awk '$$1=="require" && $$2=="github.com/cloudnative-pg/cloudnative-pg"{print $$3}' build/cnpg/go.mod)
CNPG_DIR := $(CACHE_DIR)/cnpg/$(CNPG_VERSION)
PROMOP_VERSION := $(shell awk '$$1=="require" && $$2=="github.com/prometheus-operator/prometheus-operator"{print $$3}' build/prometheus-operator/go.mod)
PROMOP_DIR := $(CACHE_DIR)/prometheus-operator/$(PROMOP_VERSION)
REDISOP_VERSION := $(shell awk '$$1=="require" && $$2=="github.com/spotahome/redis-operator"{print $$3}' build/redis-operator/go.mod)
REDISOP_DIR := $(CACHE_DIR)/redis-operator/$(REDISOP_VERSION)
CHAOSMESH_VERSION := $(shell awk '$$1=="require" && $$2=="github.com/chaos-mesh/chaos-mesh"{print $$3}' build/chaosmesh/go.mod)
CHAOSMESH_DIR := $(CACHE_DIR)/chaos-mesh/$(CHAOSMESH_VERSION)
BIN := bin
TEST_TIMEOUT ?= 60m
# Packages tested at once, and tests run at once within a package (the campaign packages' and
# the example targets' end-to-end tests, each on its own clusters). They mostly wait (quiet windows,
# convergence), so more than one per core shortens the run.
TEST_PACKAGES ?= 5
TEST_PARALLEL ?= 4
# The main run's priority. Docker's cgroupfs driver puts every container (the kind nodes) into one
# CPU cgroup that the scheduler weighs as a single task against each of the embedded clusters'
# processes: beside them at the same priority a kind node got a few percent of the 2 cores (its
# cluster took minutes to come up). Lowering the tests' own processes gives the kind nodes a share.
TEST_NICE ?= 10
# go test starts packages in the order given: the longest first, so that the short ones fill in
# beside them instead of a long one starting last (the kind lane's, which runs the longest chain,
# first of all: its kind cluster takes the first creation turn).
# The CPU-burner test saturates the host on purpose: it runs alone, after the others (a kind node
# booting beside it can miss kind's 30 s limit for its systemd to start).
TEST_ALONE := TestE2EBackoffBesideCPUBurner
TEST_FIRST := ./campaign/kindlane ./campaign ./targets/examples ./operator/e2e ./bench/bugs ./cluster/backends ./faults \
	./cluster/local ./inputgen ./cluster/kind ./cluster/local/internal/kubelet ./operator/internal/machine ./view \
	./cluster/kind/nodeimage ./cluster/internal/controlplane ./reports
GOTESTSUM_VERSION := v1.13.0
GOTESTSUM := $(CACHE_DIR)/tools/gotestsum-$(GOTESTSUM_VERSION)/gotestsum
# The test run's events (go test -json), read by hack/skipcheck.
TEST_EVENTS ?= $(CACHE_DIR)/test-events.json

export GAUNTLET_CACHE_DIR := $(CACHE_DIR)
export GAUNTLET_OPERATOR_BINARY := $(CURDIR)/$(BIN)/valkey-operator

.PHONY: all deps kind-deps kind-binaries kind-coredns kind-node-image chaosmesh tools controlplane coredns certmanager cnpg prometheus-operator redis-operator build demo test test-unit bench bench-bugs bench-campaign bench-inputgen findings vet fmt clean

all: build

## deps: Debian packages (valkey-server or redis-server, nftables, iproute2, util-linux)
deps:
	@bash hack/setup.sh

## kind-deps: the kind lane's container engine — Debian's docker.io (dockerd, containerd, runc), the
## narrow FORWARD rule that keeps the embedded cluster's pod bridges forwarding under Docker's DROP
## policy, and dockerd started if no daemon answers (hack/kind-deps.sh; root; nothing is pulled)
kind-deps:
	@bash hack/kind-deps.sh

## tools: gotestsum (pinned, from the Go module proxy), which runs and summarises the tests
tools: $(GOTESTSUM)
$(GOTESTSUM):
	@echo "tools: installing gotestsum $(GOTESTSUM_VERSION) (first time only)..." >&2
	@GOBIN=$(dir $(GOTESTSUM)) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)

## controlplane: build etcd and the Kubernetes control plane from pinned modules (cached)
controlplane:
	@if [[ -n "$$GAUNTLET_CONTROLPLANE_BIN" ]]; then echo "control plane: using prebuilt binaries in $$GAUNTLET_CONTROLPLANE_BIN" >&2; \
	else bash build/controlplane/build.sh "$(CONTROLPLANE_DIR)"; fi

## kind-binaries: build the node binaries of a kind node image (kubelet, kubeadm, kube-proxy, kubectl) from
## the control plane's pinned k8s.io/kubernetes, static (cached; the kind lane only, make test does not need them)
kind-binaries:
	@bash build/controlplane/build.sh --node "$(KIND_BINARIES_DIR)"

## kind-coredns: CoreDNS for the kind node image — the pinned build plus the plugins kubeadm's Corefile
## names (forward, loop, reload, prometheus; build/coredns/kubeadm.go, -tags kubeadm), cached
KIND_COREDNS_DIR := $(CACHE_DIR)/coredns-kubeadm/$(COREDNS_VERSION)
kind-coredns:
	@if [[ -x "$(KIND_COREDNS_DIR)/coredns" ]]; then echo "kind-coredns $(COREDNS_VERSION): cached in $(KIND_COREDNS_DIR)" >&2; \
	else echo "kind-coredns $(COREDNS_VERSION): building with kubeadm's Corefile plugins..." >&2 && mkdir -p "$(KIND_COREDNS_DIR).tmp" && \
	(cd build/coredns && CGO_ENABLED=0 nice -n 19 $(GO) build -tags kubeadm -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$(COREDNS_VERSION)" -o "$(KIND_COREDNS_DIR).tmp/coredns" .) && \
	echo "$(COREDNS_VERSION)" > "$(KIND_COREDNS_DIR).tmp/VERSION" && rm -rf "$(KIND_COREDNS_DIR)" && mv "$(KIND_COREDNS_DIR).tmp" "$(KIND_COREDNS_DIR)"; fi

## kind-node-image: the offline kind node image gauntlet/kind-node:$(K8S_VERSION) (`gauntlet kind node-image`:
## Debian bookworm by debootstrap, the node binaries, every image kubeadm asks for preloaded; root; cached
## by the hash of its inputs)
kind-node-image: kind-deps kind-binaries controlplane kind-coredns
	@$(GO) build -o $(BIN)/gauntlet ./cmd/gauntlet
	@$(BIN)/gauntlet kind node-image

## chaosmesh: Chaos Mesh for the kind lane's faults — its controller manager and daemon built from the
## pinned module, its Helm chart rendered by the pinned Helm (build/chaosmesh/build.sh), cached; the
## kind back end assembles their images offline and installs them into each cluster
chaosmesh:
	@bash build/chaosmesh/build.sh "$(CHAOSMESH_DIR)"

## coredns: build CoreDNS (the embedded cluster's DNS) from its pinned module (cached)
coredns:
	@if [[ -n "$$GAUNTLET_COREDNS_BIN" ]]; then echo "coredns: using the prebuilt binary $$GAUNTLET_COREDNS_BIN" >&2; \
	else bash build/coredns/build.sh "$(COREDNS_DIR)"; fi

## certmanager: build cert-manager's controller, webhook and cainjector from its pinned module, with its
## CRDs (cached; the third-party target targets/examples/cert-manager)
certmanager:
	@bash build/certmanager/build.sh "$(CERTMANAGER_DIR)"

## cnpg: build CloudNativePG's manager (operator and instance manager) from its pinned module, with
## the release's manifest and CRDs (cached), and install PostgreSQL 15 from Debian's packages (the
## operand of the third-party target targets/examples/cloudnative-pg)
cnpg:
	@bash build/cnpg/postgresql.sh
	@bash build/cnpg/build.sh "$(CNPG_DIR)"

## prometheus-operator: build the Prometheus operator and its config reloader from the pinned module,
## with the release's bundle and CRDs (cached), and install Prometheus and Alertmanager from Debian's
## packages (the operands of the third-party target targets/examples/prometheus-operator)
prometheus-operator:
	@bash build/prometheus-operator/operands.sh
	@bash build/prometheus-operator/build.sh "$(PROMOP_DIR)"

## redis-operator: build the Spotahome Redis operator from the pinned module, with the release's
## CRD and install manifest (cached), and install Redis from Debian's packages (the operand of the
## third-party target targets/examples/redis-operator)
redis-operator:
	@bash build/redis-operator/operands.sh
	@bash build/redis-operator/build.sh "$(REDISOP_DIR)"

## build: the gauntlet CLI and the bundled Valkey operator
build:
	@echo "build: bin/gauntlet bin/valkey-operator" >&2
	@$(GO) build -o $(BIN)/gauntlet ./cmd/gauntlet
	@$(GO) build -o $(BIN)/valkey-operator ./cmd/valkey-operator
	@chmod 755 $(BIN)  # the operator pod runs as uid 65532 and must reach its binary

## demo: bring up an embedded cluster, run a StatefulSet of Valkey pods, show them serving, tear down
demo: deps controlplane coredns build
	@$(BIN)/gauntlet demo

## test: every test, end-to-end ones included (needs root). In CI (CI=true) any skip not
## listed in .ci/allowed-skips fails the run (hack/skipcheck), and so does an
## end-to-end test whose environment is missing (internal/testenv).
# The kind lane is part of make test: its container engine is installed and started (kind-deps,
# through kind-node-image) and what its clusters need is built (the offline node image, Chaos Mesh),
# so its tests run instead of skipping — CI refuses a skipped kind test. `make test KIND=off` leaves
# the lane out on a machine that cannot have an engine (its tests then skip, outside CI only).
KIND ?= on
KIND_LANE := $(if $(filter on,$(KIND)),kind-node-image chaosmesh)
test: deps tools controlplane coredns certmanager cnpg prometheus-operator redis-operator build $(KIND_LANE)
	@echo "test: go vet" >&2
	@$(GO) vet ./...
	@echo "test: go test ./... (end-to-end tests start real clusters; this takes a few minutes)" >&2
	@mkdir -p $(dir $(TEST_EVENTS))
	@rc=0; builds=$$(mktemp -d /tmp/gauntlet-test-builds.XXXXXX) && chmod 755 $$builds && \
	GAUNTLET_TEST_BUILDS=$$builds nice -n $(TEST_NICE) $(GOTESTSUM) --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile $(TEST_EVENTS) -- \
		-timeout $(TEST_TIMEOUT) -count=1 -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) -skip '^$(TEST_ALONE)$$' $(TEST_FIRST) ./... || rc=$$?; \
	rm -rf $$builds; \
	echo "test: $(TEST_ALONE) alone (it saturates the host on purpose)" >&2; \
	$(GOTESTSUM) --format pkgname-and-test-fails --format-hide-empty-pkg --jsonfile $(TEST_EVENTS).alone -- \
		-timeout $(TEST_TIMEOUT) -count=1 -run '^$(TEST_ALONE)$$' ./campaign || rc=$$?; \
	cat $(TEST_EVENTS).alone >> $(TEST_EVENTS) && rm -f $(TEST_EVENTS).alone; \
	$(GO) run ./hack/skipcheck -allow .ci/allowed-skips $(TEST_EVENTS) || { [[ $$rc -ne 0 ]] || rc=1; }; \
	exit $$rc

## test-unit: fast tests only (no clusters)
test-unit:
	@$(GO) test -short -count=1 ./...

## bench: benchmarks that print the figures quoted in docs/results.md
bench: deps controlplane coredns build
	@echo "bench: embedded cluster (up, pod start, idle memory)" >&2
	@$(GO) test -run '^$$' -bench . -benchtime 5x -count 1 ./cluster/local/...
	@echo "bench: input generation (largest CRD)" >&2
	@$(GO) test -run '^$$' -bench . -benchtime 3x -count 1 ./inputgen/...
	@echo "bench: Valkey operator (create to Ready, failover, memory with 10 clusters)" >&2
	@$(GO) test -run '^$$' -bench BenchmarkE2E -benchtime 1x -count 1 ./operator/e2e/
	@echo "bench: the operator-view proxy's added latency per request" >&2
	@$(GO) test -run '^$$' -bench BenchmarkViewLatency -benchtime 5000x -count 1 ./view/

## bench-bugs: a campaign against each seeded bug (operator/testdata/bugs) and the clean operator; prints which oracle caught what.
## MODE=tuned (default): each bug's own test cases and fault script. MODE=untuned: each bug's operator, and the clean one,
## under the user's untuned command (gauntlet run --target valkey --faults all --budget BUGS_BUDGET --workers BUGS_WORKERS)
## per seed of BUGS_SEEDS: caught (by which oracle, at which step), reached but missed, or not reached; the clean operator's
## alarm groups per seed (goal 0); results in bench-results/bugs-untuned (BUGS="01-…,02-…" selects bugs). MODE=both runs both.
MODE ?= tuned
BUGS_SEEDS ?= 1 2 3
BUGS_BUDGET ?= 8m
BUGS_WORKERS ?= 2
BUGS ?=
bench-bugs: deps controlplane coredns build
	@case "$(MODE)" in tuned|untuned|both) ;; *) echo "bench-bugs: MODE=$(MODE): want tuned, untuned or both" >&2; exit 2;; esac
	@if [ "$(MODE)" != untuned ]; then GAUNTLET_BENCH_BUGS_RUN=1 $(GO) test -count=1 -timeout 60m -run '^TestBenchBugs$$' -v ./bench/bugs/; fi
	@if [ "$(MODE)" != tuned ]; then $(GO) run ./bench/bugs/untuned -gauntlet $(BIN)/gauntlet -seeds "$(BUGS_SEEDS)" -budget $(BUGS_BUDGET) \
		-workers $(BUGS_WORKERS) -bugs "$(BUGS)" -out bench-results/bugs-untuned; fi

## bench-inputgen: for every CRD in ../shared/crds, coverage, semantic mapping, generation time and the share of
## valid test cases the API server accepts once their core-typed values are rendered into real objects, with and
## without the API server's judgement in generation
bench-inputgen: controlplane
	@GAUNTLET_BENCH_INPUTGEN=1 $(GO) test -run '^$$' -bench '^BenchmarkCoreAcceptance$$' -benchtime 1x -count 1 -timeout 30m ./inputgen/

## bench-campaign: the untuned nightly path on the clean operator — a breadth-first campaign with every
## fault kind, --workers auto (BENCH_WORKERS=N forces N), a time budget; prints steps and transitions per
## hour, timed-out steps, alarm groups, properties covered and where the steps' time went per seed
## (BENCH_SEEDS="1 2 3" for several).
BENCH_SEEDS ?= 1
BENCH_BUDGET ?= 20m
BENCH_WORKERS ?= auto
bench-campaign: deps controlplane coredns build
	@for s in $(BENCH_SEEDS); do \
		out=bench-results/campaign-seed$$s; rm -rf $$out; \
		echo "bench-campaign: seed $$s, budget $(BENCH_BUDGET), results in $$out" >&2; \
		$(BIN)/gauntlet run --target valkey --faults all --workers $(BENCH_WORKERS) --seed $$s --budget $(BENCH_BUDGET) --no-minimize --out $$out || true; \
		$(GO) run ./hack/campaignfigures $$out || exit 1; \
	done

## findings: replay every finding bundle (findings/<operator>/<slug>: a bug found in a third-party
## operator) on the embedded cluster, one at a time, and print per bundle whether it still reproduces;
## FINDINGS_SCRIPTS=1 also runs each bundle's kubectl-only reproduce.sh against the same cluster
findings: deps controlplane coredns certmanager cnpg prometheus-operator build
	@nice -n 10 $(BIN)/gauntlet findings $(if $(filter 1,$(FINDINGS_SCRIPTS)),--scripts)

vet:
	@$(GO) vet ./...

fmt:
	@gofmt -l -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)
