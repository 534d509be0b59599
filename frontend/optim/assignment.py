"""The linear assignment problem (``optax.assignment``): given an (n, m) cost matrix, the min(n, m) row/column
pairs, each row and column used at most once, of least total cost. Both solvers follow optax's algorithms step
by step (with kiln.lax loops), so they pick the same assignment as optax even among ties."""
from __future__ import annotations

import functools

from .. import lax
from .. import numpy as jnp
from ..control.api import fori_loop, scan, while_loop

__all__ = ["hungarian_algorithm", "base_hungarian_algorithm"]


def _cost_matrix(cost_matrix, fn: str):
    cost_matrix = jnp.asarray(cost_matrix)
    if cost_matrix.ndim != 2:
        raise ValueError(f"optim.assignment.{fn}: cost_matrix must be a matrix (n, m), got shape "
                         f"{cost_matrix.shape}; vmap the function for a batch of matrices")
    if not (jnp.issubdtype(cost_matrix.dtype, jnp.floating) or jnp.issubdtype(cost_matrix.dtype, jnp.integer)):
        raise TypeError(f"optim.assignment.{fn}: cost_matrix must hold real numbers (float or int), got "
                        f"{cost_matrix.dtype}")
    return cost_matrix


def _empty():
    return jnp.zeros(0, int), jnp.zeros(0, int)


# ---------------------------------------------------------------------------------------------------------
# hungarian_algorithm: the shortest-augmenting-path variant of the Scenic library, one row per scan step
# ---------------------------------------------------------------------------------------------------------

def _add_row(cost_matrix, state, row):
    u, v, parent = state
    rows, cols = cost_matrix.shape
    parent = parent.at[0].set(row + 1)  # column 0 is a virtual column holding the new row

    def grow(s):  # one Dijkstra step: settle the nearest unused column, update the potentials
        u, v, used, minv, path, col = s
        used = used.at[col].set(True)
        unused = ~used[1:]
        r = parent[col]
        cur = jnp.where(unused, cost_matrix[r - 1, :] - u[r] - v[1:], jnp.inf)
        path = jnp.where(cur < minv, col, path)
        minv = jnp.where(cur < minv, cur, minv)
        col = jnp.argmin(jnp.where(unused, minv, jnp.inf)) + 1
        delta = minv.min(where=unused, initial=jnp.inf)
        # used columns' rows gain delta; the others scatter into the spare slot u[rows + 1]
        u = u.at[jnp.where(used, parent, rows + 1)].add(delta)
        v = jnp.where(used, v - delta, v)
        minv = jnp.where(unused, minv - delta, minv)
        return u, v, used, minv, path, col

    init = (u, v, jnp.zeros(cols + 1, bool), jnp.full(cols, jnp.inf), jnp.zeros(cols, int), jnp.zeros((), int))
    u, v, _, _, path, col = while_loop(lambda s: parent[s[-1]] != 0, grow, init)

    def step_back(s):  # flip the augmenting path, from its free end back to the virtual column
        parent, col = s
        prev = path[col - 1]
        return parent.at[col].set(parent[prev]), prev

    parent, _ = while_loop(lambda s: s[1] != 0, step_back, (parent, col))
    return (u, v, parent), None


def hungarian_algorithm(cost_matrix):
    """Least-cost assignment of an (n, m) ``cost_matrix``: ``(i, j)``, row and column indices of the
    min(n, m) chosen pairs (total cost ``cost_matrix[i, j].sum()``). Works under jit and vmap."""
    cost_matrix = _cost_matrix(cost_matrix, "hungarian_algorithm")
    if 0 in cost_matrix.shape:
        return _empty()
    transpose = cost_matrix.shape[0] > cost_matrix.shape[1]
    if transpose:
        cost_matrix = cost_matrix.T
    rows, cols = cost_matrix.shape
    init = (jnp.zeros(rows + 2), jnp.zeros(cols + 1), jnp.zeros(cols + 1, int))  # potentials; column -> row + 1
    (_, _, parent), _ = scan(functools.partial(_add_row, cost_matrix), init, jnp.arange(rows))
    if rows == cols:
        parent, indices = parent[1:], jnp.arange(rows)
    else:  # the assigned columns are those with a row (parent > 0): top_k lists them
        parent, indices = lax.top_k(parent[1:], rows)
    parent -= 1
    return (indices, parent) if transpose else (parent, indices)


# ---------------------------------------------------------------------------------------------------------
# base_hungarian_algorithm: Crouse's (2016) shortest augmenting path, as scipy's linear_sum_assignment
# ---------------------------------------------------------------------------------------------------------

