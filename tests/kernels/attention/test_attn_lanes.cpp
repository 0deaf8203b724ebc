// Flash attention work items (kernels/cpu/attention/attn_panel.h) against a float64 reference, through every
// row of the attention family (kernels/cpu/attention/attn.h) that runs them on this host: the
// lane-major AVX-512 path (items with >= 16 rows, attn_lanes.h) and the panel path under
// every ISA level. Cases: MLA (rope, value = key
// latent), partial tiles and KV ranges not starting at 0, paged ND and NZ (c0 = 16) caches, rows a
// multiple of 4 KiB apart (the packed-K path), odd channel counts, FP16 (hi/lo split), band masks,
// explicit masks (contiguous and strided), fully masked rows, rows padded to 16 lanes, KV-split
// partials, and a scratch that is only 32-byte aligned.
// Tolerances as tests/ops/fia/fia_harness.h: BF16 out |op - ref| <= 7.8e-3 |ref| + 1e-2 rms(ref),
// FP16 out 5e-3 |ref| + 5e-3 rms(ref); lse 1e-4 |ref| + 1e-5, +inf exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention/attn.h"
#include "mlaops/numeric.h"
#include "mlaops/runtime.h"
#include "tests/support/isa_list.h"

namespace mlaops::kernels {
namespace {

enum class Layout { kContiguous, kPaged, kPagedNz, kStrided4k };

struct Case {
  std::string name;
  bool fp16 = false;
  int64_t G = 16, R = 1, QD = 64, DR = 0, VD = 64;
  bool v_is_k = false;  // V = first VD channels of K (MLA)
  int64_t P = 100;      // positions stored
  int64_t kv_begin = 0, kv_end = 100;
  Layout layout = Layout::kContiguous;
  int64_t block_size = 16;
  int64_t lo_delta = -(int64_t{1} << 62), hi_delta = int64_t{1} << 62;
  int64_t row0 = 0;
  bool explicit_mask = false, mask_transposed = false, full_row_masked = false;
  bool partial = false;
};

uint16_t to_bits(float x, bool fp16) { return fp16 ? float_to_fp16(x) : float_to_bf16(x); }
float from_bits(uint16_t b, bool fp16) { return fp16 ? fp16_to_float(b) : bf16_to_float(b); }

// A KV tensor [P][D] stored in `layout`; vals receives the stored (rounded) values.
struct Cache {
  std::vector<uint16_t> store;
  std::vector<int32_t> ids;
  FlashKv kv;
};

Cache make_cache(const Case& c, int64_t D, std::mt19937& rng, std::vector<float>* vals) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Cache ch;
  vals->assign(static_cast<size_t>(c.P * D), 0.0f);
  for (auto& v : *vals) v = from_bits(to_bits(u(rng), c.fp16), c.fp16);
  const int64_t bs = c.block_size, nblk = (c.P + bs - 1) / bs;
  FlashKv& kv = ch.kv;
  kv.c0 = D;
  switch (c.layout) {
    case Layout::kContiguous: kv.slot_stride = D + 3; break;
    case Layout::kStrided4k: kv.slot_stride = 2048; break;  // 4 KiB between rows
    case Layout::kPaged: kv.slot_stride = D; break;
    case Layout::kPagedNz:
      kv.c0 = 16;
      kv.c0_stride = bs * 16;
      kv.slot_stride = 16;
      break;
  }
  const bool paged = c.layout == Layout::kPaged || c.layout == Layout::kPagedNz;
  if (paged) {
    kv.block_size = bs;
    kv.blk_stride = c.layout == Layout::kPagedNz ? (D + 15) / 16 * bs * 16 : bs * D;
    for (int64_t b = 0; b < nblk; ++b) ch.ids.push_back(static_cast<int32_t>(b));
    std::shuffle(ch.ids.begin(), ch.ids.end(), rng);  // scattered blocks
    ch.store.assign(static_cast<size_t>(nblk * kv.blk_stride + 64), 0x7fc0);  // NaN canaries
  } else {
    ch.store.assign(static_cast<size_t>(c.P * kv.slot_stride + 64), 0x7fc0);
  }
  for (int64_t p = 0; p < c.P; ++p) {
    const int64_t row = paged ? ch.ids[static_cast<size_t>(p / bs)] * kv.blk_stride + (p % bs) * kv.slot_stride
                              : p * kv.slot_stride;
    for (int64_t d = 0; d < D; ++d)
      ch.store[static_cast<size_t>(row + (d / kv.c0) * kv.c0_stride + d % kv.c0)] =
          to_bits((*vals)[static_cast<size_t>(p * D + d)], c.fp16);
  }
  kv.base = ch.store.data();
  if (paged) kv.block_ids = ch.ids.data();
  return ch;
}

struct Ref {
  std::vector<double> out;  // [M][VD]
  std::vector<double> lse;  // [M], +inf: no valid position
};

void run_case(const Case& c) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t M = c.G * c.R, KD = c.QD + c.DR;
  // query rows [G][R][QD] and [G][R][DR]
  std::vector<uint16_t> q(static_cast<size_t>(M * c.QD)), qr(static_cast<size_t>(std::max<int64_t>(M * c.DR, 1)));
  for (auto& x : q) x = to_bits(u(rng) * 2.0f, c.fp16);
  for (auto& x : qr) x = to_bits(u(rng) * 2.0f, c.fp16);
  std::vector<float> kvals, krvals, vvals;
  Cache kc = make_cache(c, c.QD, rng, &kvals);
  Cache krc, vc;
  if (c.DR > 0) krc = make_cache(c, c.DR, rng, &krvals);
  if (!c.v_is_k) vc = make_cache(c, c.VD, rng, &vvals);
  // explicit mask [rows][P] (1 = masked)
  const int64_t mrows = c.row0 + c.R;
  std::vector<uint8_t> mask(static_cast<size_t>(mrows * c.P + 1), 0);
  for (int64_t i = 0; i < mrows; ++i)
    for (int64_t j = 0; j < c.P; ++j) {
      const bool masked = c.explicit_mask && ((i * 7 + j * 3) % 5 == 0 || (c.full_row_masked && i == c.row0 + 1));
      mask[static_cast<size_t>(c.mask_transposed ? j * mrows + i : i * c.P + j)] = masked ? 1 : 0;
    }
  const float scale = 1.0f / std::sqrt(static_cast<float>(KD));

