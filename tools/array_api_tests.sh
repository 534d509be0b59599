#!/usr/bin/env bash
# data-apis/array-api-tests on kiln.numpy (and, for the comparison, on jax.numpy) with one set of options.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: tools/array_api_tests.sh SUITE_DIR MODULE OUT_PREFIX

SUITE_DIR    a checkout of github.com/data-apis/array-api-tests with its array-api submodule
             (the spec) in SUITE_DIR/array-api
MODULE       the namespace under test: kiln.numpy, or jax.numpy for the comparison
OUT_PREFIX   writes OUT_PREFIX.txt (pytest's output) and OUT_PREFIX.json (pytest-json-report)

The interpreter is $PYTHON (default python3); it needs kiln (or jax), pytest, hypothesis, ndindex and
pytest-json-report. Options, the same for every module: 64-bit types on (KILN_ENABLE_X64=1,
JAX_ENABLE_X64=1, as JAX's own CI runs the suite), standard version 2024.12, --max-examples=5
--derandomize --disable-deadline, CPU only. No skips file: every failure counts.
USAGE
}

[[ $# -eq 3 ]] || { usage >&2; exit 2; }
suite=$(cd "$1" && pwd)
module=$2
out=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
[[ -d "$suite/array_api_tests" && -d "$suite/array-api/spec" ]] || {
    echo "error: $suite is not an array-api-tests checkout with its array-api submodule" >&2; exit 2; }

cd "$suite"
export KILN_ENABLE_X64=1 JAX_ENABLE_X64=1 JAX_PLATFORMS=cpu KILN_PLATFORMS=cpu
export ARRAY_API_TESTS_MODULE="$module" ARRAY_API_TESTS_VERSION=2024.12
"${PYTHON:-python3}" -m pytest array_api_tests -q -p no:cacheprovider --max-examples=5 --derandomize \
    --disable-deadline -rfE --tb=line -W ignore::UserWarning \
    --json-report --json-report-file="$out.json" > "$out.txt" 2>&1 || true
tail -n 1 "$out.txt"
