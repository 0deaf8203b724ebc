/*
 * mlaops drop-in for CANN's aclnn/opdev/bfloat16.h: op::bfloat16, a bfloat16 value type for
 * host buffers (2 bytes, standard layout, trivially copyable; the bits are the member `val`).
 * C++ only. See docs/sdk-headers.md.
 *
 *  * Construction from float, double and any integer type rounds to nearest, ties to even
 *    (mlaops/numeric.h: float_to_bf16, double_to_bf16; an integer is rounded once, directly);
 *    overflow gives +-inf, NaN stays NaN (quiet). bfloat16::from_bits() takes the raw bits.
 *  * operator float() is implicit (exact); double is explicit (exact).
 *  * bfloat16 op bfloat16 (+ - * /) is computed in float and rounded back to bfloat16 (which is
 *    the correctly rounded bf16 result). Mixed with a built-in type the rules of C++23's
 *    std::bfloat16_t apply: bfloat16 op integer converts the integer to bfloat16 first and
 *    gives bfloat16; bfloat16 op float / double converts the bfloat16 and gives float / double.
 *    Compound assignment rounds the result back to bfloat16. Comparisons follow the same
 *    conversions (so -0 == +0 and NaN compares unequal to everything).
 */
#ifndef MLAOPS_ACLNN_OPDEV_BFLOAT16_H_
#define MLAOPS_ACLNN_OPDEV_BFLOAT16_H_

#include "aclnn/opdev/half16.h"

namespace op {

struct bfloat16 : half_detail::half16<bfloat16, half_detail::bf16_conv> {
  using half16::half16;
};

static_assert(sizeof(bfloat16) == 2, "op::bfloat16 must be 2 bytes");
static_assert(std::is_standard_layout<bfloat16>::value, "op::bfloat16 must be standard layout");
static_assert(std::is_trivially_copyable<bfloat16>::value, "op::bfloat16 must be trivially copyable");

}  // namespace op

#endif  // MLAOPS_ACLNN_OPDEV_BFLOAT16_H_