  // float64 reference
  Ref ref;
  ref.out.assign(static_cast<size_t>(M * c.VD), 0.0);
  ref.lse.assign(static_cast<size_t>(M), std::numeric_limits<double>::infinity());
  for (int64_t g = 0; g < c.G; ++g)
    for (int64_t r = 0; r < c.R; ++r) {
      const int64_t m = g * c.R + r, i = c.row0 + r;
      std::vector<double> s;
      std::vector<int64_t> js;
      for (int64_t j = c.kv_begin; j < c.kv_end; ++j) {
        if (j < i + c.lo_delta || j > i + c.hi_delta) continue;
        if (c.explicit_mask && mask[static_cast<size_t>(c.mask_transposed ? j * mrows + i : i * c.P + j)] != 0) continue;
        double acc = 0.0;
        for (int64_t d = 0; d < c.QD; ++d)
          acc += static_cast<double>(from_bits(q[static_cast<size_t>(m * c.QD + d)], c.fp16)) * kvals[static_cast<size_t>(j * c.QD + d)];
        for (int64_t d = 0; d < c.DR; ++d)
          acc += static_cast<double>(from_bits(qr[static_cast<size_t>(m * c.DR + d)], c.fp16)) * krvals[static_cast<size_t>(j * c.DR + d)];
        s.push_back(acc * scale);
        js.push_back(j);
      }
      if (s.empty()) continue;
      const double mx = *std::max_element(s.begin(), s.end());
      double l = 0.0;
      for (double& x : s) l += (x = std::exp(x - mx));
      for (size_t t = 0; t < s.size(); ++t)
        for (int64_t d = 0; d < c.VD; ++d) {
          const double v = c.v_is_k ? kvals[static_cast<size_t>(js[t] * c.QD + d)] : vvals[static_cast<size_t>(js[t] * c.VD + d)];
          ref.out[static_cast<size_t>(m * c.VD + d)] += s[t] / l * v;
        }
      ref.lse[static_cast<size_t>(m)] = mx + std::log(l);
    }
  double rms = 0.0;
  for (double x : ref.out) rms += x * x;
  rms = std::sqrt(rms / static_cast<double>(ref.out.size()));

