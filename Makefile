# The two commands of the README: `make book` and `make test`. Both set up .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: book test setup sync refresh clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

## make book: execute every chapter on the local CPU and build the HTML book (warnings are errors)
book: $(STAMP)
	rm -rf _build/.jupyter_cache
	$(BIN)/jupyter-book build . -W -n --keep-going --all
	@$(BIN)/python -m x4lib check-claims book/ --counts-out _build/claims-counts.json \
	  || echo "WARNING: uncited claims above (make test fails on them)"
	@echo "Book built: $(CURDIR)/_build/html/index.html"

## make test: unit tests, nbval over the theory notebooks, pair sync check and the strict build
test: $(STAMP)
	$(BIN)/python -m pytest

## make sync: push edits of book/*.md into notebooks/*.ipynb (keeps outputs)
sync: $(STAMP)
	$(BIN)/python -m x4lib.nbtools sync

## make refresh: re-execute the theory notebooks so their reference outputs match (after an intended change)
refresh: $(STAMP)
	$(BIN)/python -m x4lib.nbtools refresh

clean:
	rm -rf _build out
