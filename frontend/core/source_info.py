"""Where in the user's code each equation came from.

Every equation records the first Python frame outside kiln's own packages (``kiln``, ``kiln.frontend``,
``kiln.lowering``, ``kiln.runtime``) at the time it was traced: the user's line that created it. Walking
the frames is cheap (``sys._getframe`` and a cached per-file test); the line, column and function name are
worked out only when asked for (printing the IR, lowering with locations, a debug_nans error).

Transformations (jvp, transpose, vmap, partial evaluation, control-flow rules) produce equations on
behalf of an equation they are processing; they run the rule inside ``with at(eqn.source):`` so that the
new equations keep the location of the one they came from (a NaN in the backward pass then names the
forward line).
"""
from __future__ import annotations

import contextvars
import functools
import os
import sys
from typing import Any

# The location transformations are working on behalf of (None: look at the Python stack).
_override: contextvars.ContextVar[SourceInfo | None] = contextvars.ContextVar("kiln_source_info", default=None)
# The XLA metadata in effect (set_xla_metadata): sorted ((key, value), ...) string pairs, never empty; None if none.
_metadata: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("kiln_xla_metadata", default=None)

# Directories whose files are kiln's own (filled on first use, when every package is loaded).
_kiln_dirs: tuple[str, ...] | None = None
# co_filename -> is it one of kiln's files (code objects of one file share the string).
_internal: dict[str, bool] = {}


class SourceInfo:
    """A user frame's code object and instruction offset; line, column and function name on demand; and the XLA
    metadata in effect there (``metadata``: sorted ``(key, value)`` string pairs, or None). ``code`` is None for
    metadata without a known location (no user frame on the stack)."""

    __slots__ = ("code", "lasti", "_pos", "metadata")

    def __init__(self, code: Any, lasti: int, metadata: tuple | None = None):
        self.code, self.lasti, self._pos, self.metadata = code, lasti, None, metadata

    @property
    def file(self) -> str:
        return "<unknown>" if self.code is None else self.code.co_filename

    @property
    def function(self) -> str:
        return "<unknown>" if self.code is None else self.code.co_name

    @property
    def line(self) -> int:
        return self.position[0]

    @property
    def column(self) -> int:
        return self.position[1]

    @property
    def position(self) -> tuple[int, int]:
        """(line, column): 1-based line, 0-based column, as Python counts them."""
        if self._pos is None:
            self._pos = (0, 0) if self.code is None else _position(self.code, self.lasti)
        return self._pos

    def short(self) -> str:
        """``file.py:12 (f)``: the file's base name, the line and the function."""
        if self.code is None:
            return "an unknown location"
        return f"{os.path.basename(self.file)}:{self.line} ({self.function})"

    def __str__(self) -> str:
        if self.code is None:
            return "an unknown location"
        return f"{self.file}:{self.line} ({self.function})"

    def __repr__(self) -> str:
        return f"SourceInfo({self})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SourceInfo) and self.code is other.code and self.lasti == other.lasti

    def __hash__(self) -> int:
        return hash((id(self.code), self.lasti))


@functools.lru_cache(maxsize=4096)
def _positions(code: Any) -> tuple:
    return tuple(code.co_positions())


def _position(code: Any, lasti: int) -> tuple[int, int]:
    """(line, column) of the instruction at byte offset ``lasti`` (1-based line, 0-based column as Python)."""
    try:
        line, _, col, _ = _positions(code)[lasti // 2]
    except (IndexError, ValueError, AttributeError):
        line, col = None, None
    if line is None:
        line = code.co_firstlineno
    return line, col or 0


def _dirs() -> tuple[str, ...]:
    global _kiln_dirs
    if _kiln_dirs is not None:
        return _kiln_dirs
    names = ("kiln", "kiln.frontend", "kiln.lowering", "kiln.runtime")
    dirs = [os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "")]  # frontend/
    for name in names:
        for path in getattr(sys.modules.get(name), "__path__", None) or ():
            dirs.append(os.path.join(os.path.realpath(path), ""))
    found = tuple(dict.fromkeys(dirs))
    if all(n in sys.modules for n in names):  # kept once every package is loaded
        _kiln_dirs = found
    return found


