# The two commands a newcomer needs: `make demo` and `make test`. Both create the virtualenv and install first.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEV_STAMP := $(VENV)/.installed-dev
SPEECH_STAMP := $(VENV)/.installed-speech

.PHONY: test demo lint typecheck unit template system-deps bench clean

test: $(DEV_STAMP) system-deps lint typecheck unit template

demo: $(SPEECH_STAMP)
	$(VENV)/bin/voicebridge demo --report out/demo-report.json

bench: $(DEV_STAMP) system-deps
	$(VENV)/bin/voicebridge bench

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check src tests bench

typecheck: $(DEV_STAMP)
	$(VENV)/bin/mypy

unit: $(DEV_STAMP) system-deps
	$(VENV)/bin/pytest -q

template: $(DEV_STAMP)
	$(VENV)/bin/cfn-lint template.yaml

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

$(SPEECH_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev,speech]'
	touch $@ $(DEV_STAMP)

# ffprobe checks the prompts we write; mkvtoolnix writes and reads Matroska for the cross-checks.
system-deps:
	@if ! command -v ffprobe >/dev/null || ! command -v mkvmerge >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg mkvtoolnix >/dev/null; \
	  else \
	    echo "install ffmpeg and mkvtoolnix (sudo apt-get install ffmpeg mkvtoolnix)"; exit 1; \
	  fi; \
	fi

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache out .aws-sam
