# tfprov developer and CI entry points. `make test` is what CI runs (see .ci/run and README).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
LINK := .tfprov/collections/ansible_collections/tfprov/gpu
# role/scenario pairs; "heavy" scenarios (kernel module builds, the 8 GB toolkit) run only with `make heavy`.
SCENARIOS := $(patsubst roles/%/molecule.yml,%,$(wildcard roles/*/molecule/*/molecule.yml))
CI_SCENARIOS := $(filter-out %/heavy,$(SCENARIOS))
HEAVY_SCENARIOS := $(filter %/heavy,$(SCENARIOS))
WHEELHOUSE := /var/cache/tfprov/wheelhouse

.PHONY: help venv collection-link engine images serving-image wheelhouse baked-image demo lint unit integration molecule molecule-cluster cluster-faults heavy bench-converge bench-cluster build test clean

help:
	@echo "make demo   - set up a local container node and run tfprov run node on it"
	@echo "make test   - lint, unit tests, collection build, molecule, integration tests (what CI runs)"
	@echo "make heavy  - molecule scenarios too heavy for CI (NVIDIA kernel module build, distro CUDA toolkit)"
	@echo "make bench-converge - fresh and no-op tfprov run node on 1, 2, 4 and 8 local nodes (a benchmark)"
	@echo "make bench-cluster  - fresh and no-op tfprov run cluster on 1, 2 and 4 local nodes (a benchmark)"
	@echo "make cluster-faults - tfprov run cluster with a task killed mid-check, then recovered (too long for CI)"

$(BIN)/tfprov: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

venv: $(BIN)/tfprov collection-link

collection-link:
	@mkdir -p $(dir $(LINK))
	@[ -e $(LINK) ] || ln -sfn ../../../.. $(LINK)

engine: venv
	$(BIN)/tfprov engine

images: engine
	$(BIN)/tfprov images

# The stand-in TF Serving image (TensorFlow from the wheelhouse) and its `docker save` archive, for nodes' engines.
serving-image: images wheelhouse
	$(BIN)/tfprov images --serving

demo: images
	$(BIN)/tfprov up local --nodes 1
	$(BIN)/tfprov run node -i inventories/local.docker_containers.yml

lint: venv
	rm -rf .ansible/collections/ansible_collections/tfprov  # ansible-lint's copy of this collection, maybe stale
	$(BIN)/yamllint -s .
	$(BIN)/ruff check src tests plugins bench
	# Lint's syntax checks must not query the Docker engine behind ansible.cfg's default inventory:
	# CI lints before any engine runs.
	ANSIBLE_INVENTORY=localhost, $(BIN)/ansible-lint --offline --profile production

unit: venv
	$(BIN)/pytest -q -m "not integration"

build: venv
	rm -rf dist && $(BIN)/ansible-galaxy collection build --output-path dist .
	tests/check_tarball.sh $(CURDIR)/dist/tfprov-gpu-*.tar.gz

wheelhouse: venv
	$(BIN)/python tests/support/wheelhouse.py --dest $(WHEELHOUSE)

# tfprov/node-baked:bookworm: a node converged by gpu_node.yml, committed (cached by a digest of what made it).
baked-image: images wheelhouse
	$(BIN)/python tests/support/bake_node.py --suite bookworm --wheelhouse $(WHEELHOUSE)

# Each scenario as "<role>/molecule/<scenario>": run from the role directory, timed. Shared settings are in
# .config/molecule/config.yml; TFPROV_SCENARIO names its instances (unique across scenarios).
define run_scenarios
	for s in $(1); do role=$${s%%/*}; name=$${s##*/}; start=$$(date +%s); \
	  (cd roles/$$role && TFPROV_SCENARIO=$$role-$$name $(BIN)/molecule test -s $$name) || exit 1; \
	  echo "molecule $$role/$$name: passed in $$(( $$(date +%s) - start )) s"; done
endef

molecule: images wheelhouse serving-image molecule-cluster
	$(call run_scenarios,$(CI_SCENARIOS))

# The collection-level scenario (molecule/cluster): four nodes from the baked image, both strategies.
molecule-cluster: baked-image
	start=$$(date +%s); $(BIN)/molecule test -s cluster; \
	  echo "molecule cluster: passed in $$(( $$(date +%s) - start )) s"

heavy: images wheelhouse
	$(call run_scenarios,$(HEAVY_SCENARIOS))

# A benchmark, not a test (run it alone: it replaces the local cloud): fresh and no-op `tfprov run node` on 1-8 nodes.
bench-converge: images wheelhouse
	$(BIN)/python bench/converge_scale.py --nodes 1 2 4 8 --wheelhouse $(WHEELHOUSE) --noop-runs 2

# A benchmark, not a test (it replaces the local cloud): fresh and no-op `tfprov run cluster` on 1, 2 and 4 nodes.
bench-cluster: images wheelhouse
	$(BIN)/python bench/cluster_scale.py --nodes 1 2 4 --wheelhouse $(WHEELHOUSE) --noop-runs 2

integration: images serving-image baked-image
	$(BIN)/pytest -q -m "integration and not cluster_faults"

# Faults injected into `tfprov run cluster` (a task killed mid-check, a re-run recovering): minutes, not for every CI run.
cluster-faults: images baked-image
	$(BIN)/pytest -q -m cluster_faults

test: lint unit build molecule integration

clean:
	rm -rf dist .tfprov .pytest_cache .ruff_cache
	-$(BIN)/tfprov down local
