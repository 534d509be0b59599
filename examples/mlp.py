"""A multilayer perceptron that learns to read handwritten digits, trained with kiln.

The data is scikit-learn's bundled digits set (1,797 grey 8x8 images of the digits 0-9; no download),
standardised and split into training and test images by ``--seed``. The model is built from
``kiln.example_libraries.stax`` layers (JAX's stax API) and trained with Adam from ``kiln.optim``
(optax's API): one jitted step computes the loss and its gradient with ``kiln.value_and_grad``, updates the
parameters and hands back the new ones, donating the old parameters and optimizer state to XLA. The
minibatches are reshuffled every epoch with ``kiln.random``; the test accuracy is printed after each epoch.

Run it with ``python examples/mlp.py [--epochs N] [--batch-size B] [--learning-rate LR] [--backend cpu|cuda]``;
``--show-program`` first prints the kiln IR and the StableHLO of the training step (``python3 -m nox -s demo``
runs it that way). The loss/accuracy plot and a checkpoint go to ``--out`` (``--resume`` continues from the
checkpoint). It exits 1 if the final test accuracy is below ``--min-accuracy`` (95 % by default).
"""
from __future__ import annotations

import functools
import sys

import _training
import numpy as np

import kiln
import kiln.numpy as jnp
import kiln.optim as optax
from kiln.example_libraries import stax

NUM_CLASSES = 10
TEST_FRACTION = 0.2
CHECKPOINT_EVERY = 5  # epochs between checkpoints (and one at the end)

init_fun, apply_fun = stax.serial(
    stax.Dense(256), stax.Relu,
    stax.Dense(256), stax.Relu,
    stax.Dense(NUM_CLASSES), stax.LogSoftmax,
)


def load_data(key, device):
    """The digits as float32 images (standardised with the training set's statistics) and int32 labels,
    split into training and test sets by a random permutation, on ``device``."""
    from sklearn.datasets import load_digits  # here, not at the top: scikit-learn takes seconds to import

    digits = load_digits()
    images, labels = kiln.device_put((digits.data.astype(np.float32), digits.target.astype(np.int32)), device)
    order = kiln.random.permutation(key, images.shape[0])
    num_test = int(round(images.shape[0] * TEST_FRACTION))
    test, train = order[:num_test], order[num_test:]
    mean = images[train].mean(axis=0)
    std = images[train].std(axis=0) + 1e-6  # some border pixels are always 0
    images = (images - mean) / std
    return (images[train], labels[train]), (images[test], labels[test])


def loss_fn(params, images, labels):
    """Mean cross-entropy of the model's log-probabilities against the labels."""
    log_probs = apply_fun(params, images)
    return -jnp.mean(jnp.sum(log_probs * kiln.nn.one_hot(labels, NUM_CLASSES), axis=1))


def make_step(optimizer):
    def step(params, opt_state, images, labels):
        """One Adam step on one minibatch: returns the new parameters, optimizer state and the batch's loss."""
        loss, grads = kiln.value_and_grad(loss_fn)(params, images, labels)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    # The old parameters and optimizer state are not used after the step: XLA may write the new ones in place.
    return kiln.jit(step, donate_argnums=(0, 1))


@kiln.jit
def accuracy(params, images, labels):
    return jnp.mean(jnp.argmax(apply_fun(params, images), axis=1) == labels)


@functools.partial(kiln.jit, static_argnums=2)
def shuffled_batches(key, data, batch_size):
    """The training set in a fresh random order, cut into full batches (the last, partial one is left out)."""
    images, labels = data
    num_batches = images.shape[0] // batch_size
    order = kiln.random.permutation(key, images.shape[0])[:num_batches * batch_size]
    return (images[order].reshape(num_batches, batch_size, -1), labels[order].reshape(num_batches, batch_size))


