"""Suite-wide test setup.

- ``KILN_TEST_BACKEND=cuda`` (or ``tpu``, ``cpu``...) makes that backend kiln's default for the whole
  session, so the same suite runs on every backend. Tests that need one specific backend are marked
  ``@pytest.mark.backend("cpu")`` and skip in sessions that test another one.
- Every test gets its ``kiln.config`` flags restored afterwards, so a test that turns on
  ``enable_x64`` (and fails halfway) cannot leak 64-bit mode into the tests that follow.
"""
from __future__ import annotations

import os

import pytest

TEST_BACKEND = os.environ.get("KILN_TEST_BACKEND", "").strip() or None


def pytest_configure(config):
    config.addinivalue_line("markers", "backend(*names): run only when the backend under test (KILN_TEST_BACKEND, "
                            "else kiln's default) is one of these")
    if TEST_BACKEND is not None:
        import kiln
        try:
            kiln.config.update("default_backend", TEST_BACKEND)
        except kiln.BackendError as e:
            pytest.exit(f"KILN_TEST_BACKEND={TEST_BACKEND!r}: {e}", returncode=4)


def backend_under_test() -> str:
    """The backend this session tests: ``KILN_TEST_BACKEND``, else kiln's default backend."""
    import kiln
    return kiln.devices()[0].platform  # canonical: 'gpu' in KILN_TEST_BACKEND means 'cuda' or 'rocm' here


def pytest_collection_modifyitems(config, items):
    current = backend_under_test()
    for item in items:
        marker = item.get_closest_marker("backend")
        if marker is not None and current not in marker.args:
            item.add_marker(pytest.mark.skip(reason=f"needs backend {'/'.join(marker.args)}; "
                                                    f"this session tests {current} (KILN_TEST_BACKEND)"))


@pytest.fixture(autouse=True)
def _restore_kiln_config():
    """Restore every ``kiln.config`` flag after each test (even when the test fails)."""
    from kiln import config
    saved = {name: getattr(config, name) for name in config._FLAGS}
    try:
        yield
    finally:
        for name, value in saved.items():
            if getattr(config, name) != value:
                config.update(name, value)
