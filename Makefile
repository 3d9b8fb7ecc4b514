# tfprov developer and CI entry points. `make test` is what CI runs (see .ci/run and README).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# The venv's Python: the newest here that the newest supported ansible-core runs on (3.13, else 3.12: pyenv's builds
# too, whose shims on PATH fail without PYENV_VERSION), else python3 (Debian 12's 3.11, which gets ansible-core 2.19).
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)
PYTHON_CANDIDATES := python3.13 $(wildcard $(PYENV_ROOT)/versions/3.13*/bin/python3.13) \
  python3.12 $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3.12) python3
PYTHON ?= $(firstword $(foreach p,$(PYTHON_CANDIDATES),$(shell $(p) -c 'import sys; \
  print("$(p)") if sys.version_info >= (3, 11) else None' 2>/dev/null)))
# The Ansible package (ansible-core and the collections tfprov depends on) each end of the supported range is tested
# with: the newest on Python 3.12+, the oldest (Ansible 12: ansible-core 2.19) where only Python 3.11 is found.
ANSIBLE_NEWEST := ansible>=14.5,<15
ANSIBLE_OLDEST := ansible>=12.3,<13
ANSIBLE_PACKAGE ?= $(shell $(PYTHON) -c 'import sys; print("newest" if sys.version_info >= (3, 12) else "oldest")')
# The oldest supported end (ansible-core 2.19, Ansible 12's collections) on Debian 12's own Python 3.11.
PYTHON_OLDEST ?= /usr/bin/python3
VENV_OLDEST := .venv-oldest
VENV := .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
LINK := .tfprov/collections/ansible_collections/tfprov/gpu
# A comma inside a $(call ...) argument.
, := ,
# role/scenario pairs; "heavy" scenarios (kernel module builds, the 8 GB toolkit) run only with `make heavy`.
SCENARIOS := $(patsubst roles/%/molecule.yml,%,$(wildcard roles/*/molecule/*/molecule.yml))
CI_SCENARIOS := $(filter-out %/heavy,$(SCENARIOS))
HEAVY_SCENARIOS := $(filter %/heavy,$(SCENARIOS))
WHEELHOUSE := /var/cache/tfprov/wheelhouse

.PHONY: help venv venv-oldest unit-oldest e2e-oldest test-oldest browser collection-link engine images serving-image wheelhouse baked-image ee-context demo lint sanity unit integration molecule molecule-serial molecule-cluster cluster-faults integration-jobs integration-rest test-vm test-vm-heavy heavy bench-converge bench-rerun bench-cluster bench-fleet bench-download bench-inventory bench-connection bench-check-reuse bench-node-vs-script build docs test test-lanes clean

help:
	@echo "make check  - lint + unit: the edit loop"
	@echo "make unit   - tests of pure code only (no ansible run, server, browser or root), under 2 minutes"
	@echo "make lint   - yamllint, ruff and ansible-lint (production profile)"
	@echo "make e2e-local - what unit leaves out: real ansible runs on localhost, moto and local servers, Chromium, build"
	@echo "make molecule - every role's molecule scenarios and the cluster scenario, in two lanes (needs Docker)"
	@echo "make integration - end-to-end tests on the local cloud (needs Docker, make images)"
	@echo "make integration-jobs / integration-rest - the job tests / the others (make test runs one per lane)"
	@echo "make build  - the collection tarball (dist/), checked"
	@echo "make sanity - ansible-test sanity on the collection as built, with .venv's ansible-core (2.21);"
	@echo "               make sanity SANITY_VENV=.venv-oldest: with the oldest supported (2.19)"
	@echo "make docs   - the collection reference and the guides as one site (docs/reference/build/html), docs linted"
	@echo "make demo   - set up a local container node and run tfprov run node on it"
	@echo "make test   - lint, sanity, unit and e2e-local tests, build, docs, molecule, integration, oldest core (what CI runs)"
	@echo "make venv   - .venv: the newest Python here with the newest Ansible (14: ansible-core 2.21) and the test tools"
	@echo "make test-oldest - the oldest supported end (Ansible 12: ansible-core 2.19, Python 3.11, .venv-oldest):"
	@echo "               unit tests, then one end-to-end tfprov run node and one tfprov run cluster"
	@echo "make heavy  - molecule scenarios too heavy for CI (NVIDIA kernel module build, distro CUDA toolkit)"
	@echo "make bench-converge - fresh and no-op tfprov run node on 1, 2, 4 and 8 local nodes (a benchmark)"
	@echo "make bench-rerun    - no-op tfprov run node on 1, 4 and 8 baked nodes, skipping what stands against --full"
	@echo "make bench-cluster  - fresh and no-op tfprov run cluster on 1, 2 and 4 local nodes (a benchmark)"
	@echo "make bench-fleet    - tfprov fleet drift and a no-op fleet update on 1, 4 and 8 local nodes (a benchmark)"
	@echo "make bench-download - fresh nodes (1, 2, 4, 8) through the pip cache: bytes fetched from PyPI (a benchmark)"
	@echo "make bench-inventory - the AWS inventory over 1,000 instances in moto, cold and cached (a benchmark)"
	@echo "make bench-connection - a no-op converge of 4 nodes over the Docker API and over docker exec (a benchmark)"
	@echo "make bench-check-reuse - no-op runs with the quick check reused and with TensorFlow imported (a benchmark)"
	@echo "make bench-node-vs-script - tfprov run node beside a plain install script, fresh and again (a benchmark)"
	@echo "make cluster-faults - tfprov run cluster with a task killed mid-check, a slow link, members failing the gate (too long for CI)"
	@echo "make test-vm - the local cloud's VM flavour: 2 VMs under QEMU, reboot, cloud-init, idle poweroff, bake and boot (by hand)"
	@echo "make test-vm-heavy - whole nodes on VMs: cluster + firewall across reboot, baked node adopted, DKMS build (by hand)"

