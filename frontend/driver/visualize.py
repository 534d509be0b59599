"""``kiln.debug.visualize_array_sharding`` / ``visualize_sharding``: print which devices hold which block of a
1-d or 2-d array, as a grid of boxes labelled with the device ids ("CPU 0,1"), in JAX's layout.

JAX draws the grid with the ``rich`` package; kiln draws the same boxes itself in plain text (no
dependency). With ``use_color`` on a terminal the blocks are coloured backgrounds instead of boxes.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.tracing import Tracer
from .sharding import Sharding

ColorMap = Callable[[float], Sequence[float]]

# The background colours used without a colour map (one per block, spread over the palette).
_PALETTE = ((0.22, 0.23, 0.47), (0.32, 0.33, 0.64), (0.42, 0.43, 0.81), (0.61, 0.62, 0.87),
            (0.39, 0.47, 0.22), (0.55, 0.64, 0.32), (0.71, 0.81, 0.42), (0.81, 0.86, 0.61),
            (0.55, 0.43, 0.19), (0.74, 0.62, 0.22), (0.91, 0.73, 0.32), (0.91, 0.80, 0.58),
            (0.52, 0.24, 0.22), (0.68, 0.29, 0.29), (0.84, 0.38, 0.42), (0.91, 0.59, 0.61),
            (0.48, 0.25, 0.45), (0.65, 0.32, 0.58), (0.81, 0.43, 0.74), (0.87, 0.62, 0.84))


def _palette(value: float) -> tuple[float, float, float]:
    return _PALETTE[min(int(value * len(_PALETTE)), len(_PALETTE) - 1)]


def _chunk(size: int, index: Any) -> tuple[int, int]:
    """(block number, block length) of a device's slice of one dimension."""
    if isinstance(index, int):
        return index, 1
    start, stop = index.start or 0, size if index.stop is None else index.stop
    length = stop - start
    return (start // length if length else 0), length


def visualize_sharding(shape: Sequence[int], sharding: Sharding, *, use_color: bool = True, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map: ColorMap | None = None) -> None:
    """Print how an array of ``shape`` (1-d or 2-d) is laid out by ``sharding``: one box per block, labelled
    with the platform and the ids of the devices holding it. ``scale`` sizes the drawing; each box is between
    ``min_width`` and ``max_width`` characters wide. ``use_color`` (on a terminal only) fills the blocks with
    colours from ``color_map`` (a function of [0, 1] to RGB(A) in [0, 1]) instead of drawing boxes."""
    shape = tuple(int(n) for n in shape)
    if len(shape) not in (1, 2):
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    if not isinstance(sharding, Sharding):
        raise TypeError(f"kiln.debug.visualize_sharding: expected a kiln.sharding Sharding, got "
                        f"{type(sharding).__name__} {sharding!r:.60}")
    if any(n == 0 for n in shape):
        raise ValueError(f"kiln.debug.visualize_sharding: the shape {shape} has no elements to draw")
    out = sys.stdout
    use_color = bool(use_color) and _color_terminal(out)
    kind = next(iter(sharding._device_assignment)).platform.upper()
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    blocks: dict[tuple[int, int], list[int]] = {}
    sizes: dict[tuple[int, int], tuple[float | None, float]] = {}  # (height fraction or None, width fraction)
    for device, index in sharding.devices_indices_map(shape).items():
        chunks = [_chunk(n, i) for n, i in zip(shape, index)]
        if len(shape) == 2:
            (row, rows_len), (col, cols_len) = chunks
            sizes[row, col] = (rows_len / shape[0], cols_len / shape[1])
        else:
            (col, cols_len), = chunks
            row = 0
            sizes[row, col] = (None, cols_len / shape[0])
        blocks.setdefault((row, col), []).append(device.id)
    n_rows = max(r for r, _ in blocks) + 1
    n_cols = max(c for _, c in blocks) + 1

    # Each block: its label and its padding (top, right, bottom, left), as JAX computes them.
    cells: dict[tuple[int, int], tuple[str, tuple[int, int, int, int]]] = {}
    colors = _colors(color_map or _palette, n_rows, n_cols) if use_color else None
    for (r, c), ids in blocks.items():
        label = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        height_frac, width_frac = sizes[r, c]
        width = min(max(int(width_frac * base_width * 2.5), min_width), max_width)
        height = 1 if height_frac is None else int(height_frac * base_height)
        left, extra = divmod(width - len(label) - 2, 2)
        right = left + extra
        top, extra = divmod(height - 2, 2)
        bottom = top + extra
        if use_color:
            top, right, bottom, left = top + 1, right + 1, bottom + 1, left + 1
        cells[r, c] = (label, (max(top, 0), max(right, 0), max(bottom, 0), max(left, 0)))

    col_widths = [max(len(cells[r, c][0]) + cells[r, c][1][1] + cells[r, c][1][3] for r in range(n_rows))
                  for c in range(n_cols)]
    row_heights = [max(1 + cells[r, c][1][0] + cells[r, c][1][2] for c in range(n_cols)) for r in range(n_rows)]

    def cell_lines(r: int, c: int) -> list[str]:
        label, (top, right, bottom, left) = cells[r, c]
        inner = col_widths[c] - left - right
        space = max(inner - len(label), 0)
        text = " " * left + " " * (space // 2) + label + " " * (space - space // 2) + " " * right
        blank = " " * col_widths[c]
        lines = [blank] * top + [text] + [blank] * bottom
        return lines + [blank] * (row_heights[r] - len(lines))

    lines: list[str] = []
    if use_color:
        order = iter(colors)
        painted = {(r, c): next(order) for r in range(n_rows) for c in range(n_cols)}
        for r in range(n_rows):
            columns = [cell_lines(r, c) for c in range(n_cols)]
            for k in range(row_heights[r]):
                lines.append("".join(_paint(columns[c][k], painted[r, c]) for c in range(n_cols)))
    else:
        def rule(left: str, cross: str, right: str) -> str:
            return left + cross.join("─" * w for w in col_widths) + right
        lines.append(rule("┌", "┬", "┐"))
        for r in range(n_rows):
            if r:
                lines.append(rule("├", "┼", "┤"))
            columns = [cell_lines(r, c) for c in range(n_cols)]
            for k in range(row_heights[r]):
                lines.append("│" + "│".join(columns[c][k] for c in range(n_cols)) + "│")
        lines.append(rule("└", "┴", "┘"))
    out.write("\n".join(lines) + "\n")
    out.flush()


def _color_terminal(stream: Any) -> bool:
    """Whether ``stream`` shows colours: a terminal, with NO_COLOR unset and TERM not 'dumb'."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _colors(color_map: ColorMap, n_rows: int, n_cols: int) -> list[tuple[float, float, float]]:
    """One colour per block, stepping half-way through the map each time so neighbours differ."""
    n = n_rows * n_cols
    values = np.linspace(0, 1, n)
    out, i = [], 0
    for _ in range(n):
        out.append(tuple(float(v) for v in color_map(float(values[i]))[:3]))
        i = (i + n // 2 + (n % 2 == 0)) % n
    return out


def _paint(text: str, rgb: tuple[float, float, float]) -> str:
    r, g, b = (int(v * 255) for v in rgb)
    fg = (0, 0, 0) if r * 0.299 + g * 0.587 + b * 0.114 > 186 else (255, 255, 255)
    return f"\x1b[48;2;{r};{g};{b}m\x1b[38;2;{fg[0]};{fg[1]};{fg[2]}m{text}\x1b[0m"


def visualize_array_sharding(arr: Any, *, use_color: bool = True, scale: float = 1.0, min_width: int = 9,
                             max_width: int = 80, color_map: ColorMap | None = None) -> None:
    """Print which devices hold which block of ``arr`` (a 1-d or 2-d kiln array); see :func:`visualize_sharding`."""
    if isinstance(arr, Tracer):
        raise TypeError("kiln.debug.visualize_array_sharding: the value is traced (inside kiln.jit or another "
                        "transformation), where its layout is not known yet; call it on the jitted function's "
                        "result, or use kiln.debug.inspect_array_sharding(x, callback=...) inside it")
    sharding = getattr(arr, "sharding", None)
    if not isinstance(sharding, Sharding):
        raise TypeError(f"kiln.debug.visualize_array_sharding: expected a kiln array, got {type(arr).__name__}; "
                        "put it on devices first (kiln.device_put)")
    visualize_sharding(arr.shape, sharding, use_color=use_color, scale=scale, min_width=min_width,
                       max_width=max_width, color_map=color_map)
