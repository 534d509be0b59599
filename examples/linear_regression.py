"""Linear regression by gradient descent, with the model state passed explicitly.

This is the "stateful computations" example of the JAX documentation ported to kiln: the parameters
live in a ``Params`` named tuple that goes into the jitted ``update`` step and comes back out of it,
so the step is a pure function that ``kiln.jit`` can trace, lower to StableHLO and compile once.

Run it with ``python examples/linear_regression.py [--steps N] [--backend cpu|cuda|...]``.
It prints the device, the kiln IR and the StableHLO of the update step, the loss as it trains,
the fitted parameters and the step timings, and exits non-zero if the fit is off.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import NamedTuple

import numpy as np

import kiln
import kiln.numpy as knp

LEARNING_RATE = 0.005
TRUE_W, TRUE_B = 2.0, -1.0
NUM_POINTS = 128


class Params(NamedTuple):
    weight: kiln.Array
    bias: kiln.Array


def init(rng: np.random.Generator, device) -> Params:
    """Returns the initial model params (standard normal scalars)."""
    # TODO(kiln.random): weight_key, bias_key = kiln.random.split(key); kiln.random.normal(weight_key, ()).
    weight, bias = rng.standard_normal(2, dtype=np.float32)
    return kiln.device_put(Params(weight, bias), device)


def loss(params: Params, x: kiln.Array, y: kiln.Array) -> kiln.Array:
    """Computes the least squares error of the model's predictions on x against y."""
    pred = params.weight * x + params.bias
    return knp.mean((pred - y) ** 2)


@kiln.jit
def update(params: Params, x: kiln.Array, y: kiln.Array) -> Params:
    """Performs one SGD update step on params using the given data."""
    grad = kiln.grad(loss)(params, x, y)  # a Params of the two partial derivatives
    # With Adam or another stateful optimizer we would also thread its state through here:
    #   updates, new_optimizer_state = optimizer(grad, optimizer_state)
    return kiln.tree_util.tree_map(lambda param, g: param - g * LEARNING_RATE, params, grad)


def progress_bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // max(total, 1)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="number of SGD steps (default 1000)")
    parser.add_argument("--backend", default=None,
                        help="backend to run on: cpu, cuda, rocm, tpu, gpu (default: the best available)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be positive, got {args.steps}")

    try:
        device = kiln.devices(args.backend)[0]
    except kiln.BackendError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    if args.backend is not None:
        kiln.config.update("default_backend", args.backend)
    print(f"kiln {kiln.__version__}: default backend {kiln.default_backend()!r}, running on {device} "
          f"({device.device_kind})")

    # Data from y = w*x + b + noise, drawn on the host and moved to the device.
    # TODO(kiln.random): x_key, noise_key = kiln.random.split(key); kiln.random.normal(x_key, (128, 1)).
    init_rng, data_rng = np.random.default_rng(42).spawn(2)
    xs_host = data_rng.standard_normal((NUM_POINTS, 1), dtype=np.float32)
    noise = data_rng.standard_normal((NUM_POINTS, 1), dtype=np.float32) * np.float32(0.5)
    ys_host = xs_host * np.float32(TRUE_W) + np.float32(TRUE_B) + noise
    xs, ys = kiln.device_put((xs_host, ys_host), device)
    params = init(init_rng, device)

    print("\nkiln IR of the update step:")
    print(kiln.make_ir(update)(params, xs, ys))
    print("StableHLO of the update step:")
    print(update.lower(params, xs, ys).as_text())

    loss_fn = kiln.jit(loss)
    print(f"training: {args.steps} steps, learning rate {LEARNING_RATE}, initial loss "
          f"{float(loss_fn(params, xs, ys)):.4f}")

    step_times = []
    first_call_s = None
    report_every = 100
    for step in range(1, args.steps + 1):
        start = time.perf_counter()
        params = kiln.block_until_ready(update(params, xs, ys))
        elapsed = time.perf_counter() - start
        if first_call_s is None:
            first_call_s = elapsed  # trace + lower + compile + run
        else:
            step_times.append(elapsed)
        if step % report_every == 0 or step == args.steps:
            print(f"  step {step:5d}/{args.steps} {progress_bar(step, args.steps)} "
                  f"loss {float(loss_fn(params, xs, ys)):.4f}")

    w, b = float(params.weight), float(params.bias)
    # The best any fit can do on this noisy sample: the closed-form least-squares line.
    lstsq_w, lstsq_b = np.polyfit(xs_host[:, 0], ys_host[:, 0], 1)
    print(f"\nfitted: weight {w:+.4f}  bias {b:+.4f}")
    print(f"truth:  weight {TRUE_W:+.4f}  bias {TRUE_B:+.4f}   (least squares on this sample: "
          f"{lstsq_w:+.4f}, {lstsq_b:+.4f})")
    steady = statistics.median(step_times) * 1e3 if step_times else float("nan")
    print(f"first update call (trace + compile + run): {first_call_s * 1e3:.1f} ms; "
          f"steady-state step: {steady:.3f} ms (median of {len(step_times)})")

    if not (abs(w - TRUE_W) < 0.2 and abs(b - TRUE_B) < 0.2):
        print(f"FAILED: the fit (w={w:.4f}, b={b:.4f}) is not within 0.2 of the truth "
              f"(w={TRUE_W}, b={TRUE_B})", file=sys.stderr)
        return 1
    print("OK: the fit is within 0.2 of the truth")
    return 0


if __name__ == "__main__":
    sys.exit(main())
