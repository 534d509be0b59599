"""kiln.lax: the primitives as functions, without implicit promotion (as ``jax.lax``)."""
from kiln.frontend.control.api import associative_scan as associative_scan
from kiln.frontend.control.api import cond as cond
from kiln.frontend.control.api import custom_linear_solve as custom_linear_solve
from kiln.frontend.control.api import custom_root as custom_root
from kiln.frontend.control.api import fori_loop as fori_loop
from kiln.frontend.control.api import map as map
from kiln.frontend.control.api import platform_dependent as platform_dependent
from kiln.frontend.control.api import scan as scan
from kiln.frontend.control.api import select_n as select_n
from kiln.frontend.control.api import switch as switch
from kiln.frontend.control.api import while_loop as while_loop
from kiln.frontend.lax import AccuracyMode as AccuracyMode
from kiln.frontend.lax import ConvDimensionNumbers as ConvDimensionNumbers
from kiln.frontend.lax import ConvGeneralDilatedDimensionNumbers as ConvGeneralDilatedDimensionNumbers
from kiln.frontend.lax import DotAlgorithm as DotAlgorithm
from kiln.frontend.lax import DotAlgorithmPreset as DotAlgorithmPreset
from kiln.frontend.lax import DotDimensionNumbers as DotDimensionNumbers
from kiln.frontend.lax import FftType as FftType
from kiln.frontend.lax import GatherDimensionNumbers as GatherDimensionNumbers
from kiln.frontend.lax import GatherScatterMode as GatherScatterMode
from kiln.frontend.lax import Precision as Precision
from kiln.frontend.lax import PrecisionLike as PrecisionLike
from kiln.frontend.lax import RaggedDotDimensionNumbers as RaggedDotDimensionNumbers
from kiln.frontend.lax import RandomAlgorithm as RandomAlgorithm
from kiln.frontend.lax import RoundingMethod as RoundingMethod
from kiln.frontend.lax import ScatterDimensionNumbers as ScatterDimensionNumbers
from kiln.frontend.lax import Tolerance as Tolerance
from kiln.frontend.lax import abs as abs
from kiln.frontend.lax import acos as acos
from kiln.frontend.lax import acosh as acosh
from kiln.frontend.lax import add as add
from kiln.frontend.lax import all_gather as all_gather
from kiln.frontend.lax import all_to_all as all_to_all
from kiln.frontend.lax import approx_max_k as approx_max_k
from kiln.frontend.lax import approx_min_k as approx_min_k
from kiln.frontend.lax import argmax as argmax
from kiln.frontend.lax import argmin as argmin
from kiln.frontend.lax import argsort as argsort
from kiln.frontend.lax import asin as asin
from kiln.frontend.lax import asinh as asinh
from kiln.frontend.lax import atan as atan
from kiln.frontend.lax import atan2 as atan2
from kiln.frontend.lax import atanh as atanh
from kiln.frontend.lax import axis_index as axis_index
from kiln.frontend.lax import axis_size as axis_size
from kiln.frontend.lax import batch_matmul as batch_matmul
from kiln.frontend.lax import bitcast_convert_type as bitcast_convert_type
from kiln.frontend.lax import bitwise_and as bitwise_and
from kiln.frontend.lax import bitwise_not as bitwise_not
from kiln.frontend.lax import bitwise_or as bitwise_or
from kiln.frontend.lax import bitwise_xor as bitwise_xor
from kiln.frontend.lax import broadcast as broadcast
from kiln.frontend.lax import broadcast_in_dim as broadcast_in_dim
from kiln.frontend.lax import broadcast_like as broadcast_like
from kiln.frontend.lax import broadcast_shapes as broadcast_shapes
from kiln.frontend.lax import broadcast_to_rank as broadcast_to_rank
from kiln.frontend.lax import broadcasted_iota as broadcasted_iota
from kiln.frontend.lax import cbrt as cbrt
from kiln.frontend.lax import ceil as ceil
from kiln.frontend.lax import clamp as clamp
from kiln.frontend.lax import clz as clz
from kiln.frontend.lax import collapse as collapse
from kiln.frontend.lax import complex as complex
from kiln.frontend.lax import composite as composite
from kiln.frontend.lax import concatenate as concatenate
from kiln.frontend.lax import conj as conj
from kiln.frontend.lax import conv as conv
from kiln.frontend.lax import conv_dimension_numbers as conv_dimension_numbers
from kiln.frontend.lax import conv_general_dilated as conv_general_dilated
from kiln.frontend.lax import conv_general_dilated_local as conv_general_dilated_local
from kiln.frontend.lax import conv_general_dilated_patches as conv_general_dilated_patches
from kiln.frontend.lax import conv_general_permutations as conv_general_permutations
from kiln.frontend.lax import conv_general_shape_tuple as conv_general_shape_tuple
from kiln.frontend.lax import conv_shape_tuple as conv_shape_tuple
from kiln.frontend.lax import conv_transpose as conv_transpose
from kiln.frontend.lax import conv_transpose_shape_tuple as conv_transpose_shape_tuple
from kiln.frontend.lax import conv_with_general_padding as conv_with_general_padding
from kiln.frontend.lax import convert_element_type as convert_element_type
from kiln.frontend.lax import cos as cos
from kiln.frontend.lax import cosh as cosh
from kiln.frontend.lax import cumlogsumexp as cumlogsumexp
from kiln.frontend.lax import cummax as cummax
from kiln.frontend.lax import cummin as cummin
from kiln.frontend.lax import cumprod as cumprod
from kiln.frontend.lax import cumsum as cumsum
from kiln.frontend.lax import digamma as digamma
from kiln.frontend.lax import div as div
from kiln.frontend.lax import dot as dot
from kiln.frontend.lax import dot_general as dot_general
from kiln.frontend.lax import dtype as dtype
from kiln.frontend.lax import dynamic_index_in_dim as dynamic_index_in_dim
from kiln.frontend.lax import dynamic_slice as dynamic_slice
from kiln.frontend.lax import dynamic_slice_in_dim as dynamic_slice_in_dim
from kiln.frontend.lax import dynamic_update_index_in_dim as dynamic_update_index_in_dim
from kiln.frontend.lax import dynamic_update_slice as dynamic_update_slice
from kiln.frontend.lax import dynamic_update_slice_in_dim as dynamic_update_slice_in_dim
from kiln.frontend.lax import empty as empty
from kiln.frontend.lax import eq as eq
from kiln.frontend.lax import erf as erf
from kiln.frontend.lax import erf_inv as erf_inv
from kiln.frontend.lax import erfc as erfc
from kiln.frontend.lax import exp as exp
from kiln.frontend.lax import exp2 as exp2
from kiln.frontend.lax import expand_dims as expand_dims
from kiln.frontend.lax import expm1 as expm1
from kiln.frontend.lax import fft as fft
from kiln.frontend.lax import floor as floor
from kiln.frontend.lax import full as full
from kiln.frontend.lax import full_like as full_like
from kiln.frontend.lax import gather as gather
from kiln.frontend.lax import ge as ge
from kiln.frontend.lax import gt as gt
from kiln.frontend.lax import imag as imag
from kiln.frontend.lax import index_in_dim as index_in_dim
from kiln.frontend.lax import index_take as index_take
from kiln.frontend.lax import integer_pow as integer_pow
from kiln.frontend.lax import iota as iota
from kiln.frontend.lax import is_finite as is_finite
from kiln.frontend.lax import le as le
from kiln.frontend.lax import lgamma as lgamma
from kiln.frontend.lax import literal as literal
from kiln.frontend.lax import log as log
from kiln.frontend.lax import log1p as log1p
from kiln.frontend.lax import logistic as logistic
from kiln.frontend.lax import lt as lt
from kiln.frontend.lax import max as max
from kiln.frontend.lax import min as min
from kiln.frontend.lax import mul as mul
from kiln.frontend.lax import mulhi as mulhi
from kiln.frontend.lax import ne as ne
from kiln.frontend.lax import neg as neg
from kiln.frontend.lax import nextafter as nextafter
from kiln.frontend.lax import optimization_barrier as optimization_barrier
from kiln.frontend.lax import pad as pad
from kiln.frontend.lax import padtype_to_pads as padtype_to_pads
from kiln.frontend.lax import pbroadcast as pbroadcast
from kiln.frontend.lax import pcast as pcast
from kiln.frontend.lax import pmax as pmax
from kiln.frontend.lax import pmean as pmean
from kiln.frontend.lax import pmin as pmin
from kiln.frontend.lax import population_count as population_count
from kiln.frontend.lax import pow as pow
from kiln.frontend.lax import ppermute as ppermute
from kiln.frontend.lax import pshuffle as pshuffle
from kiln.frontend.lax import psum as psum
from kiln.frontend.lax import psum_scatter as psum_scatter
from kiln.frontend.lax import pswapaxes as pswapaxes
from kiln.frontend.lax import ragged_all_to_all as ragged_all_to_all
from kiln.frontend.lax import ragged_dot as ragged_dot
from kiln.frontend.lax import ragged_dot_general as ragged_dot_general
from kiln.frontend.lax import real as real
from kiln.frontend.lax import reciprocal as reciprocal
from kiln.frontend.lax import reduce as reduce
from kiln.frontend.lax import reduce_and as reduce_and
from kiln.frontend.lax import reduce_max as reduce_max
from kiln.frontend.lax import reduce_min as reduce_min
from kiln.frontend.lax import reduce_or as reduce_or
from kiln.frontend.lax import reduce_precision as reduce_precision
from kiln.frontend.lax import reduce_prod as reduce_prod
from kiln.frontend.lax import reduce_sum as reduce_sum
from kiln.frontend.lax import reduce_window as reduce_window
from kiln.frontend.lax import reduce_window_max as reduce_window_max
from kiln.frontend.lax import reduce_window_min as reduce_window_min
from kiln.frontend.lax import reduce_window_shape_tuple as reduce_window_shape_tuple
from kiln.frontend.lax import reduce_window_sum as reduce_window_sum
from kiln.frontend.lax import reduce_xor as reduce_xor
from kiln.frontend.lax import rem as rem
from kiln.frontend.lax import reshape as reshape
from kiln.frontend.lax import rev as rev
from kiln.frontend.lax import rng_bit_generator as rng_bit_generator
from kiln.frontend.lax import round as round
from kiln.frontend.lax import rsqrt as rsqrt
from kiln.frontend.lax import scaled_dot as scaled_dot
from kiln.frontend.lax import scatter as scatter
from kiln.frontend.lax import scatter_add as scatter_add
from kiln.frontend.lax import scatter_apply as scatter_apply
from kiln.frontend.lax import scatter_max as scatter_max
from kiln.frontend.lax import scatter_min as scatter_min
from kiln.frontend.lax import scatter_mul as scatter_mul
from kiln.frontend.lax import scatter_sub as scatter_sub
from kiln.frontend.lax import select as select
from kiln.frontend.lax import shape_as_value as shape_as_value
from kiln.frontend.lax import shift_left as shift_left
from kiln.frontend.lax import shift_right_arithmetic as shift_right_arithmetic
from kiln.frontend.lax import shift_right_logical as shift_right_logical
from kiln.frontend.lax import sign as sign
from kiln.frontend.lax import sin as sin
from kiln.frontend.lax import sinh as sinh
from kiln.frontend.lax import slice as slice
from kiln.frontend.lax import slice_in_dim as slice_in_dim
from kiln.frontend.lax import sort as sort
from kiln.frontend.lax import sort_key_val as sort_key_val
from kiln.frontend.lax import split as split
from kiln.frontend.lax import sqrt as sqrt
from kiln.frontend.lax import square as square
from kiln.frontend.lax import squeeze as squeeze
from kiln.frontend.lax import stack as stack
from kiln.frontend.lax import stage as stage
from kiln.frontend.lax import stop_gradient as stop_gradient
from kiln.frontend.lax import sub as sub
from kiln.frontend.lax import tan as tan
from kiln.frontend.lax import tanh as tanh
from kiln.frontend.lax import tile as tile
from kiln.frontend.lax import top_k as top_k
from kiln.frontend.lax import transpose as transpose
from kiln.frontend.lax import unstack as unstack
from kiln.frontend.lax import with_sharding_constraint as with_sharding_constraint
from kiln.frontend.lax.primitive_names import abs_p as abs_p
from kiln.frontend.lax.primitive_names import acos_p as acos_p
from kiln.frontend.lax.primitive_names import acosh_p as acosh_p
from kiln.frontend.lax.primitive_names import add_p as add_p
from kiln.frontend.lax.primitive_names import and_p as and_p
from kiln.frontend.lax.primitive_names import asin_p as asin_p
from kiln.frontend.lax.primitive_names import asinh_p as asinh_p
from kiln.frontend.lax.primitive_names import atan2_p as atan2_p
from kiln.frontend.lax.primitive_names import atan_p as atan_p
from kiln.frontend.lax.primitive_names import atanh_p as atanh_p
from kiln.frontend.lax.primitive_names import cbrt_p as cbrt_p
from kiln.frontend.lax.primitive_names import ceil_p as ceil_p
from kiln.frontend.lax.primitive_names import clz_p as clz_p
from kiln.frontend.lax.primitive_names import convert_element_type_p as convert_element_type_p
from kiln.frontend.lax.primitive_names import cos_p as cos_p
from kiln.frontend.lax.primitive_names import cosh_p as cosh_p
from kiln.frontend.lax.primitive_names import digamma_p as digamma_p
from kiln.frontend.lax.primitive_names import div_p as div_p
from kiln.frontend.lax.primitive_names import eq_p as eq_p
from kiln.frontend.lax.primitive_names import erf_inv_p as erf_inv_p
from kiln.frontend.lax.primitive_names import erf_p as erf_p
from kiln.frontend.lax.primitive_names import erfc_p as erfc_p
from kiln.frontend.lax.primitive_names import exp_p as exp_p
from kiln.frontend.lax.primitive_names import expm1_p as expm1_p
from kiln.frontend.lax.primitive_names import floor_p as floor_p
from kiln.frontend.lax.primitive_names import ge_p as ge_p
from kiln.frontend.lax.primitive_names import gt_p as gt_p
from kiln.frontend.lax.primitive_names import is_finite_p as is_finite_p
from kiln.frontend.lax.primitive_names import le_p as le_p
from kiln.frontend.lax.primitive_names import lgamma_p as lgamma_p
from kiln.frontend.lax.primitive_names import log1p_p as log1p_p
from kiln.frontend.lax.primitive_names import log_p as log_p
from kiln.frontend.lax.primitive_names import logistic_p as logistic_p
from kiln.frontend.lax.primitive_names import lt_p as lt_p
from kiln.frontend.lax.primitive_names import max_p as max_p
from kiln.frontend.lax.primitive_names import min_p as min_p
from kiln.frontend.lax.primitive_names import mul_p as mul_p
from kiln.frontend.lax.primitive_names import ne_p as ne_p
from kiln.frontend.lax.primitive_names import neg_p as neg_p
from kiln.frontend.lax.primitive_names import nextafter_p as nextafter_p
from kiln.frontend.lax.primitive_names import not_p as not_p
from kiln.frontend.lax.primitive_names import or_p as or_p
from kiln.frontend.lax.primitive_names import population_count_p as population_count_p
from kiln.frontend.lax.primitive_names import pow_p as pow_p
from kiln.frontend.lax.primitive_names import rem_p as rem_p
from kiln.frontend.lax.primitive_names import round_p as round_p
from kiln.frontend.lax.primitive_names import rsqrt_p as rsqrt_p
from kiln.frontend.lax.primitive_names import shift_left_p as shift_left_p
from kiln.frontend.lax.primitive_names import shift_right_arithmetic_p as shift_right_arithmetic_p
from kiln.frontend.lax.primitive_names import shift_right_logical_p as shift_right_logical_p
from kiln.frontend.lax.primitive_names import sign_p as sign_p
from kiln.frontend.lax.primitive_names import sin_p as sin_p
from kiln.frontend.lax.primitive_names import sinh_p as sinh_p
from kiln.frontend.lax.primitive_names import sqrt_p as sqrt_p
from kiln.frontend.lax.primitive_names import square_p as square_p
from kiln.frontend.lax.primitive_names import stop_gradient_p as stop_gradient_p
from kiln.frontend.lax.primitive_names import sub_p as sub_p
from kiln.frontend.lax.primitive_names import tan_p as tan_p
from kiln.frontend.lax.primitive_names import tanh_p as tanh_p
from kiln.frontend.lax.primitive_names import xor_p as xor_p
from kiln.frontend.lax.sorting import clamp_p as clamp_p
from kiln.frontend.lax.windowed import cumlogsumexp_p as cumlogsumexp_p
from kiln.frontend.lax.windowed import cummax_p as cummax_p
from kiln.frontend.lax.windowed import cummin_p as cummin_p
from kiln.frontend.lax.windowed import cumprod_p as cumprod_p
from kiln.frontend.lax.windowed import cumsum_p as cumsum_p
from kiln.frontend.special_functions import bessel_i0e as bessel_i0e
from kiln.frontend.special_functions import bessel_i1e as bessel_i1e
from kiln.frontend.special_functions import betainc as betainc
from kiln.frontend.special_functions import igamma as igamma
from kiln.frontend.special_functions import igamma_grad_a as igamma_grad_a
from kiln.frontend.special_functions import igammac as igammac
from kiln.frontend.special_functions import polygamma as polygamma
from kiln.frontend.special_functions import random_gamma_grad as random_gamma_grad
from kiln.frontend.special_functions import zeta as zeta
from kiln.lax import linalg

