#!/usr/bin/env bash
# Issue 13 on one GPU machine, in one command: the whole test suite on CUDA, then kiln against JAX on
# the same card. See usage() below and the README (section "GPU").
set -euo pipefail

usage() {
    cat <<'EOF'
usage: tools/gpu_check.sh OUTDIR

Installs kiln (editable, no dependencies, no network) into python3, records the machine
(nvidia-smi, kiln's devices), runs the whole test suite with KILN_TEST_BACKEND=cuda, then the GPU
benchmarks (benchmarks/run.py --gpu --backend cuda). Keeps going after failures; exits nonzero if
anything failed. Everything it writes goes to OUTDIR:

  env.txt      versions, nvidia-smi, kiln's devices, how kiln was made importable
  pytest.log   the test run (also on the console); junit.xml: its JUnit report
  bench.md     the benchmark table; bench.log: its progress lines (one per benchmark)
  summary.txt  one line per phase: status and seconds

Environment:
  GPU_CHECK_ONLY=tests|bench   run one half only
  PYTEST_ARGS='...'            extra pytest arguments, shell-quoted (-k 'not slow', a list of files)
  BENCH_ARGS='...'             extra benchmarks/run.py arguments (--quick, --rounds 1, -k SELU)
  GPU_CHECK_BACKEND=cuda       the backend under test (cpu: try this script on a machine without GPU)
  GPU_CHECK_TIME_S=560         the whole run's time budget in seconds; the tests stop (SIGINT: their
                               report is still written) in time to leave GPU_CHECK_BENCH_S=200 to the
                               benchmarks. Set under the caller's own limit (10 minutes a command).
  GPU_CHECK_TEST_TIMEOUT_S=180 one test's limit, applied only where pytest-timeout is installed
  PYTHON=python3               the interpreter to use
  GPU_CHECK_NO_INSTALL=1       do not pip install: make kiln importable through PYTHONPATH only (what
                               the script falls back to when the install fails)
A wheels/ folder in the repository, if present, supplies what python3 lacks (setuptools for the
editable install, pytest-timeout) with pip --no-index.
EOF
}

