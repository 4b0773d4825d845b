# The two commands a newcomer needs: `make demo` and `make test`. Both create the virtualenv and install first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEV_STAMP := $(VENV)/.installed-dev
SPEECH_STAMP := $(VENV)/.installed-speech

# Deployment tools pin their own boto3 and many other packages, so each gets a virtualenv of its own. Checkov's sits
# inside .venv-sam's folder so that one ignored folder holds both.
SAM_VENV ?= .venv-sam
CHECKOV_VENV ?= $(SAM_VENV)/checkov
SAM_CLI_VERSION ?= 1.170.0
CHECKOV_VERSION ?= 3.3.30
SAM_STAMP := $(SAM_VENV)/.installed-sam-$(SAM_CLI_VERSION)
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-checkov-$(CHECKOV_VERSION)
# Karpenter's and KEDA's resource schemas for deploy/eks/ (npm packages generated from each project's API types),
# beside the other tools in the one ignored folder.
K8S_MODELS_DIR ?= $(SAM_VENV)/k8s-models
K8S_MODELS := @kubernetes-models/karpenter@2.0.0 @kubernetes-models/keda@2.0.0
K8S_MODELS_STAMP := $(K8S_MODELS_DIR)/.installed-karpenter-2.0.0-keda-2.0.0
# `sam build` runs src/runtime/Makefile, which installs each function's requirements and compiles its bytecode with
# the Lambda runtime's Python; it must be on PATH, and on a pyenv machine PYENV_VERSION exposes it next to the default
# one. No telemetry, and a region for an offline validate.
LAMBDA_PYTHON := python3.13
SAM_PYENV_VERSION ?= 3.11.7:3.12.1:3.13.0
SAM_ENV := SAM_CLI_TELEMETRY=0 AWS_DEFAULT_REGION=$${AWS_DEFAULT_REGION:-us-east-1} PYENV_VERSION=$(SAM_PYENV_VERSION)

.PHONY: test check tools demo lint typecheck unit integration artifact template sam-validate sam-build checkov flows-sync \
	system-deps models bench clean eks-manifests eks-render a2a-image first-stage

# Everything. First what the integration tests need (the project's virtualenv, the system packages, the models); then
# the integration tests (the local cloud, the longest: they mostly wait on its timers, about one core of the two) at
# normal priority, and beside them, at the lowest CPU priority (first-stage), every other check on two lines that each
# run in order (FIRST_STAGE below): the unit tests; and the deployment tools' virtualenvs and what needs them — lint
# and types, the template and manifests checked, the Lambda artifacts as `sam build` makes them, checkov. Each line is
# mostly one core's work, done on the CPU the integration tests leave. Each part's output is shown when it ends.
# Before the simulator's virtual clock let a reply's next sentence be made while its prompt played, a whole call's
# reply came seconds late beside them, and they ran after, alone: two and a half minutes more (docs/development.md).
FIRST_STAGE_GOALS := unit check tools template eks-manifests sam-validate artifact checkov
test:
	$(MAKE) --no-print-directory -j2 $(DEV_STAMP) system-deps models
	@echo "make test: the integration tests, every other check beside them; each one's output when it ends"
	$(MAKE) --no-print-directory -j2 --output-sync=target integration first-stage

# The first stage's lines at the lowest CPU priority, two jobs of their own (MAKEFLAGS cleared: not the caller's jobs).
# In a session of its own, its autogroup at nice 19 too (tools/lowest_priority.py): Linux shares the CPU between
# sessions before it applies nice, and a `nice -n 19` here took as much of it as a busy Lambda container.
first-stage:
	MAKEFLAGS= $(PYTHON) tools/lowest_priority.py $(MAKE) --no-print-directory -j2 FIRST_STAGE=1 $(FIRST_STAGE_GOALS)

ifdef FIRST_STAGE
unit: | system-deps
$(SAM_STAMP): | system-deps
$(CHECKOV_STAMP): | $(SAM_STAMP)
$(K8S_MODELS_STAMP): | $(CHECKOV_STAMP)
lint: | $(K8S_MODELS_STAMP)
typecheck: | lint
template: | typecheck
eks-manifests: | template
sam-validate: | eks-manifests
sam-build: | sam-validate
eks-render: | artifact
endif

tools: $(SAM_STAMP) $(CHECKOV_STAMP) $(K8S_MODELS_STAMP)

# The voice-activity and end-of-turn models with their licences, from pinned registry wheels into the ignored
# src/runtime/voicebridge/models/ (src/runtime/fetch_models.py): the tests, benchmarks and the demo run them. Files,
# not a step run every time: once they are there, what needs them starts at once (a `models` still running when
# `make -j2` first reached the unit tests put them behind every other job of the first stage).
MODEL_FILES := src/runtime/voicebridge/models/silero_vad.onnx src/runtime/voicebridge/models/smart-turn-v3.2-cpu.onnx
models: $(MODEL_FILES)

