"""The functions taking ``out_sharding=`` (as in JAX 0.10.2), each with a small call and a PartitionSpec that
fits its result on a ("x", "y") mesh of 4 x 2 devices (or 1 x 1). Shared by tests/multidevice/test_out_sharding.py
(8 devices) and tests/frontend/test_out_sharding_param.py (one device)."""
from __future__ import annotations

import numpy as np

import kiln.lax as lax
import kiln.numpy as jnp
import kiln.random as jr

# The names whose JAX signature has out_sharding, per module; positional-or-keyword where JAX has it so.
NAMES = {
    "numpy": ("arange array asarray bincount broadcast_to dot einsum empty full full_like matmul ones ones_like "
              "percentile ravel repeat reshape tensordot zeros zeros_like").split(),
    "lax": ("broadcast broadcast_in_dim broadcasted_iota conv_general_dilated dot dot_general empty reduce "
            "reduce_sum reshape rng_bit_generator ragged_dot ragged_dot_general").split(),
    "random": ("ball bernoulli beta bits categorical cauchy chisquare dirichlet exponential f gamma "
               "generalized_normal geometric gumbel laplace loggamma logistic lognormal maxwell multivariate_normal "
               "normal orthogonal pareto permutation poisson rademacher randint rayleigh t triangular "
               "truncated_normal uniform wald").split(),
}
POSITIONAL = {"lax.conv_general_dilated", "lax.reduce", "lax.ragged_dot", "lax.ragged_dot_general"}

A = np.arange(32, dtype=np.float32).reshape(8, 4) / 8
B = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
V8 = np.arange(8, dtype=np.float32)
K = jr.key(0)
RAGGED = lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))

