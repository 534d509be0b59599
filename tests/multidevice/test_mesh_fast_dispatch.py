"""The fast dispatch paths for programs over a mesh (issue 18): after the first call, a call whose arguments are
kiln arrays laid out as the program takes them is launched by the direct launch (direct_call.py: plain arguments
and pytrees of Python's containers) or by jaxlib's C++ dispatch (other pytrees), without kiln's Python path, as
one-device programs are; values, output layouts and the bound on mesh executions in flight (XLA's CPU collectives)
stay those of the Python path. Oracles: NumPy on the unsharded data; ``python_runs`` counts the Python path's
launches (``JittedFunction._execute``)."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from kiln.frontend.driver import jit as jit_module

import kiln
from kiln import runtime
from kiln.sharding import NamedSharding, PartitionSpec

P = PartitionSpec

needs_cpp = pytest.mark.skipif(not runtime.fastpath.available(), reason="no C++ dispatch in this process")
more_devices_than_cores = pytest.mark.skipif(len(kiln.devices()) <= (os.cpu_count() or 1),
                                             reason="more devices than cores only")


@kiln.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    """A registered pytree class: the direct launch takes Python's containers only, so calls taking one run
    through the C++ dispatch."""
    w: object
    b: object


def _put(x, mesh, *spec):
    return kiln.device_put(x, NamedSharding(mesh, P(*spec)))


@pytest.fixture
def python_runs(monkeypatch):
    """The arguments of each call that ran through kiln's Python path (``JittedFunction._execute``)."""
    runs = []
    execute = jit_module.JittedFunction._execute

    def counting(self, entry, leaves):
        runs.append(leaves)
        return execute(self, entry, leaves)
    monkeypatch.setattr(jit_module.JittedFunction, "_execute", counting)
    return runs


def _executable(f):
    (entry,) = f._signatures.entries.values()
    return entry.compiled.executable


def test_repeated_calls_over_a_mesh_skip_python_and_keep_values_and_layouts(mesh, python_runs):
    xs = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    ws = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    x, w = _put(xs, mesh, "data", None), _put(ws, mesh, None, "model")
    f = kiln.jit(lambda x, w: (np.float32(0.5) * (x @ w), (x * x).sum()))
    first = f(x, w)
    assert len(python_runs) == 1
    for _ in range(5):
        y, total = f(x, w)
    assert len(python_runs) == 1  # the C++ ran the five others
    np.testing.assert_allclose(np.asarray(y), 0.5 * (xs @ ws), rtol=1e-6)
    np.testing.assert_allclose(float(total), (xs * xs).sum(), rtol=1e-6)
    assert y.sharding == first[0].sharding == NamedSharding(mesh, P("data", "model")) and y.committed
    assert total.sharding == first[1].sharding and total.is_fully_replicated


def test_outputs_of_the_cpp_path_chain_into_later_calls(mesh, python_runs):
    """A step's outputs (layouts the partitioner chose) are the next call's arguments, as in a training loop."""
    xs = np.linspace(-2, 2, 64, dtype=np.float32).reshape(8, 8)
    step = kiln.jit(lambda v: v * 0.5 + v.mean(axis=0))
    v, expected = _put(xs, mesh, "data", "model"), xs
    for _ in range(10):
        v = step(v)
        expected = expected * np.float32(0.5) + expected.mean(axis=0)
    np.testing.assert_allclose(np.asarray(v), expected, rtol=1e-5, atol=1e-6)
    assert len(python_runs) <= 2  # the first call, and one more if the output's layout differs from the input's


def test_an_argument_laid_out_otherwise_than_in_shardings_stays_on_the_python_path(mesh, python_runs):
    """in_shardings replicated, the argument split: the Python path re-lays it out on every call (the C++ would pass
    the buffer on as it is)."""
    xs = np.arange(16.0, dtype=np.float32)
    f = kiln.jit(lambda v: v[::-1] * 2, in_shardings=NamedSharding(mesh, P()))
    x = _put(xs, mesh, "data")
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x)), xs[::-1] * 2)
    assert len(python_runs) == 3


def test_an_argument_on_one_device_stays_on_the_python_path(mesh, python_runs):
    xs = np.arange(8.0, dtype=np.float32)
    f = kiln.jit(lambda a, b: a + b)
    a, b = _put(xs, mesh, "data"), kiln.device_put(xs * 10, kiln.devices()[0])
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(a, b)), xs * 11)
    assert len(python_runs) == 3


def test_only_programs_with_collectives_bound_the_executions_in_flight(mesh):
    x = _put(np.ones(8, np.float32), mesh, "data")
    elementwise, reducing = kiln.jit(lambda v: v + 1), kiln.jit(lambda v: v / v.sum())
    elementwise(x), reducing(x)
    assert _executable(elementwise).max_in_flight is None  # its devices never wait for each other
    expected = 1 if len(kiln.devices()) > (os.cpu_count() or 1) else runtime.sharded.MAX_IN_FLIGHT
    assert _executable(reducing).max_in_flight == expected
    assert elementwise._mesh_bound is None and reducing._mesh_bound is _executable(reducing)