$(MODEL_FILES) &: src/runtime/fetch_models.py | $(DEV_STAMP)
	$(MAKE) --no-print-directory -C src/runtime models PYTHON=$(abspath $(PY))
	touch $(MODEL_FILES)

# The quick loop while working: lint, types and the unit tests, no local cloud.
check: $(DEV_STAMP) models lint typecheck unit

demo: $(SPEECH_STAMP) models
	$(VENV)/bin/voicebridge demo --report out/demo-report.json

# bench/bench_coldstart.py times the Lambda runtime's Python (python3.13), exposed as for sam build; the transports and
# end-of-turn benches speak and recognise with the offline speech engines (the `speech` extra), as the demo does.
bench: $(SPEECH_STAMP) system-deps models
	PYENV_VERSION=$(SAM_PYENV_VERSION) $(VENV)/bin/voicebridge bench

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check src tests bench tools
	$(VENV)/bin/ruff format --check src tests bench tools

typecheck: $(DEV_STAMP)
	$(VENV)/bin/mypy

# Tests are marked by folder (tests/conftest.py): anything under an integration/ folder needs the local cloud. Run
# alone (make unit, make check) they take UNIT_WORKERS processes: two took 61 s on two cores, one 101 s. In make
# test's first stage they run in one, a line beside the other: two workers' start-up and second collection there made
# the stage longer.
UNIT_WORKERS ?= 2
unit: $(DEV_STAMP) models
	$(VENV)/bin/pytest -q -m unit $(addprefix --ignore=,$(INTEGRATION_DIRS)) \
	  $(if $(FIRST_STAGE),,$(if $(filter 0 1,$(UNIT_WORKERS)),,-n $(UNIT_WORKERS)))

