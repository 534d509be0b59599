"""kiln's runtime exception types and the translation of jaxlib's errors into them."""
from __future__ import annotations


class KilnError(Exception):
    """Base class of every error kiln raises (``kiln.KilnError``). It lives on the lowest floor, the
    runtime, so that runtime errors share it; each subclass also derives from the built-in class a
    program would catch (``TypeError``, ``ValueError``, ...), as JAX raises those."""


class KilnRuntimeError(KilnError, RuntimeError):
    """Base class of every error raised by ``kiln.runtime``."""


class BackendError(KilnRuntimeError, ValueError):
    """A backend name is unknown, or the backend failed to initialise."""


class DeviceError(KilnRuntimeError, ValueError):
    """A device index is out of range, or a buffer is on the wrong device."""


class CompileError(KilnRuntimeError):
    """XLA rejected a module (parse, verification or compilation failure)."""


class DeletedBufferError(KilnRuntimeError, RuntimeError):
    """A buffer was used after it was deleted or donated to a computation."""


class ExecutionError(KilnRuntimeError, RuntimeError):
    """A computation failed while running (other than a bad argument)."""


DELETED_MESSAGE = (
    "Array has been deleted or donated{where}. It was either deleted explicitly or passed as a donated "
    "argument to a computation that reused its memory; create a new array (or do not donate it) "
    "to use the value again."
)


def deleted_error(where: str = "") -> DeletedBufferError:
    """The standard error for using a deleted/donated buffer; ``where`` names the use site."""
    return DeletedBufferError(DELETED_MESSAGE.format(where=f" ({where})" if where else ""))


def jaxlib_message(err: BaseException) -> str:
    """XLA's message without trailing whitespace (jaxlib messages often end in newlines)."""
    return str(err).strip()
