"""kiln.dtypes: dtype helpers (as ``jax.dtypes``)."""
from kiln.frontend.ad.tangents import float0 as float0
from kiln.frontend.core.dtypes import bfloat16 as bfloat16
from kiln.frontend.core.dtypes import canonicalize_dtype as canonicalize_dtype
from kiln.frontend.core.dtypes import extended as extended
from kiln.frontend.core.dtypes import finfo as finfo
from kiln.frontend.core.dtypes import iinfo as iinfo
from kiln.frontend.core.dtypes import issubdtype as issubdtype
from kiln.frontend.core.dtypes import itemsize_bits as itemsize_bits
from kiln.frontend.core.dtypes import prng_key as prng_key
from kiln.frontend.core.dtypes import result_type as result_type
from kiln.frontend.core.dtypes import scalar_type_of as scalar_type_of
from kiln.frontend.core.errors import TypePromotionError as TypePromotionError

__all__ = [
    "TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0", "iinfo", "issubdtype",
    "itemsize_bits", "prng_key", "result_type", "scalar_type_of",
]
