"""Run a worker script as several processes of one kiln program on localhost (for the distributed tests): each
process gets PJRT's coordination settings in its environment and a hard timeout, so that a hang fails the test
instead of stalling the run."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(worker: str, scenario: str, ids=(0, 1), num: int = 2, devices: int = 1, timeout: float = 120,
           port: int | None = None) -> list:
    """Run ``worker``'s ``scenario`` as processes ``ids`` of ``num``, each with ``devices`` CPU devices; returns
    (rc, output) per process. ``port``: the coordinator's (default: a free one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(KILN_COORDINATOR_ADDRESS=f"127.0.0.1:{port or free_port()}", KILN_NUM_PROCESSES=str(num),
               KILN_NUM_CPU_DEVICES=str(devices), PYTHONUNBUFFERED="1")
    procs = [subprocess.Popen([sys.executable, worker, scenario], env={**env, "KILN_PROCESS_ID": str(i)}, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in ids]
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            results.append((p.returncode, out))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        outs = [p.communicate()[0] for p in procs]
        raise AssertionError(f"{scenario}: a process did not finish within {timeout} s (a hang):\n" +
                             "\n----\n".join(o[-3000:] for o in outs)) from None
    return results
