"""kiln.numpy's implementation: NumPy's API over kiln primitives, with JAX's semantics."""
import sys as _sys  # noqa: E402

from ..core.array_methods import install_array_methods as _install  # noqa: E402
from .array_api import __array_api_version__, __array_namespace_info__, array_namespace  # noqa: F401
from .bits import *  # noqa: F401,F403
from .bits import _byteswap, _view_as  # noqa: F401  (x.byteswap, x.view)
from .control import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .dtype_api import *  # noqa: F401,F403  (scalar types knp.float32..., finfo, result_type, ...)
from .einsum import *  # noqa: F401,F403
from .functional import *  # noqa: F401,F403
from .histograms import *  # noqa: F401,F403
from .index_funcs import *  # noqa: F401,F403
from .index_tricks import *  # noqa: F401,F403
from .indexing import _IndexUpdateHelper  # noqa: E402
from .indexing import getitem as _getitem  # noqa: F401
from .misc import *  # noqa: F401,F403
from .npyio import *  # noqa: F401,F403
from .numerical import *  # noqa: F401,F403
from .polynomial import *  # noqa: F401,F403
from .products import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .setops import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .shape import iter_rows as _iter_rows  # noqa: E402
from .sorting import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .ufuncs import *  # noqa: F401,F403
from .ufuncs import (  # noqa: F401
    abs,
    absolute,
    add,
    around,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    clip,
    conj,
    conjugate,
    cos,
    divide,
    divmod,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    fmod,
    greater,
    greater_equal,
    imag,
    invert,
    isfinite,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    positive,
    power,
    real,
    remainder,
    right_shift,
    round,
    sign,
    sin,
    sqrt,
    subtract,
    tan,
    tanh,
    true_divide,
    where,
)
from .window import *  # noqa: F401,F403

# Arrays' and tracers' operators forward to this namespace; iter() of a concrete array runs by chunks of rows.
_install(_sys.modules[__name__], _IndexUpdateHelper, _iter_rows)

from ..lax.windowed import register_monoids as _register_monoids  # noqa: E402

# reduce_window(x, 0, knp.add, ...) reduces with the add primitive, as with lax.add
_register_monoids({add: "add", multiply: "mul", maximum: "max", minimum: "min", logical_and: "and",
                   logical_or: "or", bitwise_and: "and", bitwise_or: "or"})
