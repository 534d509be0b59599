"""kiln.numpy: NumPy's API with JAX's semantics (immutable arrays, float32 default)."""
import sys as _sys

from kiln.frontend.driver.array import PublicArray as ndarray
from kiln.frontend.numpy import ComplexWarning as ComplexWarning
from kiln.frontend.numpy import __array_api_version__ as __array_api_version__
from kiln.frontend.numpy import __array_namespace_info__ as __array_namespace_info__
from kiln.frontend.numpy import abs as abs
from kiln.frontend.numpy import absolute as absolute
from kiln.frontend.numpy import acos as acos
from kiln.frontend.numpy import acosh as acosh
from kiln.frontend.numpy import add as add
from kiln.frontend.numpy import all as all
from kiln.frontend.numpy import allclose as allclose
from kiln.frontend.numpy import amax as amax
from kiln.frontend.numpy import amin as amin
from kiln.frontend.numpy import angle as angle
from kiln.frontend.numpy import any as any
from kiln.frontend.numpy import append as append
from kiln.frontend.numpy import apply_along_axis as apply_along_axis
from kiln.frontend.numpy import apply_over_axes as apply_over_axes
from kiln.frontend.numpy import arange as arange
from kiln.frontend.numpy import arccos as arccos
from kiln.frontend.numpy import arccosh as arccosh
from kiln.frontend.numpy import arcsin as arcsin
from kiln.frontend.numpy import arcsinh as arcsinh
from kiln.frontend.numpy import arctan as arctan
from kiln.frontend.numpy import arctan2 as arctan2
from kiln.frontend.numpy import arctanh as arctanh
from kiln.frontend.numpy import argmax as argmax
from kiln.frontend.numpy import argmin as argmin
from kiln.frontend.numpy import argpartition as argpartition
from kiln.frontend.numpy import argsort as argsort
from kiln.frontend.numpy import argwhere as argwhere
from kiln.frontend.numpy import around as around
from kiln.frontend.numpy import array as array
from kiln.frontend.numpy import array_equal as array_equal
from kiln.frontend.numpy import array_equiv as array_equiv
from kiln.frontend.numpy import array_repr as array_repr
from kiln.frontend.numpy import array_split as array_split
from kiln.frontend.numpy import array_str as array_str
from kiln.frontend.numpy import asarray as asarray
from kiln.frontend.numpy import asin as asin
from kiln.frontend.numpy import asinh as asinh
from kiln.frontend.numpy import astype as astype
from kiln.frontend.numpy import atan as atan
from kiln.frontend.numpy import atan2 as atan2
from kiln.frontend.numpy import atanh as atanh
from kiln.frontend.numpy import atleast_1d as atleast_1d
from kiln.frontend.numpy import atleast_2d as atleast_2d
from kiln.frontend.numpy import atleast_3d as atleast_3d
from kiln.frontend.numpy import average as average
from kiln.frontend.numpy import bartlett as bartlett
from kiln.frontend.numpy import bfloat16 as bfloat16
from kiln.frontend.numpy import bincount as bincount
from kiln.frontend.numpy import bitwise_and as bitwise_and
from kiln.frontend.numpy import bitwise_count as bitwise_count
from kiln.frontend.numpy import bitwise_invert as bitwise_invert
from kiln.frontend.numpy import bitwise_left_shift as bitwise_left_shift
from kiln.frontend.numpy import bitwise_not as bitwise_not
from kiln.frontend.numpy import bitwise_or as bitwise_or
from kiln.frontend.numpy import bitwise_right_shift as bitwise_right_shift
from kiln.frontend.numpy import bitwise_xor as bitwise_xor
from kiln.frontend.numpy import blackman as blackman
from kiln.frontend.numpy import block as block
from kiln.frontend.numpy import bool as bool
from kiln.frontend.numpy import bool_ as bool_
from kiln.frontend.numpy import broadcast_arrays as broadcast_arrays
from kiln.frontend.numpy import broadcast_shapes as broadcast_shapes
from kiln.frontend.numpy import broadcast_to as broadcast_to
from kiln.frontend.numpy import c_ as c_
from kiln.frontend.numpy import can_cast as can_cast
from kiln.frontend.numpy import cbrt as cbrt
from kiln.frontend.numpy import cdouble as cdouble
from kiln.frontend.numpy import ceil as ceil
from kiln.frontend.numpy import character as character
from kiln.frontend.numpy import choose as choose
from kiln.frontend.numpy import clip as clip
from kiln.frontend.numpy import column_stack as column_stack
from kiln.frontend.numpy import complex64 as complex64
from kiln.frontend.numpy import complex128 as complex128
from kiln.frontend.numpy import complex_ as complex_
from kiln.frontend.numpy import complexfloating as complexfloating
from kiln.frontend.numpy import compress as compress
from kiln.frontend.numpy import concat as concat
from kiln.frontend.numpy import concatenate as concatenate
from kiln.frontend.numpy import conj as conj
from kiln.frontend.numpy import conjugate as conjugate
from kiln.frontend.numpy import convolve as convolve
from kiln.frontend.numpy import copy as copy
from kiln.frontend.numpy import copysign as copysign
from kiln.frontend.numpy import corrcoef as corrcoef
from kiln.frontend.numpy import correlate as correlate
from kiln.frontend.numpy import cos as cos
from kiln.frontend.numpy import cosh as cosh
from kiln.frontend.numpy import count_nonzero as count_nonzero
from kiln.frontend.numpy import cov as cov
from kiln.frontend.numpy import cross as cross
from kiln.frontend.numpy import csingle as csingle
from kiln.frontend.numpy import cumprod as cumprod
from kiln.frontend.numpy import cumsum as cumsum
from kiln.frontend.numpy import cumulative_prod as cumulative_prod
from kiln.frontend.numpy import cumulative_sum as cumulative_sum
from kiln.frontend.numpy import deg2rad as deg2rad
from kiln.frontend.numpy import degrees as degrees
from kiln.frontend.numpy import delete as delete
from kiln.frontend.numpy import diag as diag
from kiln.frontend.numpy import diag_indices as diag_indices
from kiln.frontend.numpy import diag_indices_from as diag_indices_from
from kiln.frontend.numpy import diagflat as diagflat
from kiln.frontend.numpy import diagonal as diagonal
from kiln.frontend.numpy import diff as diff
from kiln.frontend.numpy import digitize as digitize
from kiln.frontend.numpy import divide as divide
from kiln.frontend.numpy import divmod as divmod
from kiln.frontend.numpy import dot as dot
from kiln.frontend.numpy import double as double
from kiln.frontend.numpy import dsplit as dsplit
from kiln.frontend.numpy import dstack as dstack
from kiln.frontend.numpy import dtype as dtype
from kiln.frontend.numpy import e as e
from kiln.frontend.numpy import ediff1d as ediff1d
from kiln.frontend.numpy import einsum as einsum
from kiln.frontend.numpy import einsum_path as einsum_path
from kiln.frontend.numpy import empty as empty
from kiln.frontend.numpy import empty_like as empty_like
from kiln.frontend.numpy import equal as equal
from kiln.frontend.numpy import euler_gamma as euler_gamma
from kiln.frontend.numpy import exp as exp
from kiln.frontend.numpy import exp2 as exp2
from kiln.frontend.numpy import expand_dims as expand_dims
from kiln.frontend.numpy import expm1 as expm1
from kiln.frontend.numpy import extract as extract
from kiln.frontend.numpy import eye as eye
from kiln.frontend.numpy import fabs as fabs
from kiln.frontend.numpy import fill_diagonal as fill_diagonal
from kiln.frontend.numpy import finfo as finfo
from kiln.frontend.numpy import fix as fix
from kiln.frontend.numpy import flatnonzero as flatnonzero
from kiln.frontend.numpy import flexible as flexible
from kiln.frontend.numpy import flip as flip
from kiln.frontend.numpy import fliplr as fliplr
from kiln.frontend.numpy import flipud as flipud
from kiln.frontend.numpy import float4_e2m1fn as float4_e2m1fn
from kiln.frontend.numpy import float6_e2m3fn as float6_e2m3fn
from kiln.frontend.numpy import float6_e3m2fn as float6_e3m2fn
from kiln.frontend.numpy import float8_e3m4 as float8_e3m4
from kiln.frontend.numpy import float8_e4m3 as float8_e4m3
from kiln.frontend.numpy import float8_e4m3b11fnuz as float8_e4m3b11fnuz
from kiln.frontend.numpy import float8_e4m3fn as float8_e4m3fn
from kiln.frontend.numpy import float8_e4m3fnuz as float8_e4m3fnuz
from kiln.frontend.numpy import float8_e5m2 as float8_e5m2
from kiln.frontend.numpy import float8_e5m2fnuz as float8_e5m2fnuz
from kiln.frontend.numpy import float8_e8m0fnu as float8_e8m0fnu
from kiln.frontend.numpy import float16 as float16
from kiln.frontend.numpy import float32 as float32
from kiln.frontend.numpy import float64 as float64
from kiln.frontend.numpy import float_ as float_
from kiln.frontend.numpy import float_power as float_power
from kiln.frontend.numpy import floating as floating
from kiln.frontend.numpy import floor as floor
from kiln.frontend.numpy import floor_divide as floor_divide
from kiln.frontend.numpy import fmax as fmax
from kiln.frontend.numpy import fmin as fmin
from kiln.frontend.numpy import fmod as fmod
from kiln.frontend.numpy import frexp as frexp
from kiln.frontend.numpy import from_dlpack as from_dlpack
from kiln.frontend.numpy import frombuffer as frombuffer
from kiln.frontend.numpy import fromfile as fromfile
from kiln.frontend.numpy import fromfunction as fromfunction
from kiln.frontend.numpy import fromiter as fromiter
from kiln.frontend.numpy import frompyfunc as frompyfunc
from kiln.frontend.numpy import fromstring as fromstring
from kiln.frontend.numpy import full as full
from kiln.frontend.numpy import full_like as full_like
from kiln.frontend.numpy import gcd as gcd
from kiln.frontend.numpy import generic as generic
from kiln.frontend.numpy import geomspace as geomspace
from kiln.frontend.numpy import get_printoptions as get_printoptions
from kiln.frontend.numpy import gradient as gradient
from kiln.frontend.numpy import greater as greater
from kiln.frontend.numpy import greater_equal as greater_equal
from kiln.frontend.numpy import half as half
from kiln.frontend.numpy import hamming as hamming
from kiln.frontend.numpy import hanning as hanning
from kiln.frontend.numpy import heaviside as heaviside
from kiln.frontend.numpy import histogram as histogram
from kiln.frontend.numpy import histogram2d as histogram2d
from kiln.frontend.numpy import histogram_bin_edges as histogram_bin_edges
from kiln.frontend.numpy import histogramdd as histogramdd
from kiln.frontend.numpy import hsplit as hsplit
from kiln.frontend.numpy import hstack as hstack
from kiln.frontend.numpy import hypot as hypot
from kiln.frontend.numpy import i0 as i0
from kiln.frontend.numpy import identity as identity
from kiln.frontend.numpy import iinfo as iinfo
from kiln.frontend.numpy import imag as imag
from kiln.frontend.numpy import index_exp as index_exp
from kiln.frontend.numpy import indices as indices
from kiln.frontend.numpy import inexact as inexact
from kiln.frontend.numpy import inf as inf
from kiln.frontend.numpy import inner as inner
from kiln.frontend.numpy import insert as insert
from kiln.frontend.numpy import int1 as int1
from kiln.frontend.numpy import int2 as int2
from kiln.frontend.numpy import int4 as int4
from kiln.frontend.numpy import int8 as int8
from kiln.frontend.numpy import int16 as int16
from kiln.frontend.numpy import int32 as int32
from kiln.frontend.numpy import int64 as int64
from kiln.frontend.numpy import int_ as int_
from kiln.frontend.numpy import integer as integer
from kiln.frontend.numpy import interp as interp
from kiln.frontend.numpy import intersect1d as intersect1d
from kiln.frontend.numpy import invert as invert
from kiln.frontend.numpy import isclose as isclose
from kiln.frontend.numpy import iscomplex as iscomplex
from kiln.frontend.numpy import iscomplexobj as iscomplexobj
from kiln.frontend.numpy import isdtype as isdtype
from kiln.frontend.numpy import isfinite as isfinite
from kiln.frontend.numpy import isin as isin
from kiln.frontend.numpy import isinf as isinf
from kiln.frontend.numpy import isnan as isnan
from kiln.frontend.numpy import isneginf as isneginf
from kiln.frontend.numpy import isposinf as isposinf
from kiln.frontend.numpy import isreal as isreal
from kiln.frontend.numpy import isrealobj as isrealobj
from kiln.frontend.numpy import isscalar as isscalar
from kiln.frontend.numpy import issubdtype as issubdtype
from kiln.frontend.numpy import iterable as iterable
from kiln.frontend.numpy import ix_ as ix_
from kiln.frontend.numpy import kaiser as kaiser
from kiln.frontend.numpy import kron as kron
from kiln.frontend.numpy import lcm as lcm
from kiln.frontend.numpy import ldexp as ldexp
from kiln.frontend.numpy import left_shift as left_shift
from kiln.frontend.numpy import less as less
from kiln.frontend.numpy import less_equal as less_equal
from kiln.frontend.numpy import lexsort as lexsort
from kiln.frontend.numpy import linspace as linspace
from kiln.frontend.numpy import load as load
from kiln.frontend.numpy import log as log
from kiln.frontend.numpy import log1p as log1p
from kiln.frontend.numpy import log2 as log2
from kiln.frontend.numpy import log10 as log10
from kiln.frontend.numpy import logaddexp as logaddexp
from kiln.frontend.numpy import logaddexp2 as logaddexp2
from kiln.frontend.numpy import logical_and as logical_and
from kiln.frontend.numpy import logical_not as logical_not
from kiln.frontend.numpy import logical_or as logical_or
from kiln.frontend.numpy import logical_xor as logical_xor
from kiln.frontend.numpy import logspace as logspace
from kiln.frontend.numpy import mask_indices as mask_indices
from kiln.frontend.numpy import matmul as matmul
from kiln.frontend.numpy import matrix_transpose as matrix_transpose
from kiln.frontend.numpy import matvec as matvec
from kiln.frontend.numpy import max as max
from kiln.frontend.numpy import maximum as maximum
from kiln.frontend.numpy import mean as mean
from kiln.frontend.numpy import median as median
from kiln.frontend.numpy import meshgrid as meshgrid
from kiln.frontend.numpy import mgrid as mgrid
from kiln.frontend.numpy import min as min
from kiln.frontend.numpy import minimum as minimum
from kiln.frontend.numpy import mod as mod
from kiln.frontend.numpy import modf as modf
from kiln.frontend.numpy import moveaxis as moveaxis
from kiln.frontend.numpy import multiply as multiply
from kiln.frontend.numpy import nan as nan
from kiln.frontend.numpy import nan_to_num as nan_to_num
from kiln.frontend.numpy import nanargmax as nanargmax
from kiln.frontend.numpy import nanargmin as nanargmin
from kiln.frontend.numpy import nancumprod as nancumprod
from kiln.frontend.numpy import nancumsum as nancumsum
from kiln.frontend.numpy import nanmax as nanmax
from kiln.frontend.numpy import nanmean as nanmean
from kiln.frontend.numpy import nanmedian as nanmedian
from kiln.frontend.numpy import nanmin as nanmin
from kiln.frontend.numpy import nanpercentile as nanpercentile
from kiln.frontend.numpy import nanprod as nanprod
from kiln.frontend.numpy import nanquantile as nanquantile
from kiln.frontend.numpy import nanstd as nanstd
from kiln.frontend.numpy import nansum as nansum
from kiln.frontend.numpy import nanvar as nanvar
from kiln.frontend.numpy import ndim as ndim
from kiln.frontend.numpy import negative as negative
from kiln.frontend.numpy import newaxis as newaxis
from kiln.frontend.numpy import nextafter as nextafter
from kiln.frontend.numpy import nonzero as nonzero
from kiln.frontend.numpy import not_equal as not_equal
from kiln.frontend.numpy import number as number
from kiln.frontend.numpy import object_ as object_
from kiln.frontend.numpy import ogrid as ogrid
from kiln.frontend.numpy import ones as ones
from kiln.frontend.numpy import ones_like as ones_like
from kiln.frontend.numpy import outer as outer
from kiln.frontend.numpy import packbits as packbits
from kiln.frontend.numpy import pad as pad
from kiln.frontend.numpy import partition as partition
from kiln.frontend.numpy import percentile as percentile
from kiln.frontend.numpy import permute_dims as permute_dims
from kiln.frontend.numpy import pi as pi
from kiln.frontend.numpy import piecewise as piecewise
from kiln.frontend.numpy import place as place
from kiln.frontend.numpy import poly as poly
from kiln.frontend.numpy import polyadd as polyadd
from kiln.frontend.numpy import polyder as polyder
from kiln.frontend.numpy import polydiv as polydiv
from kiln.frontend.numpy import polyfit as polyfit
from kiln.frontend.numpy import polyint as polyint
from kiln.frontend.numpy import polymul as polymul
from kiln.frontend.numpy import polysub as polysub
from kiln.frontend.numpy import polyval as polyval
from kiln.frontend.numpy import positive as positive
from kiln.frontend.numpy import pow as pow
from kiln.frontend.numpy import power as power
from kiln.frontend.numpy import printoptions as printoptions
from kiln.frontend.numpy import prod as prod
from kiln.frontend.numpy import promote_types as promote_types
from kiln.frontend.numpy import ptp as ptp
from kiln.frontend.numpy import put as put
from kiln.frontend.numpy import put_along_axis as put_along_axis
from kiln.frontend.numpy import quantile as quantile
from kiln.frontend.numpy import r_ as r_
from kiln.frontend.numpy import rad2deg as rad2deg
from kiln.frontend.numpy import radians as radians
from kiln.frontend.numpy import ravel as ravel
from kiln.frontend.numpy import ravel_multi_index as ravel_multi_index
from kiln.frontend.numpy import real as real
from kiln.frontend.numpy import reciprocal as reciprocal
from kiln.frontend.numpy import remainder as remainder
from kiln.frontend.numpy import repeat as repeat
from kiln.frontend.numpy import reshape as reshape
from kiln.frontend.numpy import resize as resize
from kiln.frontend.numpy import result_type as result_type
from kiln.frontend.numpy import right_shift as right_shift
from kiln.frontend.numpy import rint as rint
from kiln.frontend.numpy import roll as roll
from kiln.frontend.numpy import rollaxis as rollaxis
from kiln.frontend.numpy import roots as roots
from kiln.frontend.numpy import rot90 as rot90
from kiln.frontend.numpy import round as round
from kiln.frontend.numpy import row_stack as row_stack
from kiln.frontend.numpy import s_ as s_
from kiln.frontend.numpy import save as save
from kiln.frontend.numpy import savez as savez
from kiln.frontend.numpy import searchsorted as searchsorted
from kiln.frontend.numpy import select as select
from kiln.frontend.numpy import set_printoptions as set_printoptions
from kiln.frontend.numpy import setdiff1d as setdiff1d
from kiln.frontend.numpy import setxor1d as setxor1d
from kiln.frontend.numpy import shape as shape
from kiln.frontend.numpy import sign as sign
from kiln.frontend.numpy import signbit as signbit
from kiln.frontend.numpy import signedinteger as signedinteger
from kiln.frontend.numpy import sin as sin
from kiln.frontend.numpy import sinc as sinc
from kiln.frontend.numpy import single as single
from kiln.frontend.numpy import sinh as sinh
from kiln.frontend.numpy import size as size
from kiln.frontend.numpy import sort as sort
from kiln.frontend.numpy import sort_complex as sort_complex
from kiln.frontend.numpy import spacing as spacing
from kiln.frontend.numpy import split as split
from kiln.frontend.numpy import sqrt as sqrt
from kiln.frontend.numpy import square as square
from kiln.frontend.numpy import squeeze as squeeze
from kiln.frontend.numpy import stack as stack
from kiln.frontend.numpy import std as std
from kiln.frontend.numpy import subtract as subtract
from kiln.frontend.numpy import sum as sum
from kiln.frontend.numpy import swapaxes as swapaxes
from kiln.frontend.numpy import take as take
from kiln.frontend.numpy import take_along_axis as take_along_axis
from kiln.frontend.numpy import tan as tan
from kiln.frontend.numpy import tanh as tanh
from kiln.frontend.numpy import tensordot as tensordot
from kiln.frontend.numpy import tile as tile
from kiln.frontend.numpy import trace as trace
from kiln.frontend.numpy import transpose as transpose
from kiln.frontend.numpy import trapezoid as trapezoid
from kiln.frontend.numpy import tri as tri
from kiln.frontend.numpy import tril as tril
from kiln.frontend.numpy import tril_indices as tril_indices
from kiln.frontend.numpy import tril_indices_from as tril_indices_from
from kiln.frontend.numpy import trim_zeros as trim_zeros
from kiln.frontend.numpy import triu as triu
from kiln.frontend.numpy import triu_indices as triu_indices
from kiln.frontend.numpy import triu_indices_from as triu_indices_from
from kiln.frontend.numpy import true_divide as true_divide
from kiln.frontend.numpy import trunc as trunc
from kiln.frontend.numpy import ufunc as ufunc
from kiln.frontend.numpy import uint as uint
from kiln.frontend.numpy import uint1 as uint1
from kiln.frontend.numpy import uint2 as uint2
from kiln.frontend.numpy import uint4 as uint4
from kiln.frontend.numpy import uint8 as uint8
from kiln.frontend.numpy import uint16 as uint16
from kiln.frontend.numpy import uint32 as uint32
from kiln.frontend.numpy import uint64 as uint64
from kiln.frontend.numpy import union1d as union1d
from kiln.frontend.numpy import unique as unique
from kiln.frontend.numpy import unique_all as unique_all
from kiln.frontend.numpy import unique_counts as unique_counts
from kiln.frontend.numpy import unique_inverse as unique_inverse
from kiln.frontend.numpy import unique_values as unique_values
from kiln.frontend.numpy import unpackbits as unpackbits
from kiln.frontend.numpy import unravel_index as unravel_index
from kiln.frontend.numpy import unsignedinteger as unsignedinteger
from kiln.frontend.numpy import unstack as unstack
from kiln.frontend.numpy import unwrap as unwrap
from kiln.frontend.numpy import vander as vander
from kiln.frontend.numpy import var as var
from kiln.frontend.numpy import vdot as vdot
from kiln.frontend.numpy import vecdot as vecdot
from kiln.frontend.numpy import vecmat as vecmat
from kiln.frontend.numpy import vectorize as vectorize
from kiln.frontend.numpy import vsplit as vsplit
from kiln.frontend.numpy import vstack as vstack
from kiln.frontend.numpy import where as where
from kiln.frontend.numpy import zeros as zeros
from kiln.frontend.numpy import zeros_like as zeros_like
from kiln.frontend.numpy.array_api import register_public_namespace as _register_public_namespace

