# The commands of the README: `make book`, `make test` and `make lab`. Both set up .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: book book-clean test test-fast lab setup sync refresh clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

## make book: build the HTML book (warnings are errors). Pages execute through the notebook cache: a page runs
## again only when its code cells changed. `make book-clean` forces every page to run (x4lib or data edits).
book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going --all
	@$(BIN)/python -m x4lib check-claims book/ --counts-out _build/claims-counts.json \
	  || echo "WARNING: uncited claims above (make test fails on them)"
	@echo "Book built: $(CURDIR)/_build/html/index.html"

## make book-clean: clear the notebook cache, then build: every page executes (the labs measure this CPU again)
book-clean: $(STAMP)
	rm -rf _build/.jupyter_cache
	$(MAKE) book

## make test: the full gate CI runs (unit tests, nbval, pair sync, one forced strict build, the browser test)
test: $(STAMP)
	$(BIN)/python -m pytest

## make test-fast: everything but the book build and the browser, for the edit loop
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not build and not browser"

## make lab: JupyterLab on http://127.0.0.1:8888 (token in the printed URL), opening the book's front page; the
## chapters (book/*.md) open as notebooks through jupytext and save back to their pair, so the explorers run live
lab: $(STAMP)
	$(BIN)/jupyter lab --config=jupyter/jupyter_server_config.py

## make sync: push edits of book/*.md into notebooks/*.ipynb (keeps outputs)
sync: $(STAMP)
	$(BIN)/python -m x4lib.book.nbtools sync

## make refresh: re-execute the theory notebooks so their reference outputs match (after an intended change)
refresh: $(STAMP)
	$(BIN)/python -m x4lib.book.nbtools refresh

clean:
	rm -rf _build out
