"""kiln.profiler: traces written for TensorBoard/Perfetto with annotations, memory profiles, errors."""
import glob
import gzip
import json
import os

import pytest

import kiln
import kiln.numpy as knp
import kiln.profiler as prof


def test_trace_writes_xplane_and_perfetto_files_with_annotations(tmp_path):
    with prof.trace(tmp_path, create_perfetto_trace=True):
        with prof.TraceAnnotation("kiln_test_label"):
            kiln.jit(lambda x: x @ x)(knp.ones((32, 32))).block_until_ready()
        with prof.StepTraceAnnotation("train", step_num=3):
            prof.annotate_function(lambda: None, name="kiln_annotated")()
    (run,) = glob.glob(str(tmp_path / "plugins" / "profile" / "*"))
    assert glob.glob(os.path.join(run, "*.xplane.pb"))
    with gzip.open(os.path.join(run, "perfetto_trace.json.gz")) as f:
        data = json.load(f)
    assert "metadata" not in data
    names = {e.get("name") for e in data["traceEvents"]}
    assert {"kiln_test_label", "kiln_annotated"} <= names


def test_one_trace_at_a_time_and_stop_without_start(tmp_path):
    prof.start_trace(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="a trace is already running"):
            prof.start_trace(tmp_path)
    finally:
        prof.stop_trace()
    with pytest.raises(RuntimeError, match=r"no trace is running; start one with kiln.profiler.start_trace"):
        prof.stop_trace()


def test_device_memory_profile_is_gzipped_pprof(tmp_path):
    keep = knp.ones((256, 256))
    data = prof.device_memory_profile()
    assert data[:2] == b"\x1f\x8b" and len(gzip.decompress(data)) > 0
    prof.save_device_memory_profile(tmp_path / "mem.prof")
    assert (tmp_path / "mem.prof").read_bytes()[:2] == b"\x1f\x8b"
    del keep



def _traced_xplane(tmp_path) -> str:
    with prof.trace(tmp_path):
        with prof.TraceAnnotation("kiln_read_back_label"):
            kiln.jit(lambda x: x @ x)(knp.ones((32, 32))).block_until_ready()
    (path,) = glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.xplane.pb"))
    return path


def _events(plane):
    return [event for line in plane.lines for event in line.events]


def test_a_written_trace_reads_back_with_profile_data(tmp_path):
    path = _traced_xplane(tmp_path)
    data = prof.ProfileData.from_file(path)
    assert isinstance(data, prof.ProfileData)
    planes = list(data.planes)
    assert planes and all(isinstance(p, prof.ProfilePlane) for p in planes)
    host = data.find_plane_with_name("/host:CPU")
    assert host is not None and host.name == "/host:CPU"
    (label,) = [e for e in _events(host) if e.name == "kiln_read_back_label"]
    assert isinstance(label, prof.ProfileEvent)
    assert label.duration_ns > 0 and label.end_ns - label.start_ns == pytest.approx(label.duration_ns, abs=1)
    # the same profile from its bytes
    with open(path, "rb") as f:
        again = prof.ProfileData.from_serialized_xspace(f.read())
    assert [p.name for p in again.planes] == [p.name for p in planes]
    assert data.find_plane_with_name("no such plane") is None


def test_profile_data_explains_a_missing_file_and_bytes_that_are_no_profile(tmp_path):
    with pytest.raises(RuntimeError, match=r"NOT_FOUND: .*missing\.xplane\.pb; No such file"):
        prof.ProfileData.from_file(str(tmp_path / "missing.xplane.pb"))
    with pytest.raises(RuntimeError, match="Failed to parse XSpace"):
        prof.ProfileData.from_serialized_xspace(b"not a profile")


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_register_subprocess_with_a_profiler_server():
    """A child process runs kiln's profiler server; registering it returns the function that unregisters it, and
    a trace of this process still runs while it is registered."""
    import subprocess
    import sys
    import time
    port = _free_port()
    child = subprocess.Popen([sys.executable, "-c", "import sys, kiln; kiln.profiler.start_server(int(sys.argv[1])); "
                              "print('up', flush=True); sys.stdin.read()", str(port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        start = time.perf_counter()
        unregister = prof.register_subprocess(child.pid, port)
        assert time.perf_counter() - start < 10
        with pytest.raises(RuntimeError, match=rf"register_subprocess\({child.pid}, {port}\): .*already registered"):
            prof.register_subprocess(child.pid, port)
        unregister()
        prof.register_subprocess(child.pid, port)()  # registered again once unregistered
    finally:
        child.kill()
        child.wait()


def test_register_subprocess_errors_are_quick_and_clear():
    import time
    port = _free_port()
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match=rf"nothing listens on localhost:{port}; start the profiler server in "
                                           rf"process {os.getpid()} first \(kiln.profiler.start_server\({port}\)\)"):
        prof.register_subprocess(os.getpid(), port)
    assert time.perf_counter() - start < 10  # (jaxlib alone waits 30 s)
    with pytest.raises(ValueError, match="register_subprocess: no process has pid 999999999"):
        prof.register_subprocess(999999999, port)
    with pytest.raises(TypeError, match="register_subprocess: port must be a positive int, got '80'"):
        prof.register_subprocess(os.getpid(), "80")