$(BIN)/tfprov: pyproject.toml
	@[ -n "$(PYTHON)" ] || { echo "make venv: no Python 3.11 or newer found (tried: $(PYTHON_CANDIDATES))" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,local]' '$(ANSIBLE_$(shell echo $(ANSIBLE_PACKAGE) | tr a-z A-Z))'
	$(BIN)/python tests/support/ansible_versions.py
	touch $@

# The oldest supported end: ansible-core 2.19 with Ansible 12's collections on Debian 12's Python 3.11, in a venv of
# its own (the same rule, other settings).
OLDEST := VENV=$(VENV_OLDEST) PYTHON=$(PYTHON_OLDEST) ANSIBLE_PACKAGE=oldest
venv-oldest:
	$(MAKE) --no-print-directory venv $(OLDEST)

# The oldest supported end's tests: the unit tests, then one end-to-end `tfprov run node` and one `tfprov run
# cluster` on the local cloud (the tests run tfprov from the venv whose pytest runs them). `make test` runs both.
OLDEST_E2E := tests/integration/test_e2e_node.py::test_run_node_over_ssh_installs_tensorflow_and_ends_with_the_quick_check \
  tests/integration/test_e2e_cluster.py::test_run_cluster_passes_the_distributed_check
unit-oldest: venv-oldest
	$(MAKE) --no-print-directory unit $(OLDEST)

e2e-oldest: venv-oldest images serving-image baked-image
	$(abspath $(VENV_OLDEST))/bin/pytest -q $(OLDEST_E2E)

test-oldest: unit-oldest e2e-oldest

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

# Only the image the demo's node uses (bookworm): `tfprov up local` builds it on first use.
demo: engine
	$(BIN)/tfprov up local --nodes 1
	$(BIN)/tfprov run node -i inventories/local.docker_containers.yml

lint: venv
	rm -rf .ansible/collections/ansible_collections/tfprov  # ansible-lint's copy of this collection, maybe stale
	$(BIN)/yamllint -s .
	$(BIN)/ruff check src tests plugins bench
	# Lint's syntax checks must not query the Docker engine behind ansible.cfg's default inventory (CI lints while
	# the engine is being set up): an empty inventory. Not "localhost,": ANSIBLE_INVENTORY is a comma-separated
	# list of paths, and its empty second entry is the checkout, which every syntax check then parsed as an
	# inventory directory, running each executable file in it with --list (5 s of CPU per playbook).
	ANSIBLE_INVENTORY=/dev/null $(BIN)/ansible-lint --offline --profile production

