"""kiln never imports jax, not even through jaxlib: some of jaxlib's C++ entry points import the jax package
when it is installed (NOTES §0.1), which takes most of a second and lets jax patch jaxlib's shared classes. A fake
``jax`` package on the path records any import of it, in a fresh interpreter."""
import textwrap

_FAKE_JAX = '''
import os
with open(os.environ["KILN_TEST_JAX_MARK"], "a") as f:
    import traceback
    f.write("".join(traceback.format_stack()) + "\\n----\\n")
raise ImportError("kiln test: jax must not be imported")
'''


def test_arrays_over_several_devices_never_import_jax(run_py, tmp_path):
    fake = tmp_path / "fake"
    (fake / "jax").mkdir(parents=True)
    (fake / "jax" / "__init__.py").write_text(_FAKE_JAX)
    mark = tmp_path / "imported.txt"
    code = textwrap.dedent('''
        import sys
        import numpy as np
        import kiln, kiln.numpy as knp
        from kiln.sharding import NamedSharding, PartitionSpec as P
        mesh = kiln.make_mesh((4,), ("x",))
        x = kiln.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), NamedSharding(mesh, P("x")))
        y = kiln.jit(lambda a: a * 2)(x)
        text = repr(y)
        host = np.asarray(y)
        shards = [np.asarray(s.data) for s in y.addressable_shards]
        assert host[7, 1] == 30.0 and len(shards) == 4 and shards[3].tolist() == [[24.0, 26.0], [28.0, 30.0]]
        bf = kiln.device_put(np.ones((4, 2), np.float32), NamedSharding(mesh, P("x"))).astype(knp.bfloat16)
        assert np.asarray(bf).dtype == knp.bfloat16 and float(bf.sum()) == 8.0
        z = kiln.pmap(lambda v: v + 1)(knp.arange(4.0))
        assert np.asarray(z).tolist() == [1.0, 2.0, 3.0, 4.0] and "Array" in repr(z)
        single = knp.arange(3.0)
        single.copy_to_host_async()
        assert np.from_dlpack(single).tolist() == [0.0, 1.0, 2.0]
        assert knp.from_dlpack(np.arange(3.0, dtype=np.float32)).tolist() == [0.0, 1.0, 2.0]
        print("jax" in sys.modules and sys.modules["jax"] is not None)
    ''')
    proc = run_py(code, env={"PYTHONPATH": str(fake), "KILN_NUM_CPU_DEVICES": "4",
                             "KILN_TEST_JAX_MARK": str(mark)})
    assert not mark.exists(), "jax was imported from:\n" + mark.read_text()
    assert proc.stdout.strip().splitlines()[-1] == "False"
