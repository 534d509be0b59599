"""Emission rule for ``conv_general_dilated`` (``stablehlo.convolution``)."""
from __future__ import annotations

from jaxlib.mlir.dialects import stablehlo as hlo

from ..hlo import V, i64_array, i64_attr, i64_pairs, imag, op, out_type, precision_config, real, real_dtype, wrap_inputs
from ..registry import register
from ..types import ranked_type


def _convolution(p, lhs, rhs, result_type):
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    dn = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=list(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0], kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=list(rhs_spec[2:]),
        output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
        output_spatial_dimensions=list(out_spec[2:]))
    return op("stablehlo.convolution", [lhs, rhs], result_type,
              window_strides=i64_array(p["window_strides"]), padding=i64_pairs(p["padding"]),
              lhs_dilation=i64_array(p["lhs_dilation"]), rhs_dilation=i64_array(p["rhs_dilation"]),
              dimension_numbers=dn, feature_group_count=i64_attr(p["feature_group_count"]),
              batch_group_count=i64_attr(p["batch_group_count"]),
              precision_config=precision_config(p["precision"] or "DEFAULT"))  # as JAX, DEFAULTs for None


@register("conv_general_dilated")
def _conv(ctx, eqn, lhs, rhs):
    out = eqn.outputs[0].aval
    if out.dtype.kind != "c" or getattr(ctx, "platform", None) == "tpu":
        return _convolution(eqn.params, lhs, rhs, out_type(eqn))
    # A complex convolution is three real ones (Gauss's trick), as JAX lowers it on CPU and GPU (XLA's GPU
    # backend has no complex convolution; its CPU one is a slow loop), in JAX's order of operations.
    x, y = wrap_inputs(eqn, [lhs, rhs])
    rdt = real_dtype(out.dtype)

    def conv(a: V, b: V) -> V:
        return V(_convolution(eqn.params, a.v, b.v, ranked_type(out.shape, rdt)), out.shape, rdt)

    x_re, x_im, y_re, y_im = real(x), imag(x), real(y), imag(y)
    k1 = conv(x_re + x_im, y_re)
    k2 = conv(x_re, y_im - y_re)
    k3 = conv(x_im, y_re + y_im)
    return op("stablehlo.complex", [(k1 - k3).v, (k1 + k2).v], out_type(eqn))
