"""Emission rule for ``conv_general_dilated`` (``stablehlo.convolution``)."""
from __future__ import annotations

from jaxlib.mlir.dialects import stablehlo as hlo

from ..hlo import i64_array, i64_attr, i64_pairs, op, out_type
from ..registry import register


@register("conv_general_dilated")
def _conv(ctx, eqn, lhs, rhs):
    p = eqn.params
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    dn = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=list(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0], kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=list(rhs_spec[2:]),
        output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
        output_spatial_dimensions=list(out_spec[2:]))
    return op("stablehlo.convolution", [lhs, rhs], out_type(eqn),
              window_strides=i64_array(p["window_strides"]), padding=i64_pairs(p["padding"]),
              lhs_dilation=i64_array(p["lhs_dilation"]), rhs_dilation=i64_array(p["rhs_dilation"]),
              dimension_numbers=dn, feature_group_count=i64_attr(p["feature_group_count"]),
              batch_group_count=i64_attr(p["batch_group_count"]))
