# spread-scheduler: everything a fresh machine needs goes through these targets.
#   make demo   -- venv + Go builds (cached) + local control plane + a spreading Deployment, then tear down
#   make test   -- lint, type checks, unit/property tests, and the e2e suite on a real control plane
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: venv lint helm unit e2e test demo cluster-build cluster-up cluster-down bench bench-full bench-venv conformance differential reliability clean

venv: $(STAMP)
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,plot]'
	rm -f $(VENV)/.installed-* && touch $@

lint: venv
	$(BIN)/ruff check scheduler tests e2e bench
	$(BIN)/ruff format --check scheduler tests e2e bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# helm (for tests/test_helm_chart.py) built from e2e/tools/helm's Go module, cached like the control plane.
helm: venv
	$(BIN)/python -m e2e.cluster helm

unit: venv helm
	$(BIN)/pytest tests -n 2

cluster-build: venv
	$(BIN)/python -m e2e.cluster build

cluster-up: cluster-build
	$(BIN)/python -m e2e.cluster up

cluster-down:
	$(BIN)/python -m e2e.cluster down

# The whole suite on v1.35.4 but the Karpenter tests, which run beside it on a v1.35.4 control plane of
# their own (marked karpenter: they mostly wait on Karpenter); once those end, what differs by version
# (tests marked every_release: parity with that release's kube-scheduler, the refusals, PreBind victims)
# on v1.36.3 and v1.37.2, beside the suite too, those two side by side (e2e/releases.py: a control plane
# each; two take about one's time).
OTHER_RELEASES := 1.36.3 1.37.2
e2e: cluster-build
	for v in $(OTHER_RELEASES); do $(BIN)/python -m e2e.cluster build --version $$v || exit 1; done
	$(BIN)/python -m e2e.cluster karpenter
	$(BIN)/python -m e2e.releases --suite $(OTHER_RELEASES) karpenter

test: lint unit e2e

demo: venv
	$(BIN)/python -m e2e.demo

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis .import_linter_cache

# Benchmarks (not tests), side by side with kube-scheduler v1.35.4 on this machine; tables on stdout,
# JSON and a plot (pods_per_s.png) in bench/results/. Node churn runs on both sides in every row.
# `bench` is the short set (under 10 minutes); `bench-full` adds 1000 nodes in-process, three runs
# per in-process row, 500 and 5000 nodes end to end, QPS 50/100, kube-scheduler at GOMAXPROCS=1, the
# memory row at 5000 nodes with 30,000 running pods, the end-to-end rows with the control plane on a
# CPU of its own (--own-core), the writes' CPU per request on both HTTP paths, and the envelope row
# (5,000 kwok nodes with 10,000-30,000 running pods: sync time, RSS and pods/s). kwok is the nodes'
# kubelet in every end-to-end row (--kubelet none for static nodes).
BENCH_STAMP := $(VENV)/.bench-$(shell sha1sum pyproject.toml | cut -c1-12)
bench-venv: $(BENCH_STAMP)
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	rm -f $(VENV)/.bench-* && touch $@

# The bytecode compiled first, as the image has it (pip install compiles it; a machine that sets
# PYTHONDONTWRITEBYTECODE would otherwise compile our modules at every start the envelope times).
bench: cluster-build bench-venv
	$(BIN)/python -m compileall -q scheduler
	$(BIN)/python -m bench.inprocess --nodes 500 5000 --pods 2000 --churn --scaling
	$(BIN)/python -m bench.inprocess --nodes 500 5000 --update-cost --out bench/results/update-cost.json
	$(BIN)/python -m bench.e2e --nodes 2000 --pods 1000 --qps 5000 --repeat 3
	$(BIN)/python -m bench.plot