  FlashItem it;
  it.q = q.data();
  it.q_n_stride = c.R * c.QD;
  it.q_s_stride = c.QD;
  if (c.DR > 0) {
    it.qr = qr.data();
    it.qr_n_stride = c.R * c.DR;
    it.qr_s_stride = c.DR;
    it.kr = krc.kv;
  }
  it.G = c.G, it.R = c.R, it.QD = c.QD, it.DR = c.DR, it.VD = c.VD;
  it.fp16 = c.fp16;
  it.k = kc.kv;
  it.v = c.v_is_k ? kc.kv : vc.kv;
  it.kv_begin = c.kv_begin;
  it.kv_end = c.kv_end;
  it.scale = scale;
  it.row0 = c.row0;
  it.lo_delta = c.lo_delta;
  it.hi_delta = c.hi_delta;
  if (c.explicit_mask) {
    it.mask = mask.data();
    it.mask_i_stride = c.mask_transposed ? 1 : c.P;
    it.mask_j_stride = c.mask_transposed ? mrows : 1;
  }
  FlashShape shape;
  shape.M = M, shape.R = c.R, shape.QD = c.QD, shape.DR = c.DR, shape.VD = c.VD, shape.fp16 = c.fp16;

  // Every row of the attention family this host runs that takes such an item (the lane and panel
  // kinds; the panel row under every ISA level for its GEMM / softmax / convert rows).
  const auto& fam = attn_family();
  AttnShape as;
  as.G = c.G, as.R = c.R, as.QD = c.QD, as.DR = c.DR, as.VD = c.VD, as.fp16 = c.fp16;
  for (Isa isa : test_isas()) {
    for (int ri = 0; ri < fam.size(); ++ri) {
      const AttnRow& row = fam.value(ri);
      if ((row.kind != AttnKind::kLanes && row.kind != AttnKind::kPanel) || !fam.allowed(ri, isa) ||
          row.why_not(as) != nullptr)
        continue;
      fam.note_use(ri);
      const FlashKernels k = flash_kernels(isa);
      SCOPED_TRACE(c.name + " isa=" + isa_name(isa) + " " + fam.info(ri).name);
      // scratch only 32-byte aligned, NaN-filled
      std::vector<float> scratch(static_cast<size_t>(flash_scratch_bytes(shape) / 4 + 64),
                                 std::numeric_limits<float>::quiet_NaN());
      char* sp = reinterpret_cast<char*>(scratch.data());
      sp += (96 - reinterpret_cast<uintptr_t>(sp) % 64) % 64;
      if (reinterpret_cast<uintptr_t>(sp) % 64 == 0) sp += 32;
      std::vector<uint16_t> out(static_cast<size_t>(M * c.VD + 8), 0x5555);
      std::vector<float> lse(static_cast<size_t>(M + 1), -7.0f);
      std::vector<float> po(static_cast<size_t>(M * c.VD + 8), -7.0f), pm(static_cast<size_t>(M), -7.0f),
          pl(static_cast<size_t>(M), -7.0f);
      FlashItem run = it;
      if (c.partial) {
        run.partial_o = po.data();
        run.partial_m = pm.data();
        run.partial_l = pl.data();
      } else {
        run.out = out.data();
        run.out_n_stride = c.R * c.VD;
        run.out_s_stride = c.VD;
        run.lse = lse.data();
        run.lse_n_stride = c.R;
        run.lse_s_stride = 1;
      }
      attn_run(row, k, shape, &run, 1, sp);

      const double rt = c.fp16 ? 5e-3 : 7.8e-3, at = c.fp16 ? 5e-3 * rms : 1e-2 * rms;
      for (int64_t m = 0; m < M; ++m) {
        const double rl = ref.lse[static_cast<size_t>(m)];
        double got_lse;
        for (int64_t d = 0; d < c.VD; ++d) {
          const double want = ref.out[static_cast<size_t>(m * c.VD + d)];
          double got;
          if (c.partial) {
            const float l = pl[static_cast<size_t>(m)];
            got = l > 0.0f ? po[static_cast<size_t>(m * c.VD + d)] / l : 0.0;
          } else {
            got = from_bits(out[static_cast<size_t>(m * c.VD + d)], c.fp16);
          }
          ASSERT_LE(std::fabs(got - want), rt * std::fabs(want) + at) << "row " << m << " d " << d;
        }
        if (c.partial)
          got_lse = pl[static_cast<size_t>(m)] > 0.0f ? pm[static_cast<size_t>(m)] + std::log(static_cast<double>(pl[static_cast<size_t>(m)]))
                                                      : std::numeric_limits<double>::infinity();
        else
          got_lse = lse[static_cast<size_t>(m)];
        if (std::isinf(rl)) {
          ASSERT_TRUE(std::isinf(got_lse) && got_lse > 0) << "row " << m;
        } else {
          ASSERT_LE(std::fabs(got_lse - rl), 1e-4 * std::fabs(rl) + 1e-5) << "row " << m;
        }
      }
      if (!c.partial) {
        EXPECT_EQ(out[static_cast<size_t>(M * c.VD)], 0x5555);  // nothing written past the rows
        EXPECT_EQ(lse[static_cast<size_t>(M)], -7.0f);
      } else {
        EXPECT_EQ(po[static_cast<size_t>(M * c.VD)], -7.0f);
      }
    }
  }
}

