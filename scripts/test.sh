#!/usr/bin/env bash
# The one test command. The README's quick start and .ci/run both run this script,
# so the two can never drift: install the package with its test and CUDA-compile
# extras, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -e ".[test,cuda]"
python -m pytest -q "$@"