def _one_execution_at_a_time(step, first):
    """Calls ``step`` on its own result 20 times: each call launches only once the previous execution finished
    (its result is ready), and then no other mesh execution is in flight."""
    prev = step(first)
    for _ in range(20):
        cur = step(prev)
        leaf = kiln.tree_util.tree_leaves(prev)[0]
        assert runtime.is_ready(leaf._buf)
        assert len(runtime.sharded._in_flight) <= 1
        prev = cur
    return prev


@more_devices_than_cores
def test_fast_launches_of_a_collective_program_run_one_at_a_time(mesh, python_runs):
    """8 CPU devices on fewer cores: one execution at a time (two in flight can abort the process, see
    test_jit_sharding.py), on the fast paths too; the host returns before the execution ends."""
    x = _put(np.ones(8, np.float32), mesh, "data")
    f = kiln.jit(lambda v: v * 0.5 + v.sum() / 16)
    x = _one_execution_at_a_time(f, x)
    assert len(python_runs) <= 2  # the first call, and one more if the output's layout differs from the input's
    np.testing.assert_allclose(np.asarray(x), np.ones(8), rtol=1e-6)


@needs_cpp
def test_cpp_dispatch_runs_mesh_programs_on_registered_pytrees(mesh, python_runs):
    ws, bs = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4), np.arange(4.0, dtype=np.float32)
    p = Params(_put(ws, mesh, "data", None), _put(bs, mesh))
    f = kiln.jit(lambda p: Params(p.w * 2 + p.b, p.b.sum()))
    first = f(p)
    for _ in range(5):
        out = f(p)
    assert len(python_runs) == 1
    np.testing.assert_allclose(np.asarray(out.w), ws * 2 + bs, rtol=1e-6)
    np.testing.assert_allclose(float(out.b), bs.sum(), rtol=1e-6)
    assert out.w.sharding == first.w.sharding and out.b.sharding == first.b.sharding


@needs_cpp
@more_devices_than_cores
def test_cpp_launches_of_a_collective_program_run_one_at_a_time(mesh, python_runs):
    p = Params(_put(np.ones((8, 4), np.float32), mesh, "data", None), _put(np.ones(4, np.float32), mesh))
    f = kiln.jit(lambda p: Params(p.w * 0.5 + p.w.sum() / 64, p.b))
    p = _one_execution_at_a_time(f, p)
    assert len(python_runs) <= 2
    np.testing.assert_allclose(np.asarray(p.w), np.ones((8, 4)), rtol=1e-6)


def test_direct_launch_of_mesh_programs_without_cpp_dispatch(run_py):
    """With jaxlib's C++ dispatch off (as when jax is imported first), the direct launch takes mesh calls alone."""
    run_py("""
        import os, numpy as np, kiln
        from kiln import runtime
        from kiln.frontend.driver import jit as jit_module
        from kiln.sharding import NamedSharding, PartitionSpec as P
        assert not runtime.fastpath.available()
        runs = []
        execute = jit_module.JittedFunction._execute
        jit_module.JittedFunction._execute = lambda self, entry, leaves: runs.append(1) or execute(self, entry, leaves)
        mesh = kiln.make_mesh((8,), ("i",))
        xs = np.arange(16.0, dtype=np.float32)
        x = kiln.device_put(xs, NamedSharding(mesh, P("i")))
        f = kiln.jit(lambda v: (v * 2, v.sum()))
        for _ in range(5):
            y, total = f(x)
            assert len(runtime.sharded._in_flight) <= 1 or len(kiln.devices()) <= os.cpu_count()
        assert len(runs) == 1, runs
        np.testing.assert_array_equal(np.asarray(y), xs * 2)
        assert float(total) == xs.sum() and y.sharding == NamedSharding(mesh, P("i"))
        print("OK")
    """, env={"KILN_NUM_CPU_DEVICES": "8", "KILN_PLATFORMS": "cpu", "KILN_CPP_DISPATCH": "0"}, timeout=120)


def test_shutting_down_the_distributed_runtime_first_waits_for_mesh_executions(mesh):
    """Before the distributed runtime shuts down (at exit too), every mesh execution with collectives still in
    flight is waited for: another process's collective may still need this one's devices and the coordination
    service (two processes otherwise hung at exit, tests/distributed/test_multihost_utils_more.py)."""
    assert runtime.sharded.wait_for_mesh_executions in runtime.distributed.before_shutdown
    x = _put(np.arange(8, dtype=np.float32), mesh, "data")
    total = kiln.jit(lambda v: v.sum())
    outs = [total(x + i) for i in range(3)]
    runtime.sharded.wait_for_mesh_executions()
    assert not runtime.sharded._in_flight
    assert all(runtime.is_ready(o._buf) for o in outs)
    np.testing.assert_array_equal([float(o) for o in outs], [28.0 + 8 * i for i in range(3)])