# ansible-test sanity, which every published collection passes, on this collection as built (tests/sanity/run.sh:
# the tarball extracted under .tfprov/sanity/<core>/ with the dependencies linked beside it; each test in a venv of
# its own that ansible-test fills from PyPI, kept in ~/.ansible/test between runs). SANITY_VENV picks the venv, so the
# ansible-core: .venv (2.21) or .venv-oldest (2.19). What is ignored, and why, is in tests/sanity/ignore-<core>.txt.
SANITY_VENV ?= $(VENV)
sanity: $(if $(filter $(VENV_OLDEST),$(SANITY_VENV)),venv-oldest,venv)
	tests/sanity/run.sh $(SANITY_VENV)

# The edit loop: lint, then the unit tests.
check: lint unit

# Tests of pure code only, in under two minutes: no ansible-playbook or ansible-runner run, no server, no browser, no
# root. tests/conftest.py lists the tests that do any of these (markers e2e_local, servers, browser, build).
UNIT_MARKERS := not integration and not e2e_local and not servers and not browser and not build
unit: venv
	$(BIN)/pytest -q -m "$(UNIT_MARKERS)" --durations=10

# What make unit leaves out, short of the integration tests: real ansible-playbook / ansible-runner runs on localhost,
# moto_server and other local servers, the run page in headless Chromium, the collection build and ansible-builder.
e2e-local: venv browser
	$(BIN)/pytest -q -m "not integration and (e2e_local or servers or browser or build)" --durations=15

.PHONY: check e2e-local

# Debian's Chromium, for the run page's test in a real headless browser (tests/unit/test_report_browser.py).
browser:
	@command -v chromium >/dev/null || { apt-get -o DPkg::Lock::Timeout=600 update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium; }

build: venv
	rm -rf dist && $(BIN)/ansible-galaxy collection build --output-path dist .
	tests/check_tarball.sh $(CURDIR)/dist/tfprov-gpu-*.tar.gz

# The docs extra (antsibull-docs, Sphinx, the Ansible theme, MyST) in the same venv, installed once per pyproject.toml.
$(VENV)/.docs-extra: pyproject.toml | $(BIN)/tfprov
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

# The collection's reference (plugins' DOCUMENTATION, roles' meta/argument_specs.yml) and the guides in docs/, as one
# Sphinx site in docs/reference/build/html. First antsibull-docs lints every plugin's and role's documentation (schema,
# markup, references between them): a DOCUMENTATION block that no longer parses, or names an option that is not
# there, fails here. It copies the collection and its dependencies to a scratch directory, copying only Git's files
# of a directory inside a Git work tree: GIT_CEILING_DIRECTORIES keeps the venv's collections (inside this checkout,
# ignored by Git) from being taken for part of it. Then the reference is generated (--fail-on-error: no error pages)
# and Sphinx builds the site with every warning an error, reading every page again (-E: a page an incremental build
# skips would hide its warnings).
DOCS_RST := docs/reference/rst
docs: venv $(VENV)/.docs-extra
	GIT_CEILING_DIRECTORIES=$(CURDIR) $(BIN)/antsibull-docs lint-collection-docs --plugin-docs .
	mkdir -p $(DOCS_RST) && chmod go-w $(DOCS_RST)  # antsibull-docs wants it writable by its owner only
	$(BIN)/antsibull-docs --config-file docs/reference/antsibull-docs.cfg collection --use-current --fail-on-error \
	  --cleanup everything --dest-dir $(DOCS_RST) tfprov.gpu
	$(BIN)/sphinx-build -M html docs docs/reference/build -c docs/reference -E -W --keep-going -q
	@echo "docs: docs/reference/build/html/index.html"

# The build context of the execution environment for AWX / Automation Controller (README): build the image elsewhere.
ee-context: build
	rm -rf dist/ee && $(BIN)/ansible-builder create --file execution-environment.yml --context dist/ee \
	  --output-filename Containerfile

wheelhouse: venv
	$(BIN)/python tests/support/wheelhouse.py --dest $(WHEELHOUSE)

# tfprov/node-baked:bookworm: a node converged by gpu_node.yml, committed (cached by a digest of what made it).
BAKE := $(BIN)/python tests/support/bake_node.py --suite bookworm --wheelhouse $(WHEELHOUSE)
baked-image: images wheelhouse
	$(BAKE)

