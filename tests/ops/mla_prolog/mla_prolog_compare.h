// The comparison of an MlaProlog run with the float64 reference's (no gtest: shared by the
// operator tests and the fuzz targets).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "mlaops/runtime.h"
#include "testkit/compare.h"
#include "testkit/mla_prolog_test_data.h"

namespace mlaops::testing {

using testdata::HostTensor;
using testdata::MlaPrologCase;
using testdata::MlaPrologCaseConfig;

inline std::string describe(const MlaPrologCaseConfig& c) {
  std::string s = std::string(mla_prolog_scenario_name(c.scenario)) + (c.bsh ? " BSH" : " TND") + " B=" +
                  std::to_string(c.B) + " S=" + std::to_string(c.S) + " He=" + std::to_string(c.He) +
                  " Hcq=" + std::to_string(c.Hcq) + " N=" + std::to_string(c.N) + " D=" + std::to_string(c.D) +
                  " Dr=" + std::to_string(c.Dr) + " Hckv=" + std::to_string(c.Hckv) + " blocks=" +
                  std::to_string(c.block_num) + "x" + std::to_string(c.block_size) + " " +
                  mla_prolog_cache_mode_name(c.cache_mode) + (c.seq_lens.empty() ? "" : " seq_lens") +
                  " isa=" + isa_name(active_isa()) +
                  " threads=" + std::to_string(num_threads());
  if (c.qc_qr_scale != 1.0 || c.kc_scale != 1.0 || c.query_norm)
    s += " qcQrScale=" + std::to_string(c.qc_qr_scale) + " kcScale=" + std::to_string(c.kc_scale) +
         (c.query_norm ? " queryNormOut" : "");
  return s;
}

// The per-tile packed kv rows the reference wrote (rows not all canary), split into their parts:
// int8 values [rows, Hckv], bf16 rope [rows, Dr], fp32 scales [rows, Hckv/128].
struct PerTileRows {
  HostTensor q, rope, scale;
};
inline PerTileRows per_tile_rows(const MlaPrologCase& c, const MlaPrologCase& ref) {
  const MlaPrologCaseConfig& cfg = c.cfg;
  const int64_t w = cfg.kv_row(), tiles = cfg.Hckv / 128;
  const int64_t rows = static_cast<int64_t>(ref.kv_cache.bytes.size()) / w;
  std::vector<int64_t> written;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < w; ++k)
      if (ref.kv_cache.bytes[static_cast<size_t>(r * w + k)] != cfg.canary) {
        written.push_back(r);
        break;
      }
  const int64_t n = static_cast<int64_t>(written.size());
  PerTileRows out{testdata::make_tensor(DType::kInt8, {n, cfg.Hckv}), testdata::make_tensor(DType::kBFloat16, {n, cfg.Dr}),
                  testdata::make_tensor(DType::kFloat32, {n, tiles})};
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = c.kv_cache.bytes.data() + written[static_cast<size_t>(i)] * w;
    std::memcpy(out.q.bytes.data() + i * cfg.Hckv, row, static_cast<size_t>(cfg.Hckv));
    std::memcpy(out.rope.bytes.data() + i * cfg.Dr * 2, row + cfg.Hckv, static_cast<size_t>(cfg.Dr * 2));
    std::memcpy(out.scale.bytes.data() + i * tiles * 4, row + cfg.Hckv + 2 * cfg.Dr, static_cast<size_t>(tiles * 4));
  }
  return out;
}