def is_internal(filename: str) -> bool:
    """Whether ``filename`` is one of kiln's own source files."""
    known = _internal.get(filename)
    if known is None:
        real = filename if filename.startswith("<") else os.path.realpath(filename)
        known = _internal[filename] = real.startswith(_dirs())
    return known


def user_frame_info(depth: int = 1) -> SourceInfo | None:
    """The first frame outside kiln, counted from ``depth`` frames above the caller (None: none found)."""
    try:
        f = sys._getframe(depth + 1)
    except ValueError:
        return None
    internal = _internal
    while f is not None:
        code = f.f_code
        flag = internal.get(code.co_filename)
        if flag is None:
            flag = is_internal(code.co_filename)
        if not flag:
            return SourceInfo(code, f.f_lasti)
        f = f.f_back
    return None


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by this function's caller that names the first frame
    outside kiln (the user's line, however deep in kiln the warning is raised)."""
    f, level = sys._getframe(2), 2
    while f is not None and is_internal(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


def current(depth: int = 1) -> SourceInfo | None:
    """The location of an equation created now: the one a transformation works on behalf of (see
    :class:`at`), else the first frame outside kiln on the stack, from ``depth`` frames up (1: the caller;
    more skips frames known to be kiln's, which saves materialising their frame objects); with the XLA metadata
    in effect, if any, merged in (:func:`with_metadata`). On every traced equation: kept cheap."""
    source = _override.get()
    if source is None:
        source = user_frame_info(depth)  # the same count: user_frame_info adds its own frame
    metadata = _metadata.get()
    if metadata is not None:
        source = with_metadata(source, metadata)
    return source


def with_metadata(source: SourceInfo | None, outer: tuple) -> SourceInfo:
    """``source`` with the XLA metadata ``outer`` (the metadata in effect) under its own: a key both set takes
    ``source``'s value, as JAX lets an equation's own metadata win over the context a transformation runs in."""
    if source is None:
        return SourceInfo(None, 0, outer)
    inner = source.metadata
    merged = outer if inner is None else merge_metadata(outer, dict(inner))
    if merged == inner:
        return source
    tagged = SourceInfo(source.code, source.lasti, merged)
    tagged._pos = source._pos
    return tagged


def merge_metadata(base: tuple | None, updates: dict[str, str | None]) -> tuple | None:
    """``base`` (sorted ``(key, value)`` pairs, or None) updated by ``updates``: a None value removes its key.
    The result is sorted, and None when empty."""
    merged = dict(base or ())
    merged.update(updates)
    pairs = tuple(sorted((k, v) for k, v in merged.items() if v is not None))
    return pairs or None


# The XLA metadata in effect here (sorted ``(key, value)`` string pairs), or None: a bound C method (read on every
# jit cache lookup).
current_metadata = _metadata.get


def set_metadata(metadata: tuple | None) -> contextvars.Token:
    """Make ``metadata`` the XLA metadata in effect; returns the token that :func:`reset_metadata` takes."""
    return _metadata.set(metadata)


def reset_metadata(token: contextvars.Token) -> None:
    """Restore the XLA metadata in effect before the :func:`set_metadata` that returned ``token``."""
    _metadata.reset(token)


class at:
    """``with at(source): ...``: equations created in the block get ``source`` (no-op when None)."""

    __slots__ = ("source", "token")

    def __init__(self, source: SourceInfo | None):
        self.source = source
        self.token = None

    def __enter__(self) -> None:
        if self.source is not None:
            self.token = _override.set(self.source)

    def __exit__(self, *exc: Any) -> None:
        if self.token is not None:
            _override.reset(self.token)
            self.token = None


def override() -> SourceInfo | None:
    """The location set by an enclosing :class:`at`, if any."""
    return _override.get()


def fun_name(fun: Any) -> str:
    """How messages name a user's function: its ``__name__``; ``partial(body)`` for a ``functools.partial`` of
    ``body``; else its type's name."""
    name = getattr(fun, "__name__", None)
    if name:
        return name
    if isinstance(fun, functools.partial):
        return f"partial({fun_name(fun.func)})"
    return type(fun).__name__