# Each scenario as "<role>/molecule/<scenario>": run from the role directory, timed. Shared settings are in
# .config/molecule/config.yml; TFPROV_SCENARIO names its instances (unique across scenarios).
define run_scenarios
	for s in $(1); do role=$${s%%/*}; name=$${s##*/}; start=$$(date +%s); \
	  (cd roles/$$role && TFPROV_SCENARIO=$$role-$$name $(BIN)/molecule test -s $$name) \
	    || { echo "molecule $$role/$$name: FAILED after $$(( $$(date +%s) - start )) s"; exit 1; }; \
	  echo "molecule $$role/$$name: passed in $$(( $$(date +%s) - start )) s"; done
endef

# The collection-level scenario (molecule/cluster): four nodes from the baked image, both strategies.
run_cluster = (start=$$(date +%s); $(BIN)/molecule test -s cluster \
	|| { echo "molecule cluster: FAILED after $$(( $$(date +%s) - start )) s"; exit 1; }; \
	echo "molecule cluster: passed in $$(( $$(date +%s) - start )) s")

# `make molecule` runs the scenarios in two lanes at once: a scenario alone keeps about 1.1-1.5 of CI's 2 cores busy
# (CPU seconds of molecule, ansible and its nodes over CI's wall time), so two lanes use the rest. A lane runs
# its scenarios one after another and stops at its first failure; `make molecule` fails if either lane fails.
# Scenarios that must not overlap share a lane: nvidia_driver's default and render (both serve the stand-in
# repository on 127.0.0.1:18081 from /tmp/tfprov-nvrepo). Lane A first bakes the image that the cluster scenario
# (last in lane A) and the integration tests start from. `make test` runs the integration tests at the end of both
# lanes (see test:): the job tests after lane A's cluster scenario, the rest after lane B's scenarios, which is why
# lane A holds most scenarios: the lanes are balanced by CI's times with them. The two scenarios whose nodes run a
# Docker engine on the host's network with NET_ADMIN (nvidia_docker, tf_serving) stay in lane B, before its
# integration tests: those compare the host's links, routes and nftables ruleset before and after a cloud, and nothing
# else may touch them meanwhile (the job tests' cloud lives in namespaces of its own, as every local cloud does, and
# starts only after lane A's scenarios, long after those two). A scenario not named in LANE_A runs in lane B.
LANE_A := cuda/molecule/default nvidia_driver/molecule/default nvidia_driver/molecule/render \
  tensorflow_gpu/molecule/conda cudnn/molecule/tarball tensorflow_gpu/molecule/default miniconda/molecule/default \
  cudnn/molecule/default dcgm/molecule/default preflight/molecule/default idle_stop/molecule/default \
  nvidia_repo/molecule/default package_cache/molecule/default cloud_nodes/molecule/default
LANE_B := $(filter-out $(LANE_A),$(CI_SCENARIOS))
# A lane in the background: its lines prefixed with its name and kept in $(LANE_LOGS)/<name>.log; `wait` on its pid
# gives its status (not a pipeline's: bash forgets pipefail for a background pipeline that ended before the wait).
LANE_LOGS := .tfprov/lanes
define run_lane
	( lane_start=$$(date +%s); $(2) && echo "lane $(1): passed in $$(( $$(date +%s) - lane_start )) s" ) \
	  > >(mkdir -p $(LANE_LOGS) && tee $(LANE_LOGS)/$(1).log | sed -u 's/^/[lane $(1)] /') 2>&1
endef
# A failed lane's message, then what failed in it (tests/support/lane_failure.py), so that the end of the output,
# which may be all CI keeps, says why. The sleep lets the lane's tee finish writing its log.
define lane_failed
	{ echo "$(1)"; sleep 1; $(BIN)/python tests/support/lane_failure.py $(LANE_LOGS)/$(2).log; }
endef

# The two lanes: A bakes the image, runs LANE_A, the cluster scenario, then what $(3) adds (make test: the job tests);
# B runs LANE_B, then what $(2) adds (make test: the other integration tests). $(1) names the target in the failure
# lines.
define molecule_lanes
@missing="$(filter-out $(CI_SCENARIOS),$(LANE_A))"; \
  [ -z "$$missing" ] || { echo "Makefile: LANE_A names no CI scenario: $$missing (fix LANE_A)" >&2; exit 1; }
