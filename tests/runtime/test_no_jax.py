"""kiln.runtime never imports jax, not even through jaxlib's hidden imports (NOTES §0.1)."""
from __future__ import annotations

WORKLOAD = """
    import sys
    import ml_dtypes
    import numpy as np
    from kiln import runtime
    d = runtime.local_device(None, 0)
    ADD = '''func.func public @main(%a: tensor<4xbf16>, %b: tensor<4xbf16>)
        -> (tensor<4xbf16>, tensor<4xf32>) {
      %0 = stablehlo.add %a, %b : tensor<4xbf16>
      %1 = stablehlo.convert %0 : (tensor<4xbf16>) -> tensor<4xf32>
      return %0, %1 : tensor<4xbf16>, tensor<4xf32>
    }'''
    exe = runtime.compile(ADD, d, [((4,), ml_dtypes.bfloat16), ((4,), np.float32)])
    x = runtime.put(np.arange(4, dtype=ml_dtypes.bfloat16), d)
    for _ in range(3):
        b, f = exe.execute([x, x])
        runtime.block_until_ready(b)
        assert runtime.is_ready(f)
        np.testing.assert_array_equal(runtime.to_numpy(b).astype(np.float32), 2 * np.arange(4))
        np.testing.assert_array_equal(runtime.to_numpy(f), 2 * np.arange(4, dtype=np.float32))
    runtime.to_numpy(runtime.copy_to(f, d))
    runtime.mlir_context()
    # int4 readback goes through the jaxlib call that would import jax (kiln blocks that import)
    i4 = np.array([-2, 3, 7], ml_dtypes.int4)
    np.testing.assert_array_equal(runtime.to_numpy(runtime.put(i4, d)), i4)
"""


def test_works_with_jax_unimportable(run_py):
    proc = run_py("import sys\nsys.modules['jax'] = None\n" + WORKLOAD.replace("\n    ", "\n")
                  + "print('ok')\n")
    assert proc.stdout.strip() == "ok"


def test_never_imports_jax(run_py):
    proc = run_py(WORKLOAD + """
    assert not any(m == "jax" or m.startswith("jax.") for m in sys.modules), sorted(sys.modules)
    print("ok")
    """)
    assert proc.stdout.strip() == "ok"


def test_runtime_imports_only_allowed_packages():
    """runtime/ may import jaxlib, numpy, ml_dtypes, the standard library and itself; never jax or kiln."""
    import ast
    import pathlib
    import sys

    import kiln.runtime

    allowed = {"jaxlib", "numpy", "ml_dtypes"} | set(sys.stdlib_module_names)
    for path in pathlib.Path(kiln.runtime.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"