// The tolerances of docs/ops/mla_prolog.md: bf16 outputs within 2 bf16 ulps (+0.4 % of the RMS
// for cancellation). The query outputs sit at the end of a chain of roundings the vendor kernel
// also performs (c_Q to bf16 or a per-token int8 re-quantization, then q_nope to bf16, then the
// output), so they carry the rounding-cascade allowance (mla_prolog_query_tolerance in
// testkit/compare.h: at most 0.1 % of the elements beyond the bound, 4 ulps in the quantized
// scenarios, each within 5 % of the RMS). Caches: strict. int8 outputs (KV cache, full-quant
// query): +-1, at most 2 % of elements off by one.
// Returns one line per failed check (empty: every check passed).
inline std::string mla_prolog_mismatches(const MlaPrologCase& fast, const MlaPrologCase& ref) {
  const std::string what = describe(fast.cfg);
  std::string bad;
  const bool quant_q = fast.cfg.scenario != MlaPrologScenario::kNoQuant;
  auto check = [&](const char* name, const HostTensor& a, const HostTensor& r, const Tolerance& tol) {
    if (!r.present()) return;
    const bool integer = r.view.dtype == DType::kInt8;
    const Stats s = compare(a.view, r.view, tol);
    if (!within(s, tol, integer)) bad += std::string(name) + ": " + s.str() + " | " + what + "\n";
    if (std::getenv("MLAOPS_TEST_VERBOSE")) std::printf("%-26s %s | %s\n", name, s.str().c_str(), what.c_str());
  };
  const Tolerance q_tol = mla_prolog_query_tolerance(quant_q);
  if (fast.query_out.view.dtype == DType::kInt8) {
    check("query_out", fast.query_out, ref.query_out, int8_tolerance(0.02));
    check("dequant_scale_q_nope_out", fast.dequant_scale_q_nope_out, ref.dequant_scale_q_nope_out, fp32_tolerance(0.02));
  } else {
    check("query_out", fast.query_out, ref.query_out, q_tol);
  }
  check("query_rope_out", fast.query_rope_out, ref.query_rope_out, q_tol);
  // V3 queryNormOut: the bf16 A operand (the query's first rounding) or the int8 dynamic quant
  if (fast.query_norm_out.view.dtype == DType::kInt8) {
    check("query_norm_out", fast.query_norm_out, ref.query_norm_out, int8_tolerance(0.02));
    check("dequant_scale_q_norm_out", fast.dequant_scale_q_norm_out, ref.dequant_scale_q_norm_out,
          fp32_tolerance(0.02));
  } else {
    check("query_norm_out", fast.query_norm_out, ref.query_norm_out, q_tol);
  }
  // per-tile KV quant: the packed rows' parts (int8 values, bf16 rope, fp32 scales)
  const bool per_tile = mla_prolog_is_per_tile(fast.cfg.scenario);
  if (per_tile) {
    const PerTileRows a = per_tile_rows(fast, ref), r = per_tile_rows(ref, ref);
    check("kv_cache per-tile int8", a.q, r.q, int8_tolerance(0.02));
    check("kv_cache per-tile rope", a.rope, r.rope, bf16_tolerance(2));
    check("kv_cache per-tile scales", a.scale, r.scale, fp32_tolerance(1e-4));
  }
  // caches: bytes the reference left at the canary must be untouched by the fast path too
  for (auto [name, a, r] : {std::tuple{"kv_cache", &fast.kv_cache, &ref.kv_cache},
                            std::tuple{"kr_cache", &fast.kr_cache, &ref.kr_cache}}) {
    const bool integer = r->view.dtype == DType::kInt8;
    if (!per_tile) check(name, *a, *r, integer ? int8_tolerance(0.02) : bf16_tolerance(2));
    int64_t untouched_mismatch = 0;
    const int64_t es = dtype_size(r->view.dtype);
    for (size_t i = 0; i + es <= r->bytes.size(); i += static_cast<size_t>(es)) {
      bool ref_canary = true, fast_canary = true;
      for (int64_t k = 0; k < es; ++k) {
        ref_canary &= r->bytes[i + k] == fast.cfg.canary;
        fast_canary &= a->bytes[i + k] == fast.cfg.canary;
      }
      untouched_mismatch += ref_canary != fast_canary;
    }
    if (untouched_mismatch != 0) bad += std::string(name) + ": written/untouched elements differ | " + what + "\n";
  }
  return bad;
}

}  // namespace mlaops::testing