bench-full: cluster-build bench-venv
	$(BIN)/python -m compileall -q scheduler
	$(BIN)/python -m bench.inprocess --nodes 500 1000 5000 --pods 2000 --churn --runs 3 --scaling
	$(BIN)/python -m bench.inprocess --nodes 500 5000 --update-cost --out bench/results/update-cost.json
	$(BIN)/python -m bench.e2e --nodes 500 2000 5000 --pods 1000 --qps 5000 50 --repeat 3 \
		--contestants kube-scheduler kube-scheduler@1 spread-scheduler null-binder
	$(BIN)/python -m bench.e2e --nodes 5000 --pods 1000 --existing-pods 30000 --qps 5000 --repeat 3 \
		--contestants kube-scheduler spread-scheduler --out bench/results/e2e-existing.json
	$(BIN)/python -m bench.e2e --nodes 500 2000 5000 --pods 1000 --qps 5000 --repeat 3 --own-core \
		--out bench/results/e2e-own-core.json
	$(BIN)/python -m bench.http_writes --rounds 3
	$(BIN)/python -m bench.envelope --nodes 5000 --running 10000 20000 30000 --repeat 3
	$(BIN)/python -m bench.plot

# The fault, load and leader tests at full size (the test command runs 5 kills in a 300-pod burst,
# 1,000 pending pods over 200 nodes, the leader paused in a 200-pod burst with 4 s leases and 6
# preemption kills; here 20 kills in 1,000 pods, 10,000 pods over 2,000 nodes with the shipped lease
# durations 15 s / 10 s / 2 s, the leader paused in 1,000 pods with them, and 20 preemption kills). Reports land in .cluster/reliability/e2e-logs/*.json;
# the table in docs/reliability.md is made from them (e2e/reliability_report.py).
RELIABILITY_LOGS = $(CURDIR)/.cluster/reliability/e2e-logs
reliability: cluster-build
	rm -f $(RELIABILITY_LOGS)/*.json
	SPREAD_E2E_KILLS=20 SPREAD_E2E_KILL_PODS=1000 SPREAD_E2E_PREEMPT_KILLS=20 SPREAD_E2E_VOLUME_PODS=100 \
		SPREAD_E2E_DRA_KILLS=10 SPREAD_E2E_DRA_PODS=200 SPREAD_E2E_DIR=$(CURDIR)/.cluster/reliability \
		$(BIN)/pytest e2e/test_faults.py e2e/test_api_faults.py e2e/test_preemption.py e2e/test_volume_faults.py \
		e2e/test_dra_faults.py e2e/test_coexistence.py e2e/test_api_throttling.py -p no:cacheprovider -s
	SPREAD_E2E_LOAD_PODS=10000 SPREAD_E2E_LOAD_NODES=2000 SPREAD_E2E_LEASE=shipped SPREAD_E2E_DIR=$(CURDIR)/.cluster/reliability \
		$(BIN)/pytest e2e/test_load.py -p no:cacheprovider -s
	SPREAD_E2E_STOP_PODS=1000 SPREAD_E2E_LEASE=shipped SPREAD_E2E_DIR=$(CURDIR)/.cluster/reliability \
		$(BIN)/pytest e2e/test_leader_election.py -p no:cacheprovider -s
	$(BIN)/python -m e2e.reliability_report $(RELIABILITY_LOGS) --write docs/reliability.md

# A long differential campaign against upstream's framework (the test command runs 400 clusters and
# 100 crowded ones); SHARE of the clusters go through a real kube-apiserver first (any refusal fails
# the run); CROWDED=--crowded fills nodes with low-priority pods in every cluster (preemption-heavy):
#   make conformance N=100000 SEED=3000000 SHARE=0.05
#   make conformance N=20000 SEED=20000000 CROWDED=--crowded
# KUBE_VERSION=1.36|1.37 decides as that minor on both sides (the oracle and the control plane built from
# that release's own go.mod; the first build of a release takes ~15 min on 2 cores):
#   make conformance KUBE_VERSION=1.37 N=20000
N     ?= 100000
SEED  ?= 3000000
SHARE ?= 0.05
CROWDED ?=
KUBE_VERSION ?= 1.35
conformance: venv
	$(BIN)/python -m e2e.cluster build --version $(KUBE_VERSION)
	$(BIN)/python -m tests.differential.runner --count $(N) --start $(SEED) --batch 2000 --through-apiserver $(SHARE) \
		--kube-version $(KUBE_VERSION) $(CROWDED)
differential: conformance
