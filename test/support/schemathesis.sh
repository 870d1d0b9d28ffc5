#!/usr/bin/env bash
# Runs schemathesis (pip package, in a cached venv) against the served OpenAPI documents of the relay and of
# the Agent, each on a devnet, and of Points and the Connector, each with a fresh database: fails on any 5xx
# or answer that does not match the document. Called by .ci/run.
# SCHEMATHESIS_EXAMPLES bounds the examples per operation (default 25: about a minute on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${SCHEMATHESIS_VENV:-.cache/schemathesis-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  if ! command -v python3 >/dev/null 2>&1; then
    echo "schemathesis: SKIPPED (python3 is not installed)"
    exit 0
  fi
  if ! python3 -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    echo "schemathesis: SKIPPED (python3 -m venv is not available: install python3-venv)"
    exit 0
  fi
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$VENV"
    echo "schemathesis: SKIPPED (pip is not available in the venv)"
    exit 0
  fi
fi
# One pinned version, so a run does not change with PyPI: the launchers bind known values (seeded bids, DID
# names) through its dictionaries, which older 4.x versions lack. A cached venv with another version is upgraded.
SCHEMATHESIS_VERSION=4.32.5
if [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" != "$SCHEMATHESIS_VERSION" ]; then
  "$VENV/bin/python" -m pip install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
fi
status=0
# Schemathesis closes with a pytest-style banner ("=== 2 warnings in 1.3s ===") that reads as a pytest run of no
# test: it is relabelled, so the run's only test-runner summary is the README's test command's.
relabel() { sed -E 's/^=+ (.*) =+$/schemathesis summary: \1/'; }
node --import tsx test/support/schemathesis-relay.ts "$VENV/bin/st" | relabel || status=$?
node --import tsx test/support/schemathesis-agent.ts "$VENV/bin/st" | relabel || status=$?
node --import tsx test/support/schemathesis-points.ts "$VENV/bin/st" | relabel || status=$?
node --import tsx test/support/schemathesis-connector.ts "$VENV/bin/st" | relabel || status=$?
exit "$status"
