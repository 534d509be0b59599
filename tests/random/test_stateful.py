"""kiln.experimental.random.stateful_rng: each draw folds the generator's counter into its base key and moves
the counter on (a Ref), eagerly, under jit and, split, under vmap. Expected values come from kiln.random's
explicit keys."""
import numpy as np
import pytest

import kiln
import kiln.numpy as jnp
from kiln import random
from kiln.experimental.random import StatefulPRNG, stateful_rng


def nth_key(seed, n):
    return random.fold_in(random.key(seed), n)


def test_draws_fold_the_counter_into_the_base_key():
    rng = stateful_rng(42)
    assert repr(rng).startswith("StatefulPRNG(_base_key=Array((), dtype=key<fry>) overlaying:")
    assert float(rng.uniform()) == float(random.uniform(nth_key(42, 0)))
    assert float(rng.uniform()) == float(random.uniform(nth_key(42, 1)))
    np.testing.assert_array_equal(random.key_data(rng.key()), random.key_data(nth_key(42, 2)))
    np.testing.assert_array_equal(rng.normal(1.0, 2.0, size=3), 1.0 + 2.0 * random.normal(nth_key(42, 3), (3,)))
    np.testing.assert_array_equal(rng.integers(5, size=(2,)), random.randint(nth_key(42, 4), (2,), 0, 5))
    np.testing.assert_array_equal(rng.random(2), random.uniform(nth_key(42, 5), (2,)))
    keys = rng.key(3)
    np.testing.assert_array_equal(random.key_data(keys), random.key_data(random.split(nth_key(42, 6), 3)))
    assert int(rng._counter[...]) == 7


def test_jit_moves_the_state_on():
    rng = stateful_rng(0)
    draw = kiln.jit(rng.uniform)  # the generator is closed over: its counter is written back after each call
    first, second = float(draw()), float(draw())
    assert first == float(random.uniform(nth_key(0, 0))) and second == float(random.uniform(nth_key(0, 1)))
    as_argument = kiln.jit(lambda r: r.normal(size=2))
    np.testing.assert_array_equal(as_argument(rng), random.normal(nth_key(0, 2), (2,)))
    np.testing.assert_array_equal(as_argument(rng), random.normal(nth_key(0, 3), (2,)))
    assert int(rng._counter[...]) == 4


def test_split_generators_under_vmap_and_spawn():
    rng = stateful_rng(123)
    split = rng.split(3)
    children = random.split(nth_key(123, 0), 3)
    got = kiln.vmap(lambda r, x: x + r.uniform())(split, jnp.zeros(3))
    np.testing.assert_array_equal(got, [float(random.uniform(random.fold_in(k, 0))) for k in children])
    np.testing.assert_array_equal(split._counter[...], [1, 1, 1])
    with pytest.raises(ValueError, match=r"this generator was split \(rng.split\(n\)\); draw from it inside "
                                         r"kiln.vmap"):
        split.uniform()
    spawned = rng.spawn(2)
    keys = random.split(nth_key(123, 1), 2)
    for r, k in zip(spawned, keys):
        np.testing.assert_array_equal(r.integers(0, 10, 2), random.randint(random.fold_in(k, 0), (2,), 0, 10))


def test_seeds_and_errors():
    a, b = stateful_rng(), stateful_rng()  # from the system's entropy: two different generators
    assert float(a.uniform()) != float(b.uniform())
    with pytest.raises(TypeError, match=r"inside a traced function it needs an explicit seed"):
        kiln.jit(lambda x: stateful_rng().uniform() + x)(1.0)
    with pytest.raises(ValueError, match=r"base_key must be a typed PRNG key"):
        StatefulPRNG(random.PRNGKey(0), kiln.new_ref(0))
    with pytest.raises(ValueError, match=r"the counter must be an integer Ref"):
        StatefulPRNG(random.key(0), 0)
    assert float(kiln.jit(lambda x: stateful_rng(3).uniform() + x)(0.0)) == float(random.uniform(nth_key(3, 0)))


def test_an_unsplit_generator_under_vmap_raises():
    # JEP 28845: a generator closed over by a vmapped function would hand every element the same key (its counter
    # is one unmapped Ref); as in JAX, writing that Ref under vmap raises, and the message says to split it.
    rng = stateful_rng(0)
    with pytest.raises(ValueError, match=r"kiln.vmap\(<lambda>\): the function writes to a Ref that is not mapped "
                                         r".*split it \(rng.split\(n\)\) and pass it as a mapped argument"):
        kiln.vmap(lambda x: x + rng.uniform())(jnp.arange(3.0))
    assert int(rng._counter[...]) == 0  # the failed call moved no state on
    got = kiln.vmap(lambda x, r: x + r.uniform())(jnp.arange(3.0), rng.split(3))
    children = random.split(nth_key(0, 0), 3)
    np.testing.assert_array_equal(got, [i + float(random.uniform(random.fold_in(k, 0))) for i, k in
                                        enumerate(children)])


def test_differentiating_a_draw_uses_the_state_before_it():
    # grad (and checkpoint under it) of a function that draws: the draw is the generator's next one, and the state
    # moves on once per call. (Before, the counter's new value was read back into the differentiated program, so the
    # derivative saw the draw after the right one; JAX 0.10.2 raises for an addupdate under grad.)
    rng = stateful_rng(3)
    assert float(kiln.grad(lambda x: x * rng.uniform())(1.0)) == float(random.uniform(nth_key(3, 0)))
    value, grad = kiln.value_and_grad(kiln.checkpoint(lambda x: x * rng.uniform()))(2.0)
    assert float(grad) == float(random.uniform(nth_key(3, 1))) and float(value) == 2 * float(grad)
    assert int(rng._counter[...]) == 2
    counter = kiln.new_ref(0)

    def f(x):
        counter[...] += 1
        return x * counter[...]
    assert float(kiln.grad(f)(1.0)) == 1.0 and int(counter[...]) == 1  # as JAX: 1, not the value after the write