Case mla(const char* name, int64_t G, int64_t P) {
  Case c;
  c.name = name;
  c.G = G, c.R = 1, c.QD = 512, c.DR = 64, c.VD = 512;
  c.v_is_k = true;
  c.P = P, c.kv_end = P;
  c.layout = Layout::kPaged;
  c.block_size = 128;
  return c;
}

TEST(FlashAttnItem, MlaDecodePagedPartialTiles) {
  run_case(mla("mla_32h_paged_300", 32, 300));
  Case c = mla("mla_16h_range_5_260", 16, 300);
  c.kv_begin = 5, c.kv_end = 260;
  run_case(c);
}

TEST(FlashAttnItem, MlaDecodeNzFp16AndSplitPartial) {
  Case c = mla("mla_48h_nz16_fp16", 48, 150);
  c.layout = Layout::kPagedNz;
  c.block_size = 16;
  c.fp16 = true;
  run_case(c);
  c = mla("mla_32h_split_partial", 32, 400);
  c.kv_begin = 128, c.kv_end = 385;
  c.partial = true;
  run_case(c);
}

TEST(FlashAttnItem, MtpRowsWithCausalBand) {
  Case c = mla("mla_mtp_16h_3rows_band", 16, 67);
  c.R = 3;
  c.row0 = 0;
  c.hi_delta = 67 - 3;  // sparse 3: row i sees j <= i + (S_kv - S_q)
  run_case(c);
}

TEST(FlashAttnItem, PrefillStridedRowsCausal) {
  Case c;
  c.name = "prefill_64rows_strided4k_causal";
  c.G = 1, c.R = 64, c.QD = 128, c.DR = 64, c.VD = 128;
  c.P = 300, c.kv_end = 300;
  c.layout = Layout::kStrided4k;
  c.row0 = 0;
  c.hi_delta = 300 - 64;
  run_case(c);
  c.name = "prefill_40rows_strided4k_causal_fp16";
  c.R = 40, c.hi_delta = 300 - 40, c.fp16 = true;
  run_case(c);
}

TEST(FlashAttnItem, OddDimsPadLanesExplicitMasks) {
  Case c;
  c.name = "odd_20rows_mask_fullrow";
  c.G = 4, c.R = 5, c.QD = 31, c.DR = 0, c.VD = 17;
  c.P = 140, c.kv_begin = 5, c.kv_end = 140;
  c.layout = Layout::kContiguous;
  c.row0 = 2;
  c.explicit_mask = true;
  c.full_row_masked = true;
  run_case(c);
  c.name = "odd_20rows_mask_transposed_band_fp16";
  c.mask_transposed = true;
  c.full_row_masked = false;
  c.lo_delta = -40, c.hi_delta = 3;
  c.fp16 = true;
  run_case(c);
}

TEST(FlashAttnItem, BandSkipsWholeTilesAndEmptyRows) {
  Case c;
  c.name = "band_skip_17rows";
  c.G = 17, c.R = 1, c.QD = 64, c.VD = 48;
  c.P = 500, c.kv_end = 500;
  c.layout = Layout::kPaged;
  c.block_size = 64;
  c.row0 = 0;
  c.lo_delta = 300, c.hi_delta = 330;  // only positions 300..330: tiles 0, 1 and 3 skipped
  run_case(c);
  c.name = "empty_rows";
  c.lo_delta = 600, c.hi_delta = 700;  // nothing valid: zeros and +inf
  run_case(c);
}

TEST(FlashAttnItem, SmallItemsTakeThePanelPath) {
  Case c;
  c.name = "gqa_8rows";
  c.G = 8, c.R = 1, c.QD = 128, c.VD = 128;
  c.P = 200, c.kv_end = 200;
  c.layout = Layout::kPaged;
  c.block_size = 128;
  run_case(c);
}

}  // namespace
}  // namespace mlaops::kernels
