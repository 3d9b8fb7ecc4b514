# tfprov developer and CI entry points. `make test` is what CI runs (see .ci/run and README).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
LINK := .tfprov/collections/ansible_collections/tfprov/gpu
ROLES_WITH_MOLECULE := $(patsubst roles/%/molecule,%,$(wildcard roles/*/molecule))

.PHONY: help venv collection-link engine images demo lint unit integration molecule build test clean

help:
	@echo "make demo   - set up and run preflight on 3 local container nodes"
	@echo "make test   - lint, unit tests, collection build, molecule, integration tests (what CI runs)"

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

demo: images
	$(BIN)/tfprov up local --nodes 3
	$(BIN)/tfprov run preflight -i inventories/local.docker_containers.yml

lint: venv
	rm -rf .ansible/collections/ansible_collections/tfprov  # ansible-lint's copy of this collection, maybe stale
	$(BIN)/yamllint -s .
	$(BIN)/ruff check src tests plugins bench
	$(BIN)/ansible-lint --offline --profile production

unit: venv
	$(BIN)/pytest -q -m "not integration"

build: venv
	rm -rf dist && $(BIN)/ansible-galaxy collection build --output-path dist .
	tests/check_tarball.sh $(CURDIR)/dist/tfprov-gpu-*.tar.gz

molecule: images
	for role in $(ROLES_WITH_MOLECULE); do (cd roles/$$role && $(BIN)/molecule test --all) || exit 1; done

integration: images
	$(BIN)/pytest -q -m integration

test: lint unit build molecule integration

clean:
	rm -rf dist .tfprov .pytest_cache .ruff_cache
	-$(BIN)/tfprov down local
