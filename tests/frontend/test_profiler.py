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