# They mostly wait on the local cloud's timers, so they run in worker processes, each with a local cloud of its own;
# a test file stays on one worker, so its module fixtures are built once. Four workers on two cores: the waits
# overlap (the four used 0.9-1.2 of the two cores on average), and with a busy loop holding one of the two cores the
# real-time tests kept their pace in two runs and one missed it in a third (docs/development.md). The stage is the
# tests' own time over the workers (about 1,640 s): five took 357-385 s against 422-442 s, but in one of three quiet
# fresh runs a whole call's first answer came late at their start. INTEGRATION_WORKERS=3 if a machine's other work
# makes calls late.
# INTEGRATION_WORKERS=0 runs them in one. The slowest ten are named at the end of every run. Files are handed out in
# collection order, where tests/conftest.py puts the longest first (xdist's own order, by number of tests, left the
# longest single tests to run alone at the end), in an order that keeps the calls' CPU on the line at once in bounds.
# Each worker collects only the integration folders: collecting every test, the unit tests' modules imported four
# times over on two cores, held the workers' start 20 s.
INTEGRATION_WORKERS ?= 4
INTEGRATION_DIRS := $(wildcard tests/*/integration)
integration: $(DEV_STAMP) system-deps models
	$(VENV)/bin/pytest -q -m integration --durations=10 $(INTEGRATION_DIRS) \
	  $(if $(filter 0,$(INTEGRATION_WORKERS)),,-n $(INTEGRATION_WORKERS) --dist loadfile --no-loadscope-reorder)

# What `sam build` put in each function's folder: the runtime alone (tests/artifact, skipped without a build).
artifact: sam-build
	VOICEBRIDGE_BUILD_DIR=.aws-sam/build $(VENV)/bin/pytest -q -m artifact tests/artifact

# The optional self-managed Sonic fleet and the streaming agent server (deploy/) are stacks of their own: linted,
# validated and scanned alike.
SONIC_STACK := deploy/sonic-self-managed.yaml
A2A_STACK := deploy/a2a-streaming.yaml

template: $(DEV_STAMP)
	$(VENV)/bin/cfn-lint template.yaml $(SONIC_STACK) $(A2A_STACK)
	$(VENV)/bin/voicebridge flows validate
	$(PY) tools/flows_sync.py --check

sam-validate: $(SAM_STAMP)
	$(SAM_ENV) $(SAM_VENV)/bin/sam validate --lint
	$(SAM_ENV) $(SAM_VENV)/bin/sam validate --lint --template-file $(SONIC_STACK)
	$(SAM_ENV) $(SAM_VENV)/bin/sam validate --lint --template-file $(A2A_STACK)

# After the models are fetched: sam build copies src/runtime, models folder and all, for TranscribeStreamFunction.
sam-build: $(SAM_STAMP) models
	@$(SAM_ENV) $(LAMBDA_PYTHON) --version >/dev/null 2>&1 || { \
	  echo "sam build needs $(LAMBDA_PYTHON) on PATH (the Lambda runtime's Python): install it, or on a pyenv" \
	       "machine set SAM_PYENV_VERSION to installed versions that include it" >&2; exit 1; }
	$(SAM_ENV) $(SAM_VENV)/bin/sam build --build-dir .aws-sam/build

# The EKS manifests are scanned as rendered, each overlay one file: checkov's kustomize framework needs the kustomize
# binary. Its skips are annotations on the resources, each with its reason.
checkov: $(CHECKOV_STAMP) eks-render
	$(CHECKOV_VENV)/bin/checkov --file template.yaml --file $(SONIC_STACK) --file $(A2A_STACK) \
	  --framework cloudformation --skip-download --compact --quiet
	$(CHECKOV_VENV)/bin/checkov --directory $(EKS_RENDERED) --framework kubernetes --skip-download --compact --quiet

# deploy/eks/: every overlay rendered and checked against the Kubernetes schemas of the EKS versions in standard
# support and Karpenter's and KEDA's (make unit runs the same tests, less the latter, which need the npm packages).
EKS_OVERLAYS := $(notdir $(wildcard deploy/eks/overlays/*))
EKS_RENDERED := out/eks
eks-manifests: $(DEV_STAMP) $(K8S_MODELS_STAMP)
	VOICEBRIDGE_K8S_MODELS=$(K8S_MODELS_DIR) $(VENV)/bin/pytest -q tests/deploy/test_eks_manifests.py

eks-render: $(DEV_STAMP)
	@mkdir -p $(EKS_RENDERED)
	@for overlay in $(EKS_OVERLAYS); do \
	  $(VENV)/bin/voicebridge sonic manifests deploy/eks/overlays/$$overlay --allow-placeholders \
	    > $(EKS_RENDERED)/$$overlay.yaml || exit 1; \
	done

# The streaming agent server's container image (deploy/a2a/Dockerfile, ARM64), with whichever engine is installed;
# push it to the ECR repository deploy/a2a-streaming.yaml's ImageRepositoryName names (docs/deploying.md).
A2A_IMAGE ?= voicebridge-a2a:latest
A2A_ENGINE ?= $(firstword $(foreach engine,docker podman finch buildah,$(if $(shell command -v $(engine)),$(engine))))
a2a-image: models
	@test -n "$(A2A_ENGINE)" || { echo "a2a-image needs a container engine: install docker, podman, finch or buildah" \
	  "(or set A2A_ENGINE)" >&2; exit 1; }
	$(A2A_ENGINE) build --platform linux/arm64 --file deploy/a2a/Dockerfile --tag $(A2A_IMAGE) .

# Rewrites the contact flows embedded in template.yaml from contact_flows/*.json.
flows-sync: $(DEV_STAMP)
	$(PY) tools/flows_sync.py

# Every virtualenv installs with --no-compile: compiling every module of every package was a third of the project's
# install, and what a run imports is compiled as it first does.
$(SAM_STAMP):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet --no-compile aws-sam-cli==$(SAM_CLI_VERSION)
	touch $@

$(CHECKOV_STAMP):
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --no-compile checkov==$(CHECKOV_VERSION)
	touch $@

$(K8S_MODELS_STAMP):
	@command -v npm >/dev/null || { echo "the EKS manifests' Karpenter and KEDA schemas need Node.js and npm" >&2; exit 1; }
	mkdir -p $(K8S_MODELS_DIR)
	npm install --prefix $(K8S_MODELS_DIR) --no-save --no-audit --no-fund --ignore-scripts --loglevel=error $(K8S_MODELS)
	touch $@

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	touch $@

$(SPEECH_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --no-compile -e '.[dev,speech]'
	touch $@ $(DEV_STAMP)

# ffprobe checks the prompts we write; mkvtoolnix writes and reads Matroska for the cross-checks; espeak-ng speaks
# Spanish for the simulated caller, the emulated Sonic and the end-of-turn benchmark.
system-deps:
	@if ! command -v ffprobe >/dev/null || ! command -v mkvmerge >/dev/null || ! command -v espeak-ng >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg mkvtoolnix espeak-ng >/dev/null; \
	  else \
	    echo "install ffmpeg, mkvtoolnix and espeak-ng (sudo apt-get install ffmpeg mkvtoolnix espeak-ng)"; exit 1; \
	  fi; \
	fi

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache out .aws-sam
