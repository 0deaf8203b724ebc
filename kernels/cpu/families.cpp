// The kernel families of this build (core/kernel_registry.h): one list, read by kernel_list(),
// the kernel override, `mlaops info` and the kernel coverage test (docs/runtime.md). Each family's
// table lives in its portable file (kernels/cpu/<family>.cpp).
#include "core/kernel_registry.h"
#include "kernels/cpu/attention/attn.h"
#include "kernels/cpu/layout/convert.h"
#include "kernels/cpu/quant/dequant_row.h"
#include "kernels/cpu/attention/flash_mlaq.h"
#include "kernels/cpu/attention/flash_quant.h"
#include "kernels/cpu/gemm/gemm.h"
#include "kernels/cpu/rows/mla_preprocess_rows.h"
#include "kernels/cpu/attention/softmax.h"
#include "kernels/cpu/layout/transpose.h"

namespace mlaops {

const KernelFamily* const* kernel_families(int* count) {
  static const KernelFamily* const list[] = {
      &kernels::gemm_bf16_family(),  // the GEMM rows, one family per data type (gemm.h)
      &kernels::gemm_s8_family(),
      &kernels::gemm_f16_family(),
      &kernels::gemm_bf16_t_family(),
      &kernels::gemm_s8_t_family(),
      &kernels::gemm_f16_t_family(),
      &kernels::gemm_s8_rowsum_family(),
      &kernels::softmax_family(),
      &kernels::convert_family(),
      &kernels::transpose16_family(),
      &kernels::dequant_row_family(),
      &kernels::dequant_row4_family(),
      &kernels::mla_preprocess_rows_family(),
      &kernels::attn_family(),
      &kernels::flash_mlaq_family(),
      &kernels::flash_quant_family(),
  };
  *count = static_cast<int>(sizeof(list) / sizeof(list[0]));
  return list;
}

}  // namespace mlaops
