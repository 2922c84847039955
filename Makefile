# Two entry points a person needs: `make demo` and `make test`. Both set up what they need.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_PY := $(VENV)/.stamp-python
STAMP_SYS := $(VENV)/.stamp-system
# A real ActivityWatch server for the sync tests, in its own venv (its Flask pins must not meet Dagster's).
AW_VENV := .venv-aw
STAMP_AW := $(AW_VENV)/.stamp
APT_PACKAGES := chromium chromium-driver xvfb xdotool openbox x11-utils postgresql redis-server

.PHONY: demo test setup setup-system lint typecheck bench clean

demo: $(STAMP_PY)
	$(BIN)/af demo

test: $(STAMP_PY) $(STAMP_SYS) $(STAMP_AW)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -p no:cacheprovider -n auto --maxprocesses 4 --dist loadfile

setup: $(STAMP_PY) $(STAMP_SYS) $(STAMP_AW)

# peewee 4 returns datetimes where aw-server 0.12's peewee storage parses strings (500 on every call)
$(STAMP_AW):
	test -x $(AW_VENV)/bin/python || $(PY) -m venv $(AW_VENV)
	$(AW_VENV)/bin/python -m pip install -q 'aw-server==0.12.0' 'aw-client==0.5.15' 'peewee>=3.17,<4'
	touch $@

$(STAMP_PY): pyproject.toml af_pipeline/compiler/_speedups.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@# the distribution was called activity-frames before (another project's name on PyPI)
	$(BIN)/python -m pip uninstall -q -y activity-frames 2>/dev/null || true
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

# Browser and virtual X server for the replay and recorder tests, PostgreSQL and Redis for the team tests
# (Debian packages; needs root).
$(STAMP_SYS):
	@if command -v chromium >/dev/null && command -v Xvfb >/dev/null && command -v xdotool >/dev/null && command -v openbox >/dev/null && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v redis-server >/dev/null; then \
		echo "system packages present"; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(APT_PACKAGES); \
	else \
		echo "missing system packages ($(APT_PACKAGES)); install them as root: apt-get install $(APT_PACKAGES)" >&2; exit 1; \
	fi
	mkdir -p $(VENV) && touch $@

lint: $(STAMP_PY)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: $(STAMP_PY)
	$(BIN)/mypy

bench: $(STAMP_PY)
	$(BIN)/python -m bench

clean:
	rm -rf af-demo .bench