$(call run_lane,A,$(BAKE) && $(call run_scenarios,$(LANE_A)) && $(run_cluster)$(3)) & a=$$!; \
$(call run_lane,B,$(call run_scenarios,$(LANE_B))$(2)) & b=$$!; \
ra=0; wait $$a || ra=$$?; rb=0; wait $$b || rb=$$?; wait; \
[ $$ra = 0 ] || $(call lane_failed,$(1): lane A FAILED (its log lines start with [lane A]),A); \
[ $$rb = 0 ] || $(call lane_failed,$(1): lane B FAILED (its log lines start with [lane B]),B); \
[ $$ra = 0 ] && [ $$rb = 0 ]
endef

molecule: images wheelhouse serving-image
	$(call molecule_lanes,molecule,)

# One lane, as the scenarios ran before lanes (for comparing, or for a machine too small for two).
molecule-serial: images wheelhouse serving-image molecule-cluster
	$(call run_scenarios,$(CI_SCENARIOS))

molecule-cluster: baked-image
	$(run_cluster)

heavy: images wheelhouse
	$(call run_scenarios,$(HEAVY_SCENARIOS))

# A benchmark, not a test (run it alone: it replaces the local cloud): fresh and no-op `tfprov run node` on 1-8 nodes.
bench-converge: images wheelhouse
	$(BIN)/python bench/converge_scale.py --nodes 1 2 4 8 --wheelhouse $(WHEELHOUSE) --noop-runs 2

# A benchmark, not a test (it replaces the local cloud): no-op `tfprov run node` on 1, 4, 8 nodes from the baked image,
# skipping what stands against --full (every play), interleaved on the same nodes.
bench-rerun: baked-image
	$(BIN)/python bench/converge_scale.py --nodes 1 4 8 --image tfprov/node-baked:bookworm --noop-runs 3 --full-too

# A benchmark, not a test (it replaces the local cloud): fresh and no-op `tfprov run cluster` on 1, 2 and 4 nodes.
bench-cluster: images wheelhouse
	$(BIN)/python bench/cluster_scale.py --nodes 1 2 4 --wheelhouse $(WHEELHOUSE) --noop-runs 2

# A benchmark, not a test (it replaces the local cloud): tfprov fleet drift and a no-op fleet update on 1, 4, 8 nodes.
bench-fleet: images baked-image
	$(BIN)/python bench/fleet_scale.py --nodes 1 4 8 --image tfprov/node-baked:bookworm --noop-runs 2

# A benchmark, not a test (it replaces the local cloud): fresh nodes through the gateway's pip and apt caches,
# the bytes fetched from PyPI and the Debian mirror.
bench-download: images
	$(BIN)/python bench/fleet_download.py --nodes 1 2 4 8

# A benchmark, not a test: a no-op gpu_node.yml on 4 nodes from the baked image over the Docker API and over the docker
# CLI, interleaved (add --mitogen DIR for Mitogen's strategy too).
bench-connection: baked-image
	$(BIN)/python bench/connection_compare.py --nodes 4 --repeat 2

# A benchmark, not a test (it replaces the local cloud): no-op runs on converged nodes, the quick check reused against
# TensorFlow imported every run, interleaved: `tfprov run cluster` on 4 nodes, then `tfprov run node` on one.
bench-check-reuse: baked-image
	$(BIN)/python bench/check_reuse.py --plan cluster --nodes 4 --rounds 3
	$(BIN)/python bench/check_reuse.py --plan node --nodes 1 --rounds 3

# A benchmark, not a test (it replaces the local cloud): a fresh and a repeated `tfprov run node` beside a plain script
# installing the same stack on a fresh node, interleaved, through the same caches.
bench-node-vs-script: images
	$(BIN)/python bench/node_vs_script.py --rounds 3

# A benchmark, not a test: ansible-inventory over 1,000 instances in a local moto, cold and cached.
bench-inventory: venv
	$(BIN)/python bench/inventory_scale.py --instances 1000 --repeat 3

# Every integration test but the fault-injection, VM and DKMS ones (run by hand, below). `make test` runs them in two
# parts, one at the end of each molecule lane: the job tests (their own cloud, job-itjob; about a third of the time)
# after lane A's cluster scenario, the rest after lane B's scenarios.
INTEGRATION_MARKERS := integration and not cluster_faults and not vm and not vm_heavy
INTEGRATION_JOBS := tests/integration/test_e2e_job.py
integration: images serving-image baked-image
	$(BIN)/pytest -q -m "$(INTEGRATION_MARKERS)" --durations=25