if [[ $# -eq 1 && ( $1 == -h || $1 == --help ) ]]; then
    usage
    exit 0
fi
if [[ $# -ne 1 || -z $1 ]]; then
    usage >&2
    exit 2
fi

ONLY=${GPU_CHECK_ONLY:-}
case $ONLY in
    "" | tests | bench) ;;
    *) echo "gpu_check.sh: GPU_CHECK_ONLY must be 'tests' or 'bench', got '$ONLY'" >&2; exit 2 ;;
esac
BACKEND=${GPU_CHECK_BACKEND:-cuda}
TIME_S=${GPU_CHECK_TIME_S:-560}
BENCH_S=${GPU_CHECK_BENCH_S:-200}
TEST_TIMEOUT_S=${GPU_CHECK_TEST_TIMEOUT_S:-180}
PY=${PYTHON:-python3}
for n in "$TIME_S" "$BENCH_S" "$TEST_TIMEOUT_S"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "gpu_check.sh: time budgets are whole seconds, got '$n'" >&2; exit 2; }
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
cd "$REPO"
: >"$OUT/summary.txt"
FAILED=0

say() { printf '\n=== %s (%ds)\n' "$*" "$SECONDS"; }
record() {  # record PHASE STATUS: a line in summary.txt; any status but "ok" fails the run
    printf '%-8s %-40s %4ds\n' "$1" "$2" "$SECONDS" | tee -a "$OUT/summary.txt"
    [[ $2 == ok* ]] || FAILED=1
}

# Both kiln and jax create a GPU client in the same process (the benchmarks, jax-comparing tests), and
# tests start fresh interpreters while pytest holds its own client: with XLA's default preallocation
# (75% of the GPU's memory per client) the second one runs out. Both libraries read this variable.
export XLA_PYTHON_CLIENT_PREALLOCATE=${XLA_PYTHON_CLIENT_PREALLOCATE:-false}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONUNBUFFERED=1

# -- 1. install ----------------------------------------------------------------------------------------
say "install kiln into $($PY -c 'import sys; print(sys.executable)')"
# What pyproject.toml needs: jaxlib, numpy (ml_dtypes comes with jaxlib) to run; pytest, scipy to test;
# setuptools>=70.1 (or >=64 with wheel) for the editable install without build isolation; jax for the
# benchmarks; pytest-timeout, optional.
missing() {
    "$PY" - "$@" <<'EOF'
import importlib.metadata as md
import importlib.util
import sys

MODULE = {"pytest-timeout": "pytest_timeout", "ml-dtypes": "ml_dtypes"}
out = []
for dist in sys.argv[1:]:
    if importlib.util.find_spec(MODULE.get(dist, dist)) is None:
        out.append(dist)
    elif dist == "setuptools":  # PEP 660 needs 64; bdist_wheel is built in from 70.1, before it needs wheel
        version = tuple(int(p) for p in md.version("setuptools").split(".")[:2] if p.isdigit())
        if version < (64,) or (version < (70, 1) and importlib.util.find_spec("wheel") is None):
            out.append(dist)
print(" ".join(out))
EOF
}
REQUIRED="numpy jaxlib ml-dtypes pytest scipy"
OPTIONAL="setuptools jax pytest-timeout"
if [[ -d wheels ]]; then
    want=()
    for dist in $(missing $REQUIRED $OPTIONAL); do
        # only what wheels/ has (file names use underscores: pytest_timeout-2.4.0-py3-none-any.whl)
        if compgen -G "wheels/${dist//-/_}-*.whl" >/dev/null; then
            [[ $dist == setuptools ]] && want+=("setuptools>=70.1") || want+=("$dist")
        fi
    done
    if [[ ${#want[@]} -gt 0 ]]; then
        echo "from wheels/: ${want[*]}"
        "$PY" -m pip install -q --upgrade --no-index --find-links wheels/ "${want[@]}" \
            || echo "pip could not install ${want[*]} from wheels/ (going on)"
    fi
fi
still=$(missing $REQUIRED) || still="(cannot tell: $PY failed)"
if [[ -n $still ]]; then
    echo "missing, and not in wheels/: $still"
    record install "missing: $still"
fi

# kiln's own folders map to kiln.frontend/lowering/runtime, so the repository root on sys.path is not
# enough. An editable install makes the mapping; where pip cannot install (no setuptools, a read-only or
# externally managed Python), a sitecustomize on PYTHONPATH makes the same mapping for this run only.
importable_here() {
    (cd / && "$PY" -c 'import os, sys, kiln, kiln.frontend
ok = os.path.realpath(kiln.__file__).startswith(os.path.realpath(sys.argv[1]) + os.sep)
sys.exit(0 if ok else 1)' "$REPO") >/dev/null 2>&1
}
HOW="editable install"
if [[ -n ${GPU_CHECK_NO_INSTALL:-} ]] \
    || ! "$PY" -m pip install -q --no-deps --no-build-isolation -e . 2>"$OUT/pip.err" || ! importable_here; then
    [[ -s $OUT/pip.err ]] && tail -n 4 "$OUT/pip.err" >&2
    STAGE=$(mktemp -d "${TMPDIR:-/tmp}/kiln_gpu_check.XXXXXX")
    trap 'rm -rf "$STAGE"' EXIT
    cat >"$STAGE/sitecustomize.py" <<EOF
# Written by tools/gpu_check.sh: kiln's package-dir mapping (pyproject.toml) without an install.
import importlib.machinery
import importlib.util
import os
import sys
import tomllib

_REPO = $("$PY" -c 'import sys; print(repr(sys.argv[1]))' "$REPO")
with open(os.path.join(_REPO, "pyproject.toml"), "rb") as f:
    _MAP = {name: os.path.join(_REPO, folder)
            for name, folder in tomllib.load(f)["tool"]["setuptools"]["package-dir"].items()}


class _KilnFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        folder = _MAP.get(name)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])


sys.meta_path.insert(0, _KilnFinder)
# Run the sitecustomize this one hides, if there is one.
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
EOF
    export PYTHONPATH="$STAGE${PYTHONPATH:+:$PYTHONPATH}"
    HOW="no install: PYTHONPATH=$STAGE (a sitecustomize maps kiln's folders)"
    [[ -n ${GPU_CHECK_NO_INSTALL:-} ]] || HOW+="; pip failed, see pip.err"
fi
if importable_here; then
    record install "ok ($HOW)"
else
    record install "kiln not importable"
fi

# -- 2. the machine ------------------------------------------------------------------------------------
say "machine"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "repo: $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
    echo "kiln: $HOW"
    echo "XLA_PYTHON_CLIENT_PREALLOCATE=$XLA_PYTHON_CLIENT_PREALLOCATE"
    "$PY" -m pip list 2>/dev/null \
        | grep -i -E '^(jax|jaxlib|kiln|numpy|ml.dtypes|scipy|pytest|nvidia|setuptools)' || true
    echo
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi 2>&1 || true
    else
        echo "nvidia-smi: not found"
    fi
    echo
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# kiln's device list, and the backend under test must be there (else every test would fail alike).
if "$PY" - "$BACKEND" 2>&1 <<'EOF' | tee -a "$OUT/env.txt"; then
import sys

import kiln

print("kiln.devices():", kiln.devices())
print("default backend:", kiln.default_backend())
devices = kiln.devices(sys.argv[1])
print(f"kiln.devices({sys.argv[1]!r}):", devices, "-", devices[0].device_kind)
EOF
    record devices "ok ($BACKEND)"
else
    record devices "no $BACKEND device in kiln"
fi

# -- 3. the test suite ---------------------------------------------------------------------------------
# A time budget, so that the benchmarks still run: at the deadline pytest gets SIGINT, stops, prints its
# summary and writes junit.xml; 30 s later a hang is killed.
budget() {  # budget RESERVE: seconds left before the deadline, less RESERVE (at least 30)
    local left=$((TIME_S - SECONDS - $1))
    echo $((left > 30 ? left : 30))
}
limit() {  # limit SECONDS CMD...: CMD under timeout(1) when there is one
    if command -v timeout >/dev/null; then
        local s=$1
        shift
        timeout --signal=INT --kill-after=30 "$s" "$@"
    else
        shift
        "$@"
    fi
}
if [[ $ONLY != bench ]]; then
    reserve=$([[ $ONLY == tests ]] && echo 5 || echo "$BENCH_S")
    t=$(budget "$reserve")
    extra=()
    mapfile -d '' extra < <("$PY" -c 'import os, shlex, sys
sys.stdout.write("".join(a + "\0" for a in shlex.split(os.environ.get("PYTEST_ARGS", ""))))')
    if "$PY" -c 'import pytest_timeout' 2>/dev/null; then
        extra=(--timeout="$TEST_TIMEOUT_S" "${extra[@]}")
    fi
    say "tests: KILN_TEST_BACKEND=$BACKEND pytest ${extra[*]} (at most ${t}s)"
    rc=0
    KILN_TEST_BACKEND=$BACKEND limit "$t" "$PY" -m pytest -q -p no:cacheprovider --color=no --durations=25 \
        --junitxml="$OUT/junit.xml" "${extra[@]}" 2>&1 | tee "$OUT/pytest.log" || rc=$?
    case $rc in
        0) record tests ok ;;
        124) record tests "stopped at the time budget (${t}s)" ;;
        *) record tests "failed (pytest rc=$rc)" ;;
    esac
fi

# -- 4. the benchmarks ---------------------------------------------------------------------------------
if [[ $ONLY != tests ]]; then
    bench=()
    mapfile -d '' bench < <("$PY" -c 'import os, shlex, sys
sys.stdout.write("".join(a + "\0" for a in shlex.split(os.environ.get("BENCH_ARGS", ""))))')
    "$PY" -c 'import jax' 2>/dev/null || echo "jax is not importable: the benchmarks measure kiln alone"
    t=$(budget 5)
    say "benchmarks: run.py --gpu --backend $BACKEND ${bench[*]} (at most ${t}s)"
    rc=0
    limit "$t" "$PY" benchmarks/run.py --gpu --backend "$BACKEND" "${bench[@]}" \
        2> >(tee "$OUT/bench.log" >&2) | tee "$OUT/bench.md" || rc=$?
    case $rc in
        0) record bench ok ;;
        124) record bench "stopped at the time budget (${t}s)" ;;
        *) record bench "failed (rc=$rc)" ;;
    esac
fi

say "summary (in $OUT)"
cat "$OUT/summary.txt"
exit "$FAILED"