XY, X = ("x", "y"), ("x",)
# (module.name, call(out_sharding) -> result, spec of the result's layout)
CASES = [
    ("numpy.arange", lambda s: jnp.arange(8, out_sharding=s), X),
    ("numpy.array", lambda s: jnp.array(A, out_sharding=s), XY),
    ("numpy.asarray", lambda s: jnp.asarray(V8, out_sharding=s), X),
    ("numpy.bincount", lambda s: jnp.bincount(np.array([0, 1, 1, 3, 7, 2, 2]), length=8, out_sharding=s), X),
    ("numpy.broadcast_to", lambda s: jnp.broadcast_to(B[0], (8, 4), out_sharding=s), XY),
    ("numpy.dot", lambda s: jnp.dot(A, B, out_sharding=s), XY),
    ("numpy.einsum", lambda s: jnp.einsum("ij,jk->ik", A, B, out_sharding=s), (None, "y")),
    ("numpy.empty", lambda s: jnp.empty((8, 4), out_sharding=s), XY),
    ("numpy.full", lambda s: jnp.full((8, 4), 2.5, out_sharding=s), XY),
    ("numpy.full_like", lambda s: jnp.full_like(A, 3, out_sharding=s), X),
    ("numpy.matmul", lambda s: jnp.matmul(A, B, out_sharding=s), XY),
    ("numpy.ones", lambda s: jnp.ones(8, jnp.int32, out_sharding=s), X),
    ("numpy.ones_like", lambda s: jnp.ones_like(A, out_sharding=s), XY),
    ("numpy.percentile", lambda s: jnp.percentile(A, 30.0, axis=1, out_sharding=s), X),
    ("numpy.ravel", lambda s: jnp.ravel(B, out_sharding=s), (("x", "y"),)),
    ("numpy.repeat", lambda s: jnp.repeat(B[0], 2, out_sharding=s), X),
    ("numpy.reshape", lambda s: jnp.reshape(V8, (4, 2), out_sharding=s), XY),
    ("numpy.tensordot", lambda s: jnp.tensordot(A, B, axes=1, out_sharding=s), XY),
    ("numpy.zeros", lambda s: jnp.zeros((8, 4), out_sharding=s), (None, "y")),
    ("numpy.zeros_like", lambda s: jnp.zeros_like(V8, out_sharding=s), X),
    ("lax.broadcast", lambda s: lax.broadcast(B[0], (8,), out_sharding=s), XY),
    ("lax.broadcast_in_dim", lambda s: lax.broadcast_in_dim(V8, (8, 4), (0,), out_sharding=s), XY),
    ("lax.broadcasted_iota", lambda s: lax.broadcasted_iota(np.int32, (8, 4), 1, out_sharding=s), XY),
    ("lax.conv_general_dilated",
     lambda s: lax.conv_general_dilated(A.reshape(8, 2, 2), B.reshape(4, 2, 2), (1,), "SAME", out_sharding=s),
     ("x", "y", None)),
    ("lax.dot", lambda s: lax.dot(A, B, out_sharding=s), XY),
    ("lax.dot_general", lambda s: lax.dot_general(A, B, (((1,), (0,)), ((), ())), out_sharding=s), XY),
    ("lax.empty", lambda s: lax.empty((8, 4), np.float32, out_sharding=s), XY),
    ("lax.reduce", lambda s: lax.reduce((A, A * 2), (np.float32(0), np.float32(0)),
                                        lambda a, b: (a[0] + b[0], a[1] + b[1]), (1,), out_sharding=s), X),
    ("lax.reduce_sum", lambda s: lax.reduce_sum(A, (1,), out_sharding=s), X),
    ("lax.reshape", lambda s: lax.reshape(V8, (4, 2), out_sharding=s), XY),
    ("lax.rng_bit_generator",
     lambda s: lax.rng_bit_generator(np.arange(4, dtype=np.uint32), (8, 4), out_sharding=s)[1], XY),
    ("lax.ragged_dot", lambda s: lax.ragged_dot(A, np.stack([B, -B]), np.array([3, 5], np.int32), out_sharding=s),
     XY),
    ("lax.ragged_dot_general", lambda s: lax.ragged_dot_general(A, np.stack([B, -B]), np.array([3, 5], np.int32),
                                                                RAGGED, out_sharding=s), XY),
    ("random.ball", lambda s: jr.ball(K, 4, shape=(8,), out_sharding=s), XY),
    ("random.bernoulli", lambda s: jr.bernoulli(K, 0.3, (8,), out_sharding=s), X),
    ("random.beta", lambda s: jr.beta(K, 2.0, 3.0, (8,), out_sharding=s), X),
    ("random.bits", lambda s: jr.bits(K, (8, 4), out_sharding=s), XY),
    ("random.categorical", lambda s: jr.categorical(K, A, out_sharding=s), X),
    ("random.cauchy", lambda s: jr.cauchy(K, (8,), out_sharding=s), X),
    ("random.chisquare", lambda s: jr.chisquare(K, 3.0, (8,), out_sharding=s), X),
    ("random.dirichlet", lambda s: jr.dirichlet(K, np.ones(4, np.float32), (8,), out_sharding=s), XY),
    ("random.exponential", lambda s: jr.exponential(K, (8,), out_sharding=s), X),
    ("random.f", lambda s: jr.f(K, 3.0, 4.0, (8,), out_sharding=s), X),
    ("random.gamma", lambda s: jr.gamma(K, 2.0, (8,), out_sharding=s), X),
    ("random.generalized_normal", lambda s: jr.generalized_normal(K, 1.5, (8,), out_sharding=s), X),
    ("random.geometric", lambda s: jr.geometric(K, 0.3, (8,), out_sharding=s), X),
    ("random.gumbel", lambda s: jr.gumbel(K, (8, 4), out_sharding=s), XY),
    ("random.laplace", lambda s: jr.laplace(K, (8,), out_sharding=s), X),
    ("random.loggamma", lambda s: jr.loggamma(K, 2.0, (8,), out_sharding=s), X),
    ("random.logistic", lambda s: jr.logistic(K, (8,), out_sharding=s), X),
    ("random.lognormal", lambda s: jr.lognormal(K, 0.5, (8,), out_sharding=s), X),
    ("random.maxwell", lambda s: jr.maxwell(K, (8,), out_sharding=s), X),
    ("random.multivariate_normal",
     lambda s: jr.multivariate_normal(K, np.zeros(4, np.float32), np.eye(4, dtype=np.float32), (8,),
                                      out_sharding=s), XY),
    ("random.normal", lambda s: jr.normal(K, (8, 4), out_sharding=s), XY),
    ("random.orthogonal", lambda s: jr.orthogonal(K, 2, (8,), out_sharding=s), ("x", None, "y")),
    ("random.pareto", lambda s: jr.pareto(K, 2.0, (8,), out_sharding=s), X),
    ("random.permutation", lambda s: jr.permutation(K, 8, out_sharding=s), X),
    ("random.poisson", lambda s: jr.poisson(K, 3.0, (8,), out_sharding=s), X),
    ("random.rademacher", lambda s: jr.rademacher(K, (8,), out_sharding=s), X),
    ("random.randint", lambda s: jr.randint(K, (8,), 0, 10, out_sharding=s), X),
    ("random.rayleigh", lambda s: jr.rayleigh(K, 1.0, (8,), out_sharding=s), X),
    ("random.t", lambda s: jr.t(K, 3.0, (8,), out_sharding=s), X),
    ("random.triangular", lambda s: jr.triangular(K, 0.0, 0.3, 1.0, (8,), out_sharding=s), X),
    ("random.truncated_normal", lambda s: jr.truncated_normal(K, -1.0, 1.0, (8,), out_sharding=s), X),
    ("random.uniform", lambda s: jr.uniform(K, (8, 4), out_sharding=s), XY),
    ("random.wald", lambda s: jr.wald(K, 1.0, (8,), out_sharding=s), X),
]