__all__ = [
    "abs", "AccuracyMode", "acos", "acosh", "add", "all_gather", "all_to_all", "approx_max_k", "approx_min_k", "argmax",
    "argmin", "argsort", "asin", "asinh", "associative_scan", "atan", "atan2", "atanh", "axis_index", "axis_size",
    "batch_matmul", "bessel_i0e", "bessel_i1e", "betainc", "bitcast_convert_type", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "broadcast", "broadcast_in_dim", "broadcast_like", "broadcast_shapes",
    "broadcast_to_rank", "broadcasted_iota", "cbrt", "ceil", "clamp", "clz", "collapse", "complex", "composite",
    "concatenate", "cond", "conj", "conv", "conv_dimension_numbers", "conv_general_dilated",
    "conv_general_dilated_local", "conv_general_dilated_patches", "conv_general_permutations",
    "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose", "conv_transpose_shape_tuple",
    "conv_with_general_padding", "ConvDimensionNumbers", "convert_element_type", "ConvGeneralDilatedDimensionNumbers",
    "cos", "cosh", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "custom_linear_solve", "custom_root",
    "digamma", "div", "dot", "dot_general", "DotAlgorithm", "DotAlgorithmPreset", "DotDimensionNumbers", "dtype",
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "empty", "eq", "erf", "erf_inv", "erfc", "exp", "exp2",
    "expand_dims", "expm1", "fft", "FftType", "floor", "fori_loop", "full", "full_like", "gather",
    "GatherDimensionNumbers", "GatherScatterMode", "ge", "gt", "igamma", "igamma_grad_a", "igammac", "imag",
    "index_in_dim", "index_take", "integer_pow", "iota", "is_finite", "le", "lgamma", "linalg", "literal", "log",
    "log1p", "logistic", "lt", "map", "max", "min", "mul", "mulhi", "ne", "neg", "nextafter", "optimization_barrier",
    "pad", "padtype_to_pads", "platform_dependent", "pbroadcast", "pcast", "pmax", "pmean", "pmin", "ppermute",
    "pshuffle", "polygamma", "population_count", "pow", "Precision", "PrecisionLike", "psum", "psum_scatter",
    "pswapaxes", "ragged_all_to_all", "ragged_dot", "ragged_dot_general", "RaggedDotDimensionNumbers",
    "random_gamma_grad",
    "RandomAlgorithm", "real", "reciprocal", "reduce", "reduce_and", "reduce_max", "reduce_min", "reduce_or",
    "reduce_precision", "reduce_prod", "reduce_sum", "reduce_window", "reduce_window_max", "reduce_window_min",
    "reduce_window_shape_tuple", "reduce_window_sum", "reduce_xor", "rem", "reshape", "rev", "rng_bit_generator",
    "round", "RoundingMethod", "rsqrt", "scaled_dot", "scan", "scatter", "scatter_add", "scatter_apply", "scatter_max",
    "scatter_min", "scatter_mul", "scatter_sub", "ScatterDimensionNumbers", "select", "select_n", "shape_as_value",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh", "slice", "slice_in_dim",
    "sort", "sort_key_val", "split", "sqrt", "square", "squeeze", "stack", "stage", "stop_gradient", "sub", "switch",
    "tan", "tanh", "tile", "Tolerance", "top_k", "transpose", "unstack", "while_loop", "with_sharding_constraint",
    "zeta",
]
# JAX's names of the elementwise primitive objects (for interpreters of make_jaxpr's IR)
__all__ += ["abs_p", "acos_p", "acosh_p", "add_p", "and_p", "asin_p", "asinh_p", "atan2_p", "atan_p", "atanh_p",
    "cbrt_p", "ceil_p", "clz_p", "convert_element_type_p", "cos_p", "cosh_p", "digamma_p", "div_p",
    "eq_p", "erf_inv_p", "erf_p", "erfc_p", "exp_p", "expm1_p", "floor_p", "ge_p", "gt_p", "is_finite_p",
    "le_p", "lgamma_p", "log1p_p", "log_p", "logistic_p", "lt_p", "max_p", "min_p", "mul_p", "ne_p",
    "neg_p", "nextafter_p", "not_p", "or_p", "population_count_p", "pow_p", "rem_p", "round_p", "rsqrt_p",
    "shift_left_p", "shift_right_arithmetic_p", "shift_right_logical_p", "sign_p", "sin_p", "sinh_p",
    "sqrt_p", "square_p", "stop_gradient_p", "sub_p", "tan_p", "tanh_p", "xor_p"]
# The cumulative reductions' primitives (jax.lax.cumsum_p, ...)
__all__ += ["cumlogsumexp_p", "cummax_p", "cummin_p", "cumprod_p", "cumsum_p"]
# clamp's primitive (jax.lax.clamp_p)
__all__ += ["clamp_p"]
