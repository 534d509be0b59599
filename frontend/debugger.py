"""``kiln.debug.breakpoint``: stop a running program and inspect the values of the Python frames that traced it
(``jax.debug.breakpoint``).

When the breakpoint is traced, kiln records the caller's frames (kiln's own frames left out): their source and
their local variables. Traced values among the locals become the operands of a ``debug_callback``; everything
else is kept as it was. When the program reaches the breakpoint, the callback rebuilds the frames with the
values as NumPy arrays and runs a small command-line debugger on them (``p``/``pp`` an expression, ``u``/``d``
to move between frames, ``l`` to list the source, ``w`` for the backtrace, ``c`` to continue, ``q`` to quit).
Outside any transformation it stops right away.
"""
from __future__ import annotations

import cmd
import inspect
import os
import pprint
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import IO, Any

from .core import tree_util
from .core.errors import KilnError
from .core.tracing import Tracer, abstractify
from .lax import api as lax
from .lax import callbacks

__all__ = ["breakpoint"]

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Frames in these folders are kiln's own (the installed package maps them to kiln.*).
_KILN_DIRS = tuple(os.path.join(_REPO, d) + os.sep for d in ("frontend", "lowering", "runtime", "kiln"))
_lock = threading.Lock()


class DebuggerError(KilnError, ValueError):
    """``kiln.debug.breakpoint`` was called with bad arguments."""


@dataclass
class Frame:
    """One Python frame as the debugger shows it: where it is, its source, and its local variables."""
    filename: str
    lineno: int
    function: str
    source: list[str]
    offset: int | None  # the index of the current line in ``source``
    locals: dict[str, Any]


def _source_of(frame) -> tuple[list[str], int | None]:
    try:
        lines, start = inspect.getsourcelines(frame)
    except (OSError, TypeError):
        return [], None
    offset = frame.f_lineno - max(start, 1)
    if not 0 <= offset < len(lines):
        return [], None
    # The source split at newlines (so it ends with an empty line, which the context shows, as JAX's jdb does)
    return "".join(lines).split("\n"), offset


class _Captured:
    """The frames of a breakpoint, split into traced values (operands of the callback) and the rest."""

    def __init__(self, frame_infos) -> None:
        self.dynamic: list[Any] = []
        self.frames = []  # (Frame without locals, [(name, kind, payload)])
        for info in frame_infos:
            source, offset = _source_of(info.frame)
            entries = []
            for name, value in info.frame.f_locals.items():
                try:
                    leaves, treedef = tree_util.tree_flatten(value)
                except Exception:  # not a pytree kiln can flatten: kept as it is
                    entries.append((name, "static", value))
                    continue
                traced = [isinstance(leaf, Tracer) for leaf in leaves]
                if not any(traced):
                    entries.append((name, "static", value))
                    continue
                start = len(self.dynamic)
                self.dynamic += [leaf for leaf, t in zip(leaves, traced) if t]
                entries.append((name, "traced", (treedef, traced, [None if t else leaf for leaf, t in
                                                                   zip(leaves, traced)], start)))
            self.frames.append((Frame(info.filename, info.lineno, info.function, source, offset, {}), entries))

    def rebuild(self, arrays) -> list[Frame]:
        frames = []
        for frame, entries in self.frames:
            local_vars = {}
            for name, kind, payload in entries:
                if kind == "static":
                    local_vars[name] = payload
                    continue
                treedef, traced, leaves, start = payload
                it = iter(arrays[start:])
                local_vars[name] = tree_util.tree_unflatten(treedef, [next(it) if t else leaf
                                                                       for leaf, t in zip(leaves, traced)])
            frames.append(Frame(frame.filename, frame.lineno, frame.function, frame.source, frame.offset,
                                local_vars))
        return frames


