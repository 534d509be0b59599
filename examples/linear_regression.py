"""Linear regression by gradient descent, with the model state passed explicitly.

This is the "stateful computations" example of the JAX documentation ported to kiln: the parameters
live in a ``Params`` named tuple that goes into the jitted ``update`` step and comes back out of it,
so the step is a pure function that ``kiln.jit`` can trace, lower to StableHLO and compile once.

Run it with ``python examples/linear_regression.py [--steps N] [--backend cpu|cuda|...] [--seed S]``.
It prints the device, the kiln IR and the StableHLO of the update step, the loss as it trains,
the fitted parameters and the step timings, saves a loss plot and a checkpoint in ``--out``
(``--resume`` continues from it), and exits 1 if the fit is off.
"""
from __future__ import annotations

import sys
from typing import NamedTuple

import _training
import numpy as np

import kiln
import kiln.numpy as knp

LEARNING_RATE = 0.005
TRUE_W, TRUE_B = 2.0, -1.0
NUM_POINTS = 128


class Params(NamedTuple):
    weight: kiln.Array
    bias: kiln.Array


def init(key: kiln.Array) -> Params:
    """Returns the initial model params (standard normal scalars)."""
    weight_key, bias_key = kiln.random.split(key)
    return Params(kiln.random.normal(weight_key, ()), kiln.random.normal(bias_key, ()))


def make_data(key: kiln.Array) -> tuple[kiln.Array, kiln.Array]:
    """Points of the line y = w*x + b with Gaussian noise (standard deviation 0.5)."""
    x_key, noise_key = kiln.random.split(key)
    xs = kiln.random.normal(x_key, (NUM_POINTS, 1))
    noise = kiln.random.normal(noise_key, (NUM_POINTS, 1)) * 0.5
    return xs, xs * TRUE_W + TRUE_B + noise


def loss(params: Params, x: kiln.Array, y: kiln.Array) -> kiln.Array:
    """Computes the least squares error of the model's predictions on x against y."""
    pred = params.weight * x + params.bias
    return knp.mean((pred - y) ** 2)


@kiln.jit
def update(params: Params, x: kiln.Array, y: kiln.Array) -> tuple[Params, kiln.Array]:
    """Performs one SGD update step on params using the given data; also returns the loss before the step."""
    value, grad = kiln.value_and_grad(loss)(params, x, y)  # grad: a Params of the two partial derivatives
    # With Adam or another stateful optimizer we would also thread its state through here:
    #   updates, new_optimizer_state = optimizer(grad, optimizer_state)
    return kiln.tree_util.tree_map(lambda param, g: param - g * LEARNING_RATE, params, grad), value


def main(argv: list[str] | None = None) -> int:
    parser = _training.make_parser(__doc__, steps=1000, seed=42, name="linear_regression")
    args = _training.parse(parser, argv)
    device = args.device_obj

    data_key, init_key = kiln.random.split(kiln.random.key(args.seed))
    with kiln.default_device(device):
        xs, ys = make_data(data_key)
        params = init(init_key)

    checkpoint = args.out / "checkpoint.npz"
    params, start, extra = _training.resume(parser, args, params)
    losses = extra.get("losses", [])
    if args.resume:
        print(f"resumed from {checkpoint} at step {start}")

    print("\nkiln IR of the update step:")
    print(kiln.make_ir(update)(params, xs, ys))
    print("StableHLO of the update step:")
    print(update.lower(params, xs, ys).as_text())

    loss_fn = kiln.jit(loss)
    print(f"training: {args.steps} steps, learning rate {LEARNING_RATE}, initial loss "
          f"{float(loss_fn(params, xs, ys)):.4f}")

    timer = _training.StepTimer()
    with _training.Progress(args.steps, "steps", start=min(start, args.steps)) as progress:
        for _ in range(start, args.steps):
            with timer.step():
                params, value = kiln.block_until_ready(update(params, xs, ys))
            losses.append(float(value))
            progress.update(loss=losses[-1])
    done = max(start, args.steps)
    _training.save_checkpoint(checkpoint, params, step=done, extra={"losses": losses})

    w, b = float(params.weight), float(params.bias)
    # The best any fit can do on this noisy sample: the closed-form least-squares line.
    xs_host, ys_host = np.asarray(xs), np.asarray(ys)
    lstsq_w, lstsq_b = np.polyfit(xs_host[:, 0], ys_host[:, 0], 1)
    final_loss = float(loss_fn(params, xs, ys))
    print(f"\nfitted: weight {w:+.4f}  bias {b:+.4f}  (loss {final_loss:.4f})")
    print(f"truth:  weight {TRUE_W:+.4f}  bias {TRUE_B:+.4f}   (least squares on this sample: "
          f"{lstsq_w:+.4f}, {lstsq_b:+.4f})")
    print(f"step times: {timer.describe()}")
    print(f"checkpoint: {checkpoint}")
    if not args.no_plot and losses:
        plot = _training.save_plot(args.out / "linear_regression.png", {"loss": losses}, xlabel="step",
                                   title=f"linear regression ({device.platform})")
        if plot is not None:
            print(f"plot: {plot}")
    ok = abs(w - TRUE_W) < 0.2 and abs(b - TRUE_B) < 0.2
    if ok:
        print("OK: the fit is within 0.2 of the truth")
    else:
        print(f"FAILED: the fit (w={w:.4f}, b={b:.4f}) is not within 0.2 of the truth "
              f"(w={TRUE_W}, b={TRUE_B})", file=sys.stderr)
    steady = np.median(timer.steady_s) * 1e3 if timer.steady_s else float("nan")
    _training.summary("linear_regression", weight=w, bias=b, loss=final_loss, steps=done, step_ms=float(steady),
                      device=device.platform)
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
