// The oneDNN route of the projection GEMMs (docs/runtime.md "GEMM routes"): oneDNN's matmul, which
// picks its own instruction set (AMX, AVX-512 BF16 / VNNI, AVX-512 FP32, ...), over the operator's
// weights. oneDNN cannot read FRACTAL_NZ weights with its fast implementations (its only NZ matmul
// is the reference loop), and the weights are the caller's on every call, so each call converts
// them once, with the converter here, into the packed layout oneDNN chose for the primitive, in
// the caller's workspace; the chunks of the call then run on the packed copy.
//
// The types (how oneDNN runs a product of the library's GEMM kinds, gemm.h):
//   kBf16  bf16 A x bf16 weights -> fp32 C (oneDNN's bf16 layout; A read where it is).
//   kF32   bf16 or fp16 A and weights widened to fp32 (exact), fp32 products and sums: for hosts
//          whose bf16 dot-product rate is below their fp32 FMA rate (AVX-512 BF16 without AMX
//          on Intel issues one vdpbf16ps per cycle against two FMAs). The bf16 / fp16 products
//          are exact in fp32, as in the bf16 kernels; the sums are fp32 in oneDNN's order.
//   kU8S8  int8 A x int8 weights -> int32 C, exact: oneDNN's fastest int8 form takes an unsigned
//          A, so A runs as A + 128 (u8) and C = oneDNN's sums - 128 x the weights' column sums
//          (taken while converting). int32 sums wrap as the library's kernels' do.
// Built without oneDNN (MLAOPS_HAVE_DNNL unset), onednn_gemm_plan returns a plan whose why_not
// says so, and nothing else here runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mlaops::kernels {

enum class OnednnType : int { kBf16 = 0, kF32 = 1, kU8S8 = 2 };
const char* onednn_type_name(OnednnType t);  // "bf16", "f32", "u8s8"

// The element type of the library's operands (A and the weights share it).
enum class GemmElem : int { kBf16 = 0, kF16 = 1, kS8 = 2 };

// Where the weights of W [K, N] are (the operators' layouts, gemm.h):
//   panels (GemmArgs): W[k][n] at data + (n / panel_width) * panel_stride + k * ldb + n % panel_width;
//   transposed FRACTAL_NZ (GemmTArgs, W^T [N, K] stored NZ with c0 = 32 bytes / element):
//     W[k][n] at data + ((k / c0) * r1 + n / 16) * 16 * c0 + (n % 16) * c0 + k % c0.
// Offsets count elements.
struct WeightSource {
  bool transposed = false;
  const void* data = nullptr;
  int64_t ldb = 0, panel_stride = 0, panel_width = 0;  // panels
  int64_t r1 = 0;                                      // transposed
};

// A planned product C[m, N] = A[m, K] x W for m = m_max (every chunk but the last) or m_last, A's
// rows lda elements apart and C's ldc apart, on `threads` threads. Copies share the oneDNN primitives (created once, at plan time).
class OnednnGemmPlan {
 public:
  struct Impl;
  bool ok() const { return impl_ != nullptr; }
  const std::string& why_not() const { return why_not_; }
  OnednnType type() const { return type_; }
  // oneDNN's implementation of the m_max primitive ("brg:avx512_core"), "" when !ok().
  std::string impl_name() const;
  // The workspace part the route needs: the packed weights, the column sums (kU8S8), the converted
  // A block (kF32, kU8S8) and oneDNN's scratchpad, each 64-byte aligned. 0 when !ok().
  int64_t workspace_bytes() const { return bytes_; }
  int64_t packed_weight_bytes() const { return packed_bytes_; }

 private:
  friend OnednnGemmPlan onednn_gemm_plan(OnednnType, GemmElem, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                         int);
  friend void onednn_gemm_pack(const OnednnGemmPlan&, const WeightSource&, void*, int64_t, int64_t);
  friend void onednn_gemm_run(const OnednnGemmPlan&, int64_t, const void*, int64_t, void*, int64_t, void*);
  std::shared_ptr<const Impl> impl_;
  std::string why_not_;
  OnednnType type_ = OnednnType::kBf16;
  int64_t bytes_ = 0, packed_bytes_ = 0;
};

// True when the library was built with oneDNN; its version ("2.6.3") or "" otherwise.
bool onednn_built();
std::string onednn_version();
// oneDNN's name for the best instruction set it uses on this host ("avx512_core_bf16"), "" without oneDNN.
std::string onednn_cpu_isa();

// The plan of a product (at plan time; creates the primitives). !ok() with the reason when oneDNN
// is absent, the type does not fit the element type (kU8S8 is for kS8, the others for kBf16 /
// kF16, kBf16 only for kBf16), or oneDNN chose a weight layout the converter does not write.
OnednnGemmPlan onednn_gemm_plan(OnednnType type, GemmElem elem, int64_t m_max, int64_t m_last, int64_t K, int64_t N,
                                int64_t lda, int64_t ldc, int threads);
// Converts the weights into the plan's layout in `ws` (the plan's workspace part, 64-byte aligned):
// once per call, before the first onednn_gemm_run. Parallel over the plan's threads. A product whose
// weights are several tensors side by side (MlaProlog's [W_DQ | W_DKV_KR]) packs each: w's column
// c is the product's column col0 + c, for c < cols (-1: up to N).
void onednn_gemm_pack(const OnednnGemmPlan& plan, const WeightSource& w, void* ws, int64_t col0 = 0,
                      int64_t cols = -1);
// C[m, 0:N] (fp32, or int32 for kU8S8) = A[m, 0:K] x W with the plan's strides, the weights packed
// in `ws`; m is the plan's m_max or m_last. oneDNN runs on the plan's threads.
void onednn_gemm_run(const OnednnGemmPlan& plan, int64_t m, const void* A, int64_t lda, void* C, int64_t ldc, void* ws);

}  // namespace mlaops::kernels