integration-jobs: images baked-image
	$(BIN)/pytest -q -m "$(INTEGRATION_MARKERS)" --durations=10 $(INTEGRATION_JOBS)

integration-rest: images serving-image baked-image
	$(BIN)/pytest -q -m "$(INTEGRATION_MARKERS)" --durations=25 --ignore=$(INTEGRATION_JOBS)

# The local cloud's VM flavour: two Debian 12 VMs under QEMU (TCG), their reboots, cloud-init, the idle guard's
# poweroff and a baked image booted as a new node. Minutes of emulated CPU: run by hand (times in README).
test-vm: venv
	$(BIN)/pytest -q -s -m vm

# Whole nodes on VMs: a cluster converged (TensorFlow installed under emulation), its firewall across a reboot, a
# converged VM baked and adopted with nothing changed, the driver's DKMS module built for the VM's kernel.
test-vm-heavy: venv
	$(BIN)/pytest -q -s -m vm_heavy

# Faults injected into `tfprov run cluster` (a task killed mid-check, a re-run recovering, links slowed with tc, members
# failing the admission gate): minutes, not for every CI run.
cluster-faults: images baked-image
	$(BIN)/pytest -q -m cluster_faults

# CI's order. Three lanes start at once: lint with the collection build and the docs; the unit tests (one process);
# the node images, the wheelhouse and the serving image (network and disk; cached after the first run), after which
# the same lane starts the two molecule lanes (test-lanes) without waiting for the other two: lane A bakes the image
# and runs its molecule scenarios, the cluster scenario, then the job tests; lane B runs the other scenarios, then the
# other integration tests one at a time. (The molecule lanes used to wait for the unit tests as well, which left a core
# idle for the last four or five minutes of them.) Lane B's integration tests run beside lane A's scenarios and job
# tests: their local clouds (itest, itnet, itcache; the job tests' job-itjob) have names, subnets and ports of their
# own, and lane A's molecule nodes use none of them; the unit tests start no container and bind loopback ports the
# system picks. A failure in any lane fails `make test`. The docs
# extra goes into the venv before the lanes start: pip must not change packages under a running pytest. The oldest
# supported end (.venv-oldest: ansible-core 2.19, Ansible 12, Python 3.11) is made first too, and tested in each lane:
# its sanity after the newest's, its unit tests after the newest's, one node and one cluster run after the integration
# tests.
test: venv $(VENV)/.docs-extra venv-oldest
	$(call run_lane,checks,$(MAKE) --no-print-directory lint build docs sanity \
	  && $(MAKE) --no-print-directory sanity SANITY_VENV=$(VENV_OLDEST)) & c=$$!; \
	$(call run_lane,unit,$(MAKE) --no-print-directory unit e2e-local unit-oldest) & u=$$!; \
	( $(call run_lane,images,$(MAKE) --no-print-directory images wheelhouse serving-image) \
	  || { $(call lane_failed,make test: images$(,) wheelhouse or serving-image FAILED \
	         (lines starting with [lane images]),images); exit 1; }; \
	  $(MAKE) --no-print-directory test-lanes ) & m=$$!; \
	rc=0; wait $$c || rc=$$?; ru=0; wait $$u || ru=$$?; rm=0; wait $$m || rm=$$?; wait; \
	[ $$rc = 0 ] || $(call lane_failed,make test: lint$(,) build$(,) docs or sanity FAILED \
	                 (lines starting with [lane checks]),checks); \
	[ $$ru = 0 ] || $(call lane_failed,make test: the unit tests FAILED (lines starting with [lane unit]),unit); \
	[ $$rc = 0 ] && [ $$ru = 0 ] && [ $$rm = 0 ]

# make test's molecule lanes, which it starts once the images are there (run alone, it assumes they are).
# What each lane runs after its scenarios: A the job tests, B the other integration tests and the oldest end's runs.
TEST_LANE_A_TAIL := && $(MAKE) --no-print-directory integration-jobs
TEST_LANE_B_TAIL := && $(MAKE) --no-print-directory integration-rest e2e-oldest
test-lanes:
	$(call molecule_lanes,make test,$(TEST_LANE_B_TAIL),$(TEST_LANE_A_TAIL))

clean:
	rm -rf dist .tfprov .pytest_cache .ruff_cache
	-$(BIN)/tfprov down local
