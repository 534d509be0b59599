// Test kernels for kiln.ffi (tests/ffi/): typed XLA FFI handlers written for these tests (rms_norm after JAX's
// FFI tutorial), compiled once per test session by conftest.py with
// g++ -std=c++17 -shared -fPIC -I kiln.ffi.include_dir().
#include <cmath>
#include <cstdint>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// rms_norm (JAX's FFI tutorial kernel): y = x / sqrt(mean(x**2 over the last axis) + eps), row by row.
static ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  auto dims = x.dimensions();
  if (dims.size() == 0) return ffi::Error::InvalidArgument("rms_norm: the input must be an array");
  if (y->element_count() != x.element_count() || y->dimensions().size() != dims.size())
    return ffi::Error::InvalidArgument("rms_norm: the result must have the shape of the input");
  const int64_t row = dims.back();
  const int64_t total = x.element_count();
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (int64_t start = 0; row > 0 && start < total; start += row) {
    float sum = 0.0f;
    for (int64_t i = 0; i < row; ++i) sum += in[start + i] * in[start + i];
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(row) + eps);
    for (int64_t i = 0; i < row; ++i) out[start + i] = in[start + i] * scale;
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// attrs: one attribute of each kind kiln passes. y = sign * x * scale + offset + weight(i32) + len(mode)
// + sum(table), with sign = -1 when negate; count = the number of elements of x (an i64 scalar: a result of
// another rank fails in XLA's decoding of the call).
static ffi::Error AttrsImpl(int64_t offset, float scale, bool negate, std::string_view mode, int32_t weight,
                            ffi::Span<const int64_t> table, ffi::Buffer<ffi::F32> x,
                            ffi::ResultBuffer<ffi::F32> y, ffi::Result<ffi::BufferR0<ffi::S64>> count) {
  int64_t table_sum = 0;
  for (int64_t v : table) table_sum += v;
  const float add = static_cast<float>(offset + weight + static_cast<int64_t>(mode.size()) + table_sum);
  const float sign = negate ? -1.0f : 1.0f;
  const int64_t n = x.element_count();
  for (int64_t i = 0; i < n; ++i) y->typed_data()[i] = sign * x.typed_data()[i] * scale + add;
  count->typed_data()[0] = n;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Attrs, AttrsImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("offset")
                                  .Attr<float>("scale")
                                  .Attr<bool>("negate")
                                  .Attr<std::string_view>("mode")
                                  .Attr<int32_t>("weight")
                                  .Attr<ffi::Span<const int64_t>>("table")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::BufferR0<ffi::S64>>());

// counter: a side effect (adds the element count of x to a global, read with kiln_test_counter()); y = x + 1.
static int64_t g_counter = 0;

static ffi::Error CounterImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  const int64_t n = x.element_count();
  g_counter += n;
  for (int64_t i = 0; i < n; ++i) y->typed_data()[i] = x.typed_data()[i] + 1.0f;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Counter, CounterImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

extern "C" int64_t kiln_test_counter() { return g_counter; }

// fails: always returns an error (the message must reach the user).
static ffi::Error FailsImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  return ffi::Error::InvalidArgument("the fails kernel always fails");
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Fails, FailsImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// add: z = x + y, y repeated along the leading axes of x when it has fewer elements (so an unbatched y works
// with every vmap_method: shape (3,), (1, 3) or (B, 3) against x of shape (B, 3)).
static ffi::Error AddImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y, ffi::ResultBuffer<ffi::F32> z) {
  const int64_t n = x.element_count(), m = y.element_count();
  if (m == 0 || n % m != 0 || z->element_count() != n)
    return ffi::Error::InvalidArgument("add: y must tile x, and z have the size of x");
  for (int64_t i = 0; i < n; ++i) z->typed_data()[i] = x.typed_data()[i] + y.typed_data()[i % m];
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Add, AddImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());
