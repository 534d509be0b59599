import pytest
from kiln.frontend.driver import jit as jit_module


@pytest.fixture
def count_misses(monkeypatch):
    """The names of the jitted functions whose C++ dispatch missed (went to Python), one per miss: the
    test's functions only, not kiln.numpy's eager programs."""
    calls = []
    original = jit_module.JittedFunction._cpp_miss

    def counting(self, *args, **kwargs):
        if self._where.startswith("kiln.jit("):
            calls.append(self.__name__)
        return original(self, *args, **kwargs)
    monkeypatch.setattr(jit_module.JittedFunction, "_cpp_miss", counting)
    return calls
