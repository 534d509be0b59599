"""Project tasks. Each session makes its own virtual environment and installs what it needs.

    python3 -m pip install nox
    python3 -m nox -s tests            # the pytest suite on all cores (arguments after -- go to pytest;
                                       # -- -n 0 or KILN_TEST_WORKERS=0: serially)
    python3 -m nox -s demo             # examples/mlp.py: the training demo
    python3 -m nox -s examples         # every example under examples/, small sizes
    python3 -m nox -s bench            # benchmarks/run.py: kiln against JAX
    python3 -m nox -s against_jax      # the tests that compare with JAX/optax (they skip without them)
    python3 -m nox -s lint             # ruff check .

Sessions use the interpreter that runs nox (no ``python=`` given). ``KILN_TEST_BACKEND=cuda``
and the other ``KILN_*`` variables pass through to the sessions; ``KILN_TEST_WORKERS=N`` sets the
tests session's number of pytest-xdist workers (default: one per CPU; one process with
``KILN_TEST_BACKEND`` set to an accelerator).
"""
from __future__ import annotations

import os
import pathlib

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests"]


# How the tests session spreads tests over its pytest-xdist workers. Measured on the 2-core CI machine (one
# run each, from a fresh clone; pytest's times): --dist load 565 s, --dist worksteal 712 s, serially 829 s.
# A weak comparison: in the worksteal run the slowest tests took 2-3x their times of the load run (the shared
# machine was busier then).
# loadfile and loadscope were not measured (the suite has no test classes: the two are the same here).
TEST_DIST = "load"

# The optax release kiln.optim follows (its API, state layouts and rounding)
OPTAX_VERSION = "0.2.8"


def _install_kiln(session: nox.Session, extras: str = "") -> None:
    """Install kiln (editable, with ``extras``) and compile its modules to bytecode once.

    An editable install leaves kiln's sources uncompiled, and where ``PYTHONDONTWRITEBYTECODE`` is set (as on the
    CI machine) no interpreter writes the bytecode it compiles: every test worker and every fresh interpreter a
    test starts compiled all of kiln again, about 3 s each. Measured on the 2-core machine, tests/runtime's
    test_backends, test_tracebacks and test_plugins (many fresh interpreters): 246 s without the bytecode, 110 s
    with it. compileall writes it regardless (about 3 s); Python reads it either way and recompiles a module whose
    source changed."""
    session.install("-e", f".[{extras}]" if extras else ".")
    session.run("python", "-m", "compileall", "-q", "-j", "0", "kiln", "frontend", "lowering", "runtime",
                silent=True)


def _install_jax(session: nox.Session, *others: str) -> None:
    """Install the jax release matching the jaxlib kiln was installed with, and ``others``. The version is read by
    ``run_install`` under ``--install-only`` (where ``session.run`` runs nothing) and by ``session.run`` under
    ``--no-install``/``-R`` (where ``run_install`` runs nothing)."""
    read = ("python", "-c", "from jaxlib import version; print(version.__version__)")
    jaxlib_version = (session.run_install(*read, silent=True) or session.run(*read, silent=True)).strip()
    session.install(f"jax=={jaxlib_version}", *others)


def _xdist_args(posargs: list[str]) -> list[str]:
    """pytest-xdist's options for the tests session: one worker per CPU (``-n auto``), or
    ``KILN_TEST_WORKERS`` workers (``0``: serial, in the session's own process). Arguments given after ``--``
    come later on pytest's command line and win (``-n 0``, ``--dist worksteal``); with ``-p no:xdist`` among
    them none are added (pytest would not know ``-n``)."""
    if any(a.endswith("no:xdist") for a in posargs):
        return []
    # On an accelerator the default is one process: each worker would open the device and (XLA's default)
    # take most of its memory up front.
    on_cpu = os.environ.get("KILN_TEST_BACKEND", "").strip().lower() in ("", "cpu")
    workers = os.environ.get("KILN_TEST_WORKERS", "").strip() or ("auto" if on_cpu else "0")
    return ["-n", workers, "--dist", TEST_DIST]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite on all cores: ``nox -s tests -- tests/frontend -x`` passes arguments to pytest,
    ``nox -s tests -- -n 0`` (or ``KILN_TEST_WORKERS=0``) runs it serially."""
    _install_kiln(session, "test,examples")
    session.run("python", "-m", "pytest", *_xdist_args(session.posargs), *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """Run the MLP training example (``nox -s demo -- --epochs 3`` passes its options)."""
    _install_kiln(session, "examples")
    session.run("python", "examples/mlp.py", "--show-program", *session.posargs)


# Each example with small sizes: what `nox -s examples` runs (options after -- are added to every run).
EXAMPLES = {
    "linear_regression.py": ["--steps", "400"],
    "mlp.py": ["--epochs", "5"],
    "entmax.py": ["--steps", "100"],
    "gcn.py": ["--epochs", "200", "--sparse"],
}


@nox.session
def examples(session: nox.Session) -> None:
    """Run every training example under examples/ with small sizes; outputs go to runs/."""
    _install_kiln(session, "examples")
    for script, options in EXAMPLES.items():
        session.run("python", f"examples/{script}", *options, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark kiln against JAX; jax is installed at the version of the jaxlib kiln runs on."""
    _install_kiln(session)
    # kiln itself never imports jax; only the benchmarks do, to compare against it. optax: the JAX side of the
    # training rows (stax + adam, the GCN epoch).
    _install_jax(session, f"optax=={OPTAX_VERSION}")
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session
def against_jax(session: nox.Session) -> None:
    """The tests that compare kiln with JAX, optax and JAX's export format where those are installed (elsewhere
    they skip). NumPy stays the oracle; these only check that the other implementation agrees."""
    _install_kiln(session, "test")
    # optax at the release kiln.optim follows (its against-optax tests compare bit for bit)
    _install_jax(session, f"optax=={OPTAX_VERSION}", "flatbuffers")
    against_optax = sorted(str(p) for p in pathlib.Path("tests/optim").glob("test_against_optax*.py"))
    ported = sorted(str(p) for p in pathlib.Path("tests/examples").glob("test_*against_jax.py"))  # JAX's examples
    session.run("python", "-m", "pytest", *against_optax, "tests/optim/test_optim.py",
                "tests/frontend/test_export.py", "tests/frontend/test_error_classes.py", "tests/ad/test_against_jax.py",
                "tests/lax/test_precision_against_jax.py", "tests/ad/test_linear_call_against_jax.py",
                "tests/ad/test_symbolic_zeros_against_jax.py", "tests/random/test_rbg.py",
                "tests/frontend/test_pytree_proto.py", "tests/random/test_counter_prngs.py",
                *ported, *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Static checks (ruff's settings are in pyproject.toml)."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)