def _scan_remaining(it, val):
    # relax column remaining[it] from row i; index tracks the nearest column (ties: prefer a free one)
    remaining, min_value, costs, i, u, v, spc, path, lowest, row4col, index = val
    j = remaining[it]
    r = min_value + costs[i, j] - u[i] - v[j]
    path = path.at[j].set(jnp.where(r < spc[j], i, path[j]))
    spc = spc.at[j].min(r)
    index = jnp.where((spc[j] < lowest) | ((spc[j] == lowest) & (row4col[j] == -1)), it, index)
    lowest = jnp.minimum(lowest, spc[j])
    return remaining, min_value, costs, i, u, v, spc, path, lowest, row4col, index


def _settle_column(remaining, index, row4col, sink, i, sc, num_remaining):
    j = remaining[index]
    free = row4col[j] == -1
    sink = jnp.where(free, j, sink)
    i = jnp.where(free, i, row4col[j])
    sc = sc.at[j].set(True)
    num_remaining -= 1
    remaining = remaining.at[index].set(remaining[num_remaining])
    return remaining, sink, i, sc, num_remaining


def _augpath_step(val):
    costs, u, v, path, row4col, row, min_value, num_remaining, remaining, sr, sc, spc, sink = val
    sr = sr.at[row].set(True)
    init = (remaining, min_value, costs, row, u, v, spc, path, jnp.asarray(jnp.inf, spc.dtype), row4col,
            jnp.asarray(-1, int))
    remaining, _, _, _, _, _, spc, path, lowest, _, index = fori_loop(0, num_remaining, _scan_remaining, init)
    min_value = lowest
    sink = jnp.where(min_value == jnp.inf, -1, sink)  # an infeasible (all-inf) cost matrix
    new = _settle_column(remaining, index, row4col, sink, row, sc, num_remaining)
    remaining, sink, row, sc, num_remaining = (jnp.where(sink == -1, a, b) for a, b in
                                               zip(new, (remaining, sink, row, sc, num_remaining)))
    return costs, u, v, path, row4col, row, min_value, num_remaining, remaining, sr, sc, spc, sink


def _find_augmenting_path(costs, u, v, path, row4col, row):
    n, m = costs.shape
    init = (costs, u, v, path, row4col, row, jnp.zeros((), costs.dtype), jnp.asarray(m, int),
            jnp.arange(m)[::-1], jnp.zeros(n, bool), jnp.zeros(m, bool), jnp.full(m, jnp.inf, costs.dtype),
            jnp.asarray(-1, int))
    out = while_loop(lambda val: val[-1] == -1, _augpath_step, init)
    _, _, _, path, _, _, min_value, _, _, sr, sc, spc, sink = out
    return sink, min_value, sr, sc, spc, path


def _assign_row(row, val):
    costs, u, v, path, row4col, col4row = val
    sink, min_value, sr, sc, spc, path = _find_augmenting_path(costs, u, v, path, row4col, row)
    u = u.at[row].add(min_value)
    mask = sr & (jnp.arange(costs.shape[0]) != row)
    u = jnp.where(mask, u + min_value - spc[col4row], u)
    v = jnp.where(sc, v + spc - min_value, v)

    def augment(carry):
        sink, row4col, col4row, _ = carry
        i = path[sink]
        row4col = row4col.at[sink].set(i)
        col4row, sink = col4row.at[i].set(sink), col4row[i]
        return sink, row4col, col4row, i == row

    _, row4col, col4row, _ = while_loop(lambda c: ~c[-1], augment, (sink, row4col, col4row, jnp.asarray(False)))
    return costs, u, v, path, row4col, col4row


def base_hungarian_algorithm(cost_matrix):
    """Least-cost assignment by Crouse's shortest augmenting path algorithm (as SciPy's
    ``linear_sum_assignment``); same contract as :func:`hungarian_algorithm`."""
    cost_matrix = _cost_matrix(cost_matrix, "base_hungarian_algorithm")
    if 0 in cost_matrix.shape:
        return _empty()
    transpose = cost_matrix.shape[1] < cost_matrix.shape[0]
    if transpose:
        cost_matrix = cost_matrix.T
    cost_matrix = cost_matrix.astype(float)
    n, m = cost_matrix.shape
    init = (cost_matrix, jnp.zeros(n, cost_matrix.dtype), jnp.zeros(m, cost_matrix.dtype), jnp.full(m, -1),
            jnp.full(m, -1), jnp.full(n, -1))
    col4row = fori_loop(0, n, _assign_row, init)[-1]
    if transpose:
        i = col4row.argsort()
        return col4row[i], i
    return jnp.arange(n), col4row