def main(argv: list[str] | None = None) -> int:
    parser = _training.make_parser(__doc__, epochs=15, name="mlp")
    parser.add_argument("--batch-size", type=int, default=64, help="images per training step (default 64)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's learning rate (default 0.001)")
    parser.add_argument("--min-accuracy", type=float, default=0.95,
                        help="exit 1 if the final test accuracy is below this (default 0.95)")
    parser.add_argument("--show-program", action="store_true",
                        help="print the kiln IR and the StableHLO of the training step before training")
    args = _training.parse(parser, argv)
    if args.batch_size < 1:
        parser.error(f"--batch-size must be positive, got {args.batch_size}")
    if not args.learning_rate > 0:
        parser.error(f"--learning-rate must be positive, got {args.learning_rate}")
    device = args.device_obj

    data_key, init_key, shuffle_key = kiln.random.split(kiln.random.key(args.seed), 3)
    with kiln.default_device(device):
        train, test = load_data(data_key, device)
        num_train = train[0].shape[0]
        if args.batch_size > num_train:
            parser.error(f"--batch-size {args.batch_size} is larger than the {num_train} training images")
        _, params = init_fun(init_key, (-1, train[0].shape[1]))
        optimizer = optax.adam(args.learning_rate)
        opt_state = optimizer.init(params)
    step = make_step(optimizer)
    steps_per_epoch = num_train // args.batch_size
    print(f"data: {num_train} training and {test[0].shape[0]} test images of {train[0].shape[1]} pixels; "
          f"model: {sum(p.size for p in kiln.tree_util.tree_leaves(params)):,} parameters")

    checkpoint = args.out / "checkpoint.npz"
    (params, opt_state), _, extra = _training.resume(parser, args, (params, opt_state))
    start_epoch, history = extra.get("epoch", 0), extra.get("history", {"loss": [], "test accuracy": []})
    if args.resume:
        print(f"resumed from {checkpoint}: epoch {start_epoch}, step {start_epoch * steps_per_epoch}")

    if args.show_program:
        images, labels = train[0][:args.batch_size], train[1][:args.batch_size]
        print("\nkiln IR of the training step (forward, backward and the Adam update, before XLA):")
        print(kiln.make_ir(step)(params, opt_state, images, labels))
        print("\nStableHLO of the training step (what XLA compiles):")
        print(step.lower(params, opt_state, images, labels).as_text())

    print(f"training: {args.epochs} epoch{'s' * (args.epochs != 1)} of {steps_per_epoch} steps, "
          f"batch size {args.batch_size}, Adam with learning rate {args.learning_rate}")
    timer = _training.StepTimer()

    def save(epoch):
        _training.save_checkpoint(checkpoint, (params, opt_state), step=epoch * steps_per_epoch,
                                  extra={"epoch": epoch, "history": history})

    with _training.Progress(args.epochs, "epochs", start=start_epoch) as progress:
        for epoch in range(start_epoch, args.epochs):
            # The order of epoch e depends on the seed and e only: a resumed run sees the same batches.
            images, labels = shuffled_batches(kiln.random.fold_in(shuffle_key, epoch), train, args.batch_size)
            losses = []
            for i in range(steps_per_epoch):
                with timer.step():
                    params, opt_state, loss = step(params, opt_state, images[i], labels[i])
                    kiln.block_until_ready(loss)
                losses.append(loss)
            history["loss"].append(float(jnp.mean(jnp.stack(losses))))
            history["test accuracy"].append(float(accuracy(params, *test)))
            progress.update(loss=history["loss"][-1], test_accuracy=history["test accuracy"][-1])
            if (epoch + 1) % CHECKPOINT_EVERY == 0 or epoch + 1 == args.epochs:
                save(epoch + 1)
    if start_epoch >= args.epochs:
        print(f"nothing to train: the checkpoint is at epoch {start_epoch}, --epochs is {args.epochs}")

    test_accuracy = float(accuracy(params, *test))
    train_accuracy = float(accuracy(params, *train))
    print(f"\ntest accuracy {test_accuracy:.2%} ({round(test_accuracy * test[0].shape[0])}/{test[0].shape[0]} "
          f"images), training accuracy {train_accuracy:.2%}")
    print(f"step times: {timer.describe()}")
    print(f"checkpoint: {checkpoint}")
    if not args.no_plot and history["loss"]:
        plot = _training.save_plot(args.out / "mlp.png", history, xlabel="epoch",
                                   title=f"MLP on the digits ({device.platform})")
        if plot is not None:
            print(f"plot: {plot}")
    steady = np.median(timer.steady_s) * 1e3 if timer.steady_s else float("nan")
    _training.summary("mlp", test_accuracy=test_accuracy, epochs=args.epochs, steps=args.epochs * steps_per_epoch,
                      final_loss=history["loss"][-1] if history["loss"] else float("nan"),
                      step_ms=float(steady), device=device.platform)
    if test_accuracy < args.min_accuracy:
        print(f"FAILED: test accuracy {test_accuracy:.4f} is below the floor {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
