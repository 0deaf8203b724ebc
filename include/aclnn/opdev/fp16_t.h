/*
 * mlaops drop-in for CANN's aclnn/opdev/fp16_t.h: op::fp16_t, an IEEE binary16 value type for
 * host buffers (2 bytes, standard layout, trivially copyable; the bits are the member `val`).
 * C++ only. See docs/sdk-headers.md.
 *
 *  * Construction from float, double and any integer type rounds to nearest, ties to even
 *    (mlaops/numeric.h: float_to_fp16, double_to_fp16; an integer is rounded once, directly);
 *    overflow gives +-inf, NaN stays NaN. fp16_t::from_bits() takes the raw bits.
 *  * operator float() is implicit (exact); double is explicit (exact).
 *  * fp16_t op fp16_t (+ - * /) is computed in float and rounded back to fp16_t (which is the
 *    correctly rounded fp16 result). Mixed with a built-in type the rules of C++23's
 *    std::float16_t apply: fp16_t op integer converts the integer to fp16_t first and gives
 *    fp16_t; fp16_t op float / double converts the fp16_t and gives float / double. Compound
 *    assignment rounds the result back to fp16_t. Comparisons follow the same conversions
 *    (so -0 == +0 and NaN compares unequal to everything).
 */
#ifndef MLAOPS_ACLNN_OPDEV_FP16_T_H_
#define MLAOPS_ACLNN_OPDEV_FP16_T_H_

#include "aclnn/opdev/half16.h"

namespace op {

struct fp16_t : half_detail::half16<fp16_t, half_detail::fp16_conv> {
  using half16::half16;
};

static_assert(sizeof(fp16_t) == 2, "op::fp16_t must be 2 bytes");
static_assert(std::is_standard_layout<fp16_t>::value, "op::fp16_t must be standard layout");
static_assert(std::is_trivially_copyable<fp16_t>::value, "op::fp16_t must be trivially copyable");

}  // namespace op

#endif  // MLAOPS_ACLNN_OPDEV_FP16_T_H_