class CliDebugger(cmd.Cmd):
    """The command-line debugger of ``kiln.debug.breakpoint``. It prints what JAX's ``jdb`` prints (its banner,
    prompt and layout), so that the sessions of JAX's debugging docs read the same."""

    prompt = "(jdb) "

    def __init__(self, frames: list[Frame], stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.index = 0  # 0: the innermost frame (where the breakpoint is)
        self.intro = "Entering jdb:"

    def _say(self, text: str) -> None:
        print(text, file=self.stdout)

    def _error(self) -> None:
        self._say("*** " + traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip())

    def evaluate(self, expr: str) -> Any:
        return eval(expr, {}, dict(self.frames[self.index].locals))  # noqa: S307  (the user's own expression)

    def default(self, line: str) -> None:
        self.do_p(line)

    def emptyline(self) -> bool:
        return False  # an empty line does not repeat the last command

    def do_p(self, arg: str) -> None:
        """p <expression>: print the value of the expression in the current frame."""
        try:
            self._say(repr(self.evaluate(arg)))
        except Exception:
            self._error()

    def do_pp(self, arg: str) -> None:
        """pp <expression>: pretty-print the value of the expression."""
        try:
            self._say(pprint.pformat(self.evaluate(arg)))
        except Exception:
            self._error()

    def context(self, lines: int = 2) -> str:
        """The current line with ``lines + 1`` lines before it and ``lines`` after it (JAX's window)."""
        f = self.frames[self.index]
        out = [f"> {f.filename}({f.lineno})"]
        if f.offset is None:
            return "\n".join(out + ["    <no source>"])
        for i in range(max(0, f.offset - lines - 1), min(len(f.source), f.offset + lines + 1)):
            out.append(("->  " if i == f.offset else "    ") + f.source[i])
        return "\n".join(out)

    def do_up(self, arg: str) -> None:
        """u(p): move to the frame that called this one."""
        if self.index == len(self.frames) - 1:
            self._say("At topmost frame.")
        else:
            self.index += 1
        self._say(self.context())

    def do_down(self, arg: str) -> None:
        """d(own): move back towards the breakpoint's frame."""
        if self.index == 0:
            self._say("At bottommost frame.")
        else:
            self.index -= 1
        self._say(self.context())

    def do_list(self, arg: str) -> None:
        """l(ist): show the source around the current line."""
        self._say(self.context(lines=5))

    def do_where(self, arg: str) -> None:
        """w(here): the frames, outermost first."""
        lines = ["Traceback:"]
        for f in reversed(self.frames):
            lines.append(f'  File "{f.filename}", line {f.lineno}')
            lines.append("    " + (f.source[f.offset].strip() if f.offset is not None else "<no source>"))
        self._say("\n".join(lines))

    def do_continue(self, arg: str) -> bool:
        """c(ontinue): leave the debugger; the program goes on."""
        return True

    def do_quit(self, arg: str) -> None:
        """q(uit): leave the debugger and exit the program (SystemExit)."""
        raise SystemExit(0)

    do_u, do_d, do_l, do_w, do_bt = do_up, do_down, do_list, do_where, do_where
    do_c = do_cont = do_continue
    do_q = do_exit = do_EOF = do_quit

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                return
            except KeyboardInterrupt:
                self._say("--KeyboardInterrupt--")


def breakpoint(*, backend: str | None = None, filter_frames: bool = True, num_frames: int | None = None,  # noqa: A001
               ordered: bool = False, token: Any = None, **kwargs: Any) -> Any:
    """Stop at this point of the program and inspect the values of the frames that traced it
    (``jax.debug.breakpoint``): under ``jit`` each time the program reaches it, under ``vmap`` once per batch
    element, outside any transformation right away.

    ``backend``: only ``'cli'`` (the default), a command-line debugger on ``sys.stdin``/``sys.stdout``
    (``stdin=``/``stdout=`` keyword arguments replace them). ``filter_frames`` leaves kiln's own frames out;
    ``num_frames`` keeps that many frames (innermost first). ``ordered=True`` keeps program order with the other
    ordered callbacks. ``token``: a pytree of arrays returned unchanged, the breakpoint running once its value is
    computed (it is then pruned when the returned value is unused).
    """
    if backend not in (None, "cli"):
        raise DebuggerError(f"kiln.debug.breakpoint: unknown debugger backend {backend!r}; kiln has the "
                            "command-line debugger only (backend='cli' or None)")
    if token is not None and ordered:
        raise DebuggerError("kiln.debug.breakpoint: `ordered` and `token` are mutually exclusive arguments")
    unknown = set(kwargs) - {"stdin", "stdout"}
    if unknown:
        raise DebuggerError(f"kiln.debug.breakpoint: unexpected keyword arguments {sorted(unknown)} (the "
                            "command-line debugger takes stdin= and stdout=)")
    infos = inspect.stack()[1:]
    if filter_frames:
        infos = [i for i in infos if not os.path.abspath(i.filename).startswith(_KILN_DIRS)]
    if num_frames is not None:
        infos = infos[:num_frames]
    captured = _Captured(infos)
    del infos

    def stop(*arrays):
        frames = captured.rebuild(list(arrays))
        with _lock:  # callbacks may run on several threads at once
            CliDebugger(frames, **kwargs).run()

    dynamic, captured.dynamic = captured.dynamic, []  # the callback gets them as operands, not through the closure
    if token is None:
        callbacks.debug_callback(stop, *dynamic, ordered=ordered)
        return None
    shapes = tree_util.tree_map(lambda t: abstractify(t), token)

    def stop_then_return(tok, *arrays):
        stop(*arrays)
        return tok
    token, dynamic = lax.stop_gradient((token, dynamic))
    return callbacks.pure_callback(stop_then_return, shapes, token, *dynamic, vmap_method="sequential")