from . import fft, linalg

_register_public_namespace(_sys.modules[__name__])  # x.__array_namespace__() returns this module

__all__ = [
    "abs", "absolute", "acos", "acosh", "add", "all", "allclose", "amax", "amin", "angle", "any", "append",
    "apply_along_axis", "apply_over_axes", "arange", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
    "arctanh", "argmax", "argmin", "argpartition", "argsort", "argwhere", "around", "array", "array_equal",
    "array_equiv", "array_repr", "array_split", "array_str", "asarray", "asin", "asinh", "astype", "atan", "atan2",
    "atanh", "atleast_1d", "atleast_2d", "atleast_3d", "average", "bartlett", "bfloat16", "bincount", "bitwise_and",
    "bitwise_count", "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "blackman", "block", "bool", "bool_", "broadcast_arrays", "broadcast_shapes", "broadcast_to", "c_",
    "can_cast", "cbrt", "cdouble", "ceil", "character", "choose", "clip", "column_stack", "complex128", "complex64",
    "complex_", "complexfloating", "ComplexWarning", "compress", "concat", "concatenate", "conj", "conjugate",
    "convolve", "copy", "copysign", "corrcoef", "correlate", "cos", "cosh", "count_nonzero", "cov", "cross", "csingle",
    "cumprod", "cumsum", "cumulative_prod", "cumulative_sum", "deg2rad", "degrees", "delete", "diag", "diag_indices",
    "diag_indices_from", "diagflat", "diagonal", "diff", "digitize", "divide", "divmod", "dot", "double", "dsplit",
    "dstack", "dtype", "e", "ediff1d", "einsum", "einsum_path", "empty", "empty_like", "equal", "euler_gamma", "exp",
    "exp2", "expand_dims", "expm1", "extract", "eye", "fabs", "fft", "fill_diagonal", "finfo", "fix", "flatnonzero",
    "flexible", "flip", "fliplr", "flipud", "float16", "float32", "float4_e2m1fn", "float64", "float6_e2m3fn",
    "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float_", "float_power", "floating", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "frexp", "from_dlpack", "frombuffer", "fromfile", "fromfunction", "fromiter", "frompyfunc",
    "fromstring", "full", "full_like", "gcd", "generic", "geomspace", "get_printoptions", "gradient", "greater",
    "greater_equal", "half", "hamming", "hanning", "heaviside", "histogram", "histogram2d", "histogram_bin_edges",
    "histogramdd", "hsplit", "hstack", "hypot", "i0", "identity", "iinfo", "imag", "index_exp", "indices", "inexact",
    "inf", "inner", "insert", "int1", "int16", "int2", "int32", "int4", "int64", "int8", "int_", "integer", "interp",
    "intersect1d", "invert", "isclose", "iscomplex", "iscomplexobj", "isdtype", "isfinite", "isin", "isinf", "isnan",
    "isneginf", "isposinf", "isreal", "isrealobj", "isscalar", "issubdtype", "iterable", "ix_", "kaiser", "kron", "lcm",
    "ldexp", "left_shift", "less", "less_equal", "lexsort", "linalg", "linspace", "load", "log", "log10", "log1p",
    "log2", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "logspace",
    "mask_indices", "matmul", "matrix_transpose", "matvec", "max", "maximum", "mean", "median", "meshgrid", "mgrid",
    "min", "minimum", "mod", "modf", "moveaxis", "multiply", "nan", "nan_to_num", "nanargmax", "nanargmin",
    "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile",
    "nanstd", "nansum", "nanvar", "ndarray", "ndim", "negative", "newaxis", "nextafter", "nonzero", "not_equal",
    "number", "object_", "ogrid", "ones", "ones_like", "outer", "packbits", "pad", "partition", "percentile",
    "permute_dims", "pi", "piecewise", "place", "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint",
    "polymul", "polysub", "polyval", "positive", "pow", "power", "printoptions", "prod", "promote_types", "ptp", "put",
    "put_along_axis", "quantile", "r_", "rad2deg", "radians", "ravel", "ravel_multi_index", "real", "reciprocal",
    "remainder", "repeat", "reshape", "resize", "result_type", "right_shift", "rint", "roll", "rollaxis", "roots",
    "rot90", "round", "row_stack", "s_", "save", "savez", "searchsorted", "select", "set_printoptions", "setdiff1d",
    "setxor1d", "shape", "sign", "signbit", "signedinteger", "sin", "sinc", "single", "sinh", "size", "sort",
    "sort_complex", "spacing", "split", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "swapaxes",
    "take", "take_along_axis", "tan", "tanh", "tensordot", "tile", "trace", "transpose", "trapezoid", "tri", "tril",
    "tril_indices", "tril_indices_from", "trim_zeros", "triu", "triu_indices", "triu_indices_from", "true_divide",
    "trunc", "ufunc", "uint", "uint1", "uint16", "uint2", "uint32", "uint4", "uint64", "uint8", "union1d", "unique",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "unpackbits", "unravel_index", "unsignedinteger",
    "unstack", "unwrap", "vander", "var", "vdot", "vecdot", "vecmat", "vectorize", "vsplit", "vstack", "where", "zeros",
    "zeros_like",
]
