"""JAX's names of kiln's elementwise primitive objects (``jax.lax.exp_p``, ...), for interpreters of the IR
``kiln.make_jaxpr`` returns: ``eqn.primitive is kiln.lax.exp_p``, ``kiln.lax.exp_p.bind(x)``."""
from . import elementwise as _ew
from . import special as _sp

neg_p = _ew.unary_prims["neg"]
sign_p = _ew.unary_prims["sign"]
abs_p = _ew.unary_prims["abs"]
square_p = _ew.unary_prims["square"]
exp_p = _ew.unary_prims["exp"]
log_p = _ew.unary_prims["log"]
log1p_p = _ew.unary_prims["log1p"]
expm1_p = _ew.unary_prims["expm1"]
sin_p = _ew.unary_prims["sin"]
cos_p = _ew.unary_prims["cos"]
tan_p = _ew.unary_prims["tan"]
tanh_p = _ew.unary_prims["tanh"]
logistic_p = _ew.unary_prims["logistic"]
sqrt_p = _ew.unary_prims["sqrt"]
rsqrt_p = _ew.unary_prims["rsqrt"]
cbrt_p = _ew.unary_prims["cbrt"]
floor_p = _ew.unary_prims["floor"]
ceil_p = _ew.unary_prims["ceil"]
not_p = _ew.unary_prims["not"]
is_finite_p = _ew.unary_prims["is_finite"]
add_p = _ew.binary_prims["add"]
sub_p = _ew.binary_prims["sub"]
mul_p = _ew.binary_prims["mul"]
div_p = _ew.binary_prims["div"]
rem_p = _ew.binary_prims["rem"]
pow_p = _ew.binary_prims["pow"]
max_p = _ew.binary_prims["max"]
min_p = _ew.binary_prims["min"]
and_p = _ew.binary_prims["and"]
or_p = _ew.binary_prims["or"]
xor_p = _ew.binary_prims["xor"]
shift_left_p = _ew.binary_prims["shift_left"]
shift_right_arithmetic_p = _ew.binary_prims["shift_right_arithmetic"]
shift_right_logical_p = _ew.binary_prims["shift_right_logical"]
atan2_p = _ew.binary_prims["atan2"]
eq_p = _ew.binary_prims["eq"]
ne_p = _ew.binary_prims["ne"]
lt_p = _ew.binary_prims["lt"]
le_p = _ew.binary_prims["le"]
gt_p = _ew.binary_prims["gt"]
ge_p = _ew.binary_prims["ge"]
round_p = _ew.round_p
convert_element_type_p = _ew.convert_p
stop_gradient_p = _ew.stop_gradient_p
asin_p = _sp.special_unary_prims["asin"]
acos_p = _sp.special_unary_prims["acos"]
atan_p = _sp.special_unary_prims["atan"]
sinh_p = _sp.special_unary_prims["sinh"]
cosh_p = _sp.special_unary_prims["cosh"]
asinh_p = _sp.special_unary_prims["asinh"]
acosh_p = _sp.special_unary_prims["acosh"]
atanh_p = _sp.special_unary_prims["atanh"]
erf_p = _sp.special_unary_prims["erf"]
erfc_p = _sp.special_unary_prims["erfc"]
erf_inv_p = _sp.special_unary_prims["erf_inv"]
lgamma_p = _sp.special_unary_prims["lgamma"]
digamma_p = _sp.special_unary_prims["digamma"]
population_count_p = _sp.special_unary_prims["population_count"]
clz_p = _sp.special_unary_prims["clz"]
nextafter_p = _sp.nextafter_p

__all__ = ["abs_p", "acos_p", "acosh_p", "add_p", "and_p", "asin_p", "asinh_p", "atan2_p", "atan_p", "atanh_p",
           "cbrt_p", "ceil_p", "clz_p", "convert_element_type_p", "cos_p", "cosh_p", "digamma_p", "div_p", "eq_p",
           "erf_inv_p", "erf_p", "erfc_p", "exp_p", "expm1_p", "floor_p", "ge_p", "gt_p", "is_finite_p", "le_p",
           "lgamma_p", "log1p_p", "log_p", "logistic_p", "lt_p", "max_p", "min_p", "mul_p", "ne_p", "neg_p",
           "nextafter_p", "not_p", "or_p", "population_count_p", "pow_p", "rem_p", "round_p", "rsqrt_p",
           "shift_left_p", "shift_right_arithmetic_p", "shift_right_logical_p", "sign_p", "sin_p", "sinh_p",
           "sqrt_p", "square_p", "stop_gradient_p", "sub_p", "tan_p", "tanh_p", "xor_p"]
