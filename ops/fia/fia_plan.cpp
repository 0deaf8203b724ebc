// FusedInferAttentionScoreV4 phase 1, the plan: from the validated call (FiaCall) everything
// phase 2 does, decided once for the active ISA level and thread count:
//   * the path: the first row of the FIA path table (ops/fia/fia_paths.h) that runs the call, which
//     plans the rest (MLA full quant: ops/fia/fia_mla_quant.h; INT8 full quant: ops/fia/fia_full_quant.h;
//     the attention paths: fia_attn_plan below);
//   * work items (batch, KV head, block of R query rows) and KV splits (flash-decoding) when
//     there are fewer items than threads;
//   * the kernel of each kind of item: the first row of the attention family
//     (kernels/cpu/attention/attn.h) this host and level allow whose shape rule accepts it, with
//     the reasons the rows before it were skipped; INT8 key / value rows that no row reads in
//     place are dequantised chunk by chunk (ops/fia/fia_antiquant.h) for the chosen row;
//   * tasks: the KV heads of one batch run together on the decode kernels, adjacent heads whose
//     rows the lane kernel copies run together; otherwise one item per task;
//   * the workspace layout.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/workspace.h"
#include "kernels/cpu/attention/attn.h"
#include "kernels/cpu/attention/attn_fp16_softmax.h"
#include "kernels/cpu/attention/flash_quant.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_full_quant.h"
#include "ops/fia/fia_paths.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

using kernels::AttnKind;
using kernels::AttnShape;

// The chosen row for a kind of item; `skipped` (optional, for explain) receives why the rows
// before it were skipped.
struct Choice {
  int row = 0;
  bool dequant = false;
};

Choice choose(const AttnShape& s, Isa isa, std::string* skipped) {
  const auto& fam = kernels::attn_family();
  for (int i = 0; i < fam.size(); ++i) {
    std::string why;
    if (fam.allowed(i, isa, skipped != nullptr ? &why : nullptr)) {
      const char* w = fam.value(i).why_not(s);
      if (w == nullptr) return {i, false};
      why = w;
    }
    if (skipped != nullptr) *skipped += std::string(skipped->empty() ? "" : "; ") + fam.info(i).name + ": " + why;
  }
  return {fam.size() - 1, false};
}

// The shape of the items of batch b with `rows` query rows starting at r0.
AttnShape item_shape(const FiaPlan& P, int64_t b, int64_t r0, int64_t rows) {
  AttnShape s;
  s.G = P.G;
  s.R = rows;
  s.QD = P.QD;
  s.DR = P.DR;
  s.VD = P.VD;
  s.fp16 = P.fp16;
  s.kv_int8 = P.aq.on;
  s.channel_params = P.aq.k.kind == FiaAntiquantParam::Kind::kChannel && P.aq.v.kind == FiaAntiquantParam::Kind::kChannel;
  s.k_c0 = P.k.c0;
  s.v_c0 = P.v.c0;
  s.explicit_mask = P.explicit_mask;
  s.fp16_softmax = P.ip.fp16_softmax;
  int64_t lo, hi;
  fia_row_deltas(P, b, &lo, &hi);
  const int64_t kv = P.act_kv[static_cast<size_t>(b)] + P.prefix.len;  // effective positions
  s.full_range = kv == 0 || (r0 + rows - 1 + lo <= 0 && r0 + hi >= kv - 1);
  return s;
}

// The row of an item: in place, or (INT8 rows no row reads in place) over dequantised chunks,
// whose rows are contiguous in the chunk buffer.
Choice choose_item(const FiaPlan& P, const AttnShape& s, std::string* skipped) {
  Choice c = choose(s, P.isa, skipped);
  if (!s.kv_int8 || kernels::attn_family().value(c.row).kind == AttnKind::kDecodeI8) return c;
  AttnShape d = s;
  d.kv_int8 = false;
  d.QD = s.QD * P.aq.split;  // KV antiquant chunks: two parts per value (kFiaAntiquantParts, ops/fia/fia_antiquant.h)
  d.VD = s.VD * P.aq.split;
  d.k_c0 = d.QD;
  d.v_c0 = d.VD;
  std::string after;
  c = choose(d, P.isa, skipped != nullptr ? &after : nullptr);
  c.dequant = true;
  if (skipped != nullptr) *skipped = "in place: " + *skipped + (after.empty() ? "" : "; dequantised rows: " + after);
  return c;
}

// Items per task on the decode kernels: the KV heads of one batch run together (a power of two
// <= 16 dividing KV_N) when every item is a decode row (item index = b * KV_N + h) and the heads
// share the K / V rows (paged BnBsH, BSH / BSND: head stride < row stride; INT8 caches: always,
// through the chunk buffer), while there are still at least as many tasks as threads.
int64_t decode_group(const FiaPlan& P) {
  if (P.R != 1 || P.rope) return 1;
  const int64_t n_items = static_cast<int64_t>(P.items.size());
  for (int64_t i = 0; i < n_items; ++i)
    if (P.items[static_cast<size_t>(i)].h != i % P.KVN || P.items[static_cast<size_t>(i)].rows != 1) return 1;
  int64_t g = 1;
  while (g < 16 && P.KVN % (2 * g) == 0) g *= 2;
  while (g > 1 && n_items / g * P.splits < P.threads) g /= 2;
  return g;
}

int64_t clamp62(__int128 v) {
  const __int128 lim = static_cast<__int128>(1) << 62;
  return static_cast<int64_t>(std::max(-lim, std::min(lim, v)));
}

// The row a family picks at the plan's level.
const char* row_name(const KernelFamily& f, Isa isa) { return f.info(f.select(isa)).name; }

std::string fmt(const char* f, long long a, long long b = 0, long long c = 0, long long d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), f, a, b, c, d);
  return buf;
}

Status plan_call(const FiaCall& call, const char* op, FiaPlan* plan) {
  FiaPlan& P = *plan;
  P = FiaPlan();
  static_cast<FiaCall&>(P) = call;
  P.isa = active_isa();
  P.threads = std::max(1, num_threads());
  if (P.noop || P.empty_kv) return kSuccess;
  P.path = fia_path_choose(P, P.threads, nullptr);  // the first path that runs the call (ops/fia/fia_paths.h)
  return fia_path(P.path).plan(&P, op);
}

}  // namespace

FiaAttnSizes fia_attn_sizes(const FiaCall& c, int threads, bool pgroup) {
  FiaAttnSizes z;
  const int64_t max_q = std::max<int64_t>(1, *std::max_element(c.act_q.begin(), c.act_q.end()));
  z.R = std::max<int64_t>(1, std::min<int64_t>(max_q, 128 / std::min<int64_t>(c.G, 128)));
  z.tile = c.ip.fp16_softmax ? kernels::kFp16SoftmaxBlock : 64;  // FP16 emulation: its 128-position blocks
  for (int64_t b = 0; b < c.B; ++b) z.n_items += c.KVN * ceil_div(c.act_q[static_cast<size_t>(b)], z.R);
  // Left padding: a decode batch whose KV window starts before 0 has no own position; the lengths
  // before the windows bound every padding value's (ops/fia/fia_left_padding.h).
  const std::vector<int64_t>& kv = c.lp.kv ? c.lp.act_kv_in : c.act_kv;
  const int64_t own_max_kv = c.B == 0 ? 0 : *std::max_element(kv.begin(), kv.end());
  z.max_kv = c.B == 0 ? 0 : own_max_kv + c.prefix.len;
  z.split_kv = pgroup ? own_max_kv : z.max_kv;  // the prefix work range splits the prefix itself
  if (z.n_items > 0 && z.n_items < threads && !c.ip.fp16_softmax)  // the FP16 emulation runs items whole
    z.splits = std::max<int64_t>(1, std::min<int64_t>((threads + z.n_items - 1) / z.n_items, z.split_kv / (2 * z.tile)));
  return z;
}

Status fia_attn_plan(FiaPlan* plan, const char* op) {
  FiaPlan& P = *plan;
  const int64_t B = P.B, KVN = P.KVN;
  const FiaAttnSizes z = fia_attn_sizes(P, P.threads, P.pgroup);
  const int64_t max_kv = z.max_kv;
  P.R = z.R;
  P.tile = z.tile;
  // Shared prefix as its own work range (the prefix_group path, ops/fia/fia_prefix.h): units of up to
  // 128 / G flattened query rows of every batch read the prefix once per KV head.
  if (P.pgroup) fia_prefix_plan_units(&P, std::max<int64_t>(1, 128 / std::min<int64_t>(P.G, 128)));
  // Lane path (BF16, >= 16 query rows per item) over a cache whose key rows of one head lie far
  // apart (many heads per slot) with contiguous channels: KV is read through a dense copy of 512
  // positions per chunk (kernels/cpu/attention/attn_panel.h), which costs 512 x (QD + DR + VD) x 2 bytes of
  // per-thread scratch; items of adjacent heads then run in groups that copy their rows together
  // (one contiguous run per position), so the items are ordered (b, r0, h).
  const int lanes = kernels::attn_family().find("attn_avx512_lanes");
  const bool lanes_row = lanes >= 0 && kernels::attn_family().allowed(lanes, P.isa);
  const bool copy = lanes_row && !P.fp16 && !P.aq.on && P.G * P.R >= 16 && P.k.slot > 2 * P.QD && P.k.c0 >= P.QD &&
                    P.v.c0 >= P.VD && max_kv > 128;  // more than one lane tile
  if (P.prefix.on && !P.pgroup && !copy) {  // shared prefix: (h, b, r0), the batches of one KV head read its prefix in turn
    for (int64_t h = 0; h < KVN; ++h)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t r0 = 0; r0 < P.act_q[static_cast<size_t>(b)]; r0 += P.R)
          P.items.push_back({b, h, r0, std::min(P.R, P.act_q[static_cast<size_t>(b)] - r0)});
  }
  for (int64_t b = 0; b < B && !(P.prefix.on && !P.pgroup && !copy); ++b) {
    const int64_t aq_b = P.act_q[static_cast<size_t>(b)];
    if (copy) {
      for (int64_t r0 = 0; r0 < aq_b; r0 += P.R)
        for (int64_t h = 0; h < KVN; ++h) P.items.push_back({b, h, r0, std::min(P.R, aq_b - r0)});
    } else {
      for (int64_t h = 0; h < KVN; ++h)
        for (int64_t r0 = 0; r0 < aq_b; r0 += P.R) P.items.push_back({b, h, r0, std::min(P.R, aq_b - r0)});
    }
  }
  const int64_t n_items = static_cast<int64_t>(P.items.size());
  P.splits = z.splits;
  if (P.prefix.on && !P.pgroup) P.splits *= 2;  // shared prefix: prefix splits, then own splits (ops/fia/fia_prefix.h)
  P.psplits = 1;
  const int64_t n_units = static_cast<int64_t>(P.punits.size());
  if (P.pgroup && n_units < P.threads)
    P.psplits = std::max<int64_t>(1, std::min<int64_t>(ceil_div(P.threads, n_units), P.prefix.len / (2 * P.tile)));
  kernels::FlashShape& fs = P.shape;
  fs.R = P.pgroup ? std::max(P.R, P.prow_rows) : P.R;  // the units' rows too
  fs.M = P.G * fs.R;
  fs.QD = P.QD * P.aq.split;  // KV antiquant chunks carry kFiaAntiquantParts x the channels (ops/fia/fia_antiquant.h)
  fs.DR = P.DR;
  fs.VD = P.VD * P.aq.split;
  fs.tile = P.tile;
  fs.fp16 = P.fp16;
  fs.bias = P.pse;
  if (copy) fs.copy_rows = 512;
  P.copy_rows = fs.copy_rows;
  P.panel = kernels::flash_kernels(P.isa);
  if (P.aq.on) P.dequant = kernels::dequant_row_kernel(P.isa);
  if (P.aq.int4) P.dequant4 = kernels::dequant_row4_kernel(P.isa);

  // The row of each item (items differ only in their rows and whether the rule masks inside
  // their range: a few kinds, each chosen once).
  std::vector<size_t> kind_of(static_cast<size_t>(n_items));
  for (int64_t i = 0; i < n_items; ++i) {
    const FiaPlan::Item& w = P.items[static_cast<size_t>(i)];
    const AttnShape s = item_shape(P, w.b, w.r0, w.rows);
    size_t k = 0;
    while (k < P.kinds.size() && !(P.kinds[k].rows == s.R && P.kinds[k].full == s.full_range)) ++k;
    if (k == P.kinds.size()) {
      const Choice c = choose_item(P, s, nullptr);
      P.kinds.push_back({i, 0, s.R, s.full_range, c.row, c.dequant});
      kernels::attn_family().note_use(c.row);
    }
    ++P.kinds[k].count;
    kind_of[static_cast<size_t>(i)] = k;
  }
  const auto& kinds = P.kinds;
  const auto& fam = kernels::attn_family();
  auto kind_is = [&](size_t k, std::initializer_list<AttnKind> set) {
    const AttnKind a = fam.value(kinds[k].row).kind;
    for (AttnKind x : set)
      if (a == x) return true;
    return false;
  };
  // The prefix units' rows (their KV range is the prefix: every position of it, contiguous rows).
  for (FiaPlan::PUnit& u : P.punits) {
    AttnShape s;
    s.G = P.G;
    s.R = u.rows;
    s.QD = P.QD;
    s.VD = P.VD;
    s.fp16 = P.fp16;
    s.kv_int8 = P.aq.on;
    s.channel_params = P.aq.on;  // per-token parameters keep the per-batch form
    s.k_c0 = P.QD;
    s.v_c0 = P.VD;
    s.explicit_mask = P.explicit_mask;
    s.full_range = true;
    const bool same = &u != &P.punits[0] && u.rows == (&u - 1)->rows;
    const Choice c = same ? Choice{(&u - 1)->row, (&u - 1)->dequant} : choose_item(P, s, nullptr);
    u.row = c.row;
    u.dequant = c.dequant;
    if (!same) kernels::attn_family().note_use(c.row);
  }
  // Tasks: groups of g consecutive items that share a row and a batch (and query block).
  bool all_decode = n_items > 0, any_lanes = false;
  for (size_t k = 0; k < kinds.size(); ++k) {
    all_decode = all_decode && kind_is(k, {AttnKind::kDecode, AttnKind::kDecodeI8});
    any_lanes = any_lanes || kind_is(k, {AttnKind::kLanes});
  }
  int64_t group = 1;
  if (copy && any_lanes && P.splits == 1 && !P.pgroup) {  // groups of one query block's heads (items (b, r0, h))
    while (2 * group <= kernels::flash_group_max_items(fs) && KVN % (2 * group) == 0) group *= 2;
    while (group > 1 && n_items / group < P.threads) group /= 2;
  } else if (all_decode) {
    group = decode_group(P);
  }
  for (int64_t i = 0; i < n_items; i += group) {
    bool together = true;
    for (int64_t j = i + 1; j < i + group; ++j)
      together = together && kind_of[static_cast<size_t>(j)] == kind_of[static_cast<size_t>(i)] &&
                 P.items[static_cast<size_t>(j)].b == P.items[static_cast<size_t>(i)].b;
    const int64_t n = together ? group : 1;
    for (int64_t j = i; j < i + group; j += n) {
      const FiaPlan::Kind& k = kinds[kind_of[static_cast<size_t>(j)]];
      P.tasks.push_back({j, n, k.row, k.dequant});
    }
  }
  // Workspace: per-thread scratch (the largest kind), INT8 buffers, sink floats, KV-split partials.
  // FIA-17, first the bound of the per-thread scratch: the kernels' formulas
  // (flash_group_scratch_bytes, flash_decode_scratch_bytes, flash_decode_i8_scratch_bytes,
  // fia_antiquant_thread_bytes) are unchecked int64 sums of products of two shape factors (rows up to
  // 16 x M, or positions up to 512, by channels) times constants, below 2^10 x (M + 1024) x
  // (D + D_R + V_D + 1024) in all; this bound fitting int64 with 2^20 to spare keeps each of them
  // below 2^53 (the C++ API takes any head dim and head count: a query of one row and D 2^58
  // overflowed them before any check).
  int64_t channels, bound;
  MLAOPS_CHECK(add_ok(fs.QD, fs.DR, &channels) && add_ok(channels, fs.VD, &channels) &&
                   add_ok(channels, 1024, &channels) && product_ok({fs.M + 1024, channels, int64_t{1} << 20}, &bound),
               kParamInvalid,
               "%s: query: FIA-17 per-thread scratch bound overflows int64; allowed (M + 1024) x (D + D_R + V_D + "
               "1024) x 2^20 <= 2^63 - 1, got M %lld (G x rows per item), D %lld, D_R %lld, V_D %lld",
               op, (long long)fs.M, (long long)fs.QD, (long long)fs.DR, (long long)fs.VD);
  int64_t scratch = kernels::flash_group_scratch_bytes(fs, copy ? group : 1);
  if (all_decode) scratch = std::max(scratch, kernels::flash_decode_scratch_bytes(group, P.G, fs.QD, fs.VD, P.fp16));
  if (P.pgroup) {  // the merge's two states per item (fia_prefix_merge)
    scratch = std::max(scratch, 2 * P.G * P.R * (P.VD + 2) * 4);
    for (const FiaPlan::PUnit& u : P.punits)
      if (fam.value(u.row).kind == AttnKind::kDecode)
        scratch = std::max(scratch, kernels::flash_decode_scratch_bytes(1, P.G, fs.QD, fs.VD, P.fp16));
  }
  P.thread_bytes = round_up(scratch, kWorkspaceAlign);
  WorkspaceLayout l(op, "FIA-17 workspace overflows int64 (the sum of its parts)");
  int64_t threads_total;
  MLAOPS_CHECK(mul_ok(P.thread_bytes, P.threads, &threads_total), kParamInvalid,
               "%s: workspace: FIA-17 workspace overflows int64 (per-thread scratch x threads); allowed <= 2^63 - 1 "
               "bytes, got %lld bytes x %d threads",
               op, (long long)P.thread_bytes, P.threads);
  MLAOPS_TRY(l.add(threads_total, &P.off_thread));
  if (P.aq.on) {
    // per thread: a chunk of KV rows of up to 16 heads dequantised to the query dtype and two
    // attention states per head (fia_antiquant_thread_bytes), or the in-place kernel's scratch; once
    // per call: per-channel scales / offsets as floats, [KVN, QD] and [KVN, VD] each
    const int64_t heads = std::min<int64_t>(KVN, 16);
    int64_t buf_bytes, state_bytes, all_threads, ch;
    MLAOPS_CHECK(product_ok({kFiaAntiquantChunk, heads, P.QD + P.VD, 2 * P.aq.split}, &buf_bytes) &&
                     product_ok({heads, fs.M, P.VD * P.aq.split + P.QD + 2, 8 * P.aq.split}, &state_bytes),
                 kParamInvalid,
                 "%s: workspace: FIA-17 workspace overflows int64 (INT8 chunk buffers of a thread); allowed <= 2^63 - 1 "
                 "bytes, got %lld heads, M %lld, D %lld, V_D %lld",
                 op, (long long)heads, (long long)fs.M, (long long)P.QD, (long long)P.VD);
    int64_t per_thread = fia_antiquant_thread_bytes(heads, fs.M, P.QD, P.VD, P.aq.split);
    for (const FiaPlan::Task& t : P.tasks)
      if (fam.value(t.row).kind == AttnKind::kDecodeI8)
        per_thread = std::max(per_thread, kernels::flash_decode_i8_scratch_bytes(t.n, P.G, P.QD, P.VD));
    for (const FiaPlan::PUnit& u : P.punits)
      if (fam.value(u.row).kind == AttnKind::kDecodeI8)
        per_thread = std::max(per_thread, kernels::flash_decode_i8_scratch_bytes(1, P.G, P.QD, P.VD));
    MLAOPS_CHECK(mul_ok(round_up(per_thread, kWorkspaceAlign), P.threads, &all_threads) &&
                     product_ok({KVN, P.QD + P.VD, 2, 4}, &ch),
                 kParamInvalid,
                 "%s: workspace: FIA-17 workspace overflows int64 (INT8 buffers x threads, channel parameters); allowed "
                 "<= 2^63 - 1 bytes, got %lld bytes x %d threads, KV_N %lld x (D %lld + V_D %lld) x 8",
                 op, (long long)per_thread, P.threads, (long long)KVN, (long long)P.QD, (long long)P.VD);
    P.aq_thread_bytes = round_up(per_thread, kWorkspaceAlign);
    MLAOPS_TRY(l.add(all_threads, &P.off_aq_thread));
    MLAOPS_TRY(l.add(ch, &P.off_aq_ch));
  }
  if (P.sink) MLAOPS_TRY(l.add(P.N * 4, &P.off_sink));
  if (P.post_quant) MLAOPS_TRY(l.add(2 * P.N * P.VD * 4, &P.off_pq));
  if (P.splits > 1 || P.pgroup) {  // the prefix work range: every item writes partials
    P.partial_o_floats = P.G * P.R * P.VD;
    P.partial_ml_floats = P.G * P.R;
    int64_t bytes;
    MLAOPS_CHECK(product_ok({n_items, P.splits, P.partial_o_floats + 2 * P.partial_ml_floats, 4}, &bytes), kParamInvalid,
                 "%s: workspace: FIA-17 workspace overflows int64 (KV-split partials); allowed <= 2^63 - 1 bytes, got "
                 "%lld items x %lld splits x %lld floats",
                 op, (long long)n_items, (long long)P.splits, (long long)(P.partial_o_floats + 2 * P.partial_ml_floats));
    MLAOPS_TRY(l.add(bytes, &P.off_partial));
  }
  if (P.pgroup) {  // the per-head counts and item lists of the merge (fia_run)
    P.pcount.assign(static_cast<size_t>(KVN), 0);
    P.hat.assign(static_cast<size_t>(KVN + 1), 0);
    for (const FiaPlan::PUnit& u : P.punits) P.pcount[static_cast<size_t>(u.h)] += P.psplits;
    for (const FiaPlan::Task& t : P.tasks)
      for (int64_t i = t.first; i < t.first + t.n; ++i) P.pcount[static_cast<size_t>(P.items[static_cast<size_t>(i)].h)] += P.splits;
    for (const FiaPlan::Item& w : P.items) ++P.hat[static_cast<size_t>(w.h + 1)];
    for (int64_t h = 0; h < KVN; ++h) P.hat[static_cast<size_t>(h + 1)] += P.hat[static_cast<size_t>(h)];
    P.hitems.assign(P.items.size(), 0);
    std::vector<int64_t> fill(P.hat.begin(), P.hat.end() - 1);
    for (int64_t i = 0; i < n_items; ++i) P.hitems[static_cast<size_t>(fill[static_cast<size_t>(P.items[static_cast<size_t>(i)].h)]++)] = i;
    MLAOPS_TRY(l.add(KVN * 8, &P.off_pcount));
  }
  if (P.pgroup) {  // the units' partials: [unit, psplit] x (o [G * rows, V_D], m, l)
    P.pp_o_floats = P.G * P.prow_rows * P.VD;
    P.pp_per = P.pp_o_floats + 2 * P.G * P.prow_rows;
    int64_t bytes;
    MLAOPS_CHECK(product_ok({n_units, P.psplits, P.pp_per, 4}, &bytes), kParamInvalid,
                 "%s: workspace: FIA-17 workspace overflows int64 (prefix units' partials); allowed <= 2^63 - 1 bytes, "
                 "got %lld units x %lld splits x %lld floats",
                 op, (long long)n_units, (long long)P.psplits, (long long)P.pp_per);
    MLAOPS_TRY(l.add(bytes, &P.off_ppartial));
  }
  P.workspace_bytes = n_items == 0 ? 0 : l.total();
  return kSuccess;
}

namespace {

std::string explain_call(const FiaPlan& P) {
  std::string s;
  if (P.noop) return "empty query or output: nothing to do\n";
  if (P.empty_kv) return "empty key / value: output 0, lse +inf\n";
  std::string refused;
  fia_path_choose(P, P.threads, &refused);
  s += std::string("path: ") + fia_path(P.path).name + (refused.empty() ? "" : " (skipped " + refused + ")") + "\n";
  if (P.mq.on) return s + fia_mla_quant_explain(P);
  s += fmt("shape: B %lld, N %lld, KV_N %lld (G %lld), ", (long long)P.B, (long long)P.N, (long long)P.KVN,
           (long long)P.G) +
       fmt("Q_S %lld, D %lld + rope %lld, V_D %lld, ", (long long)P.QS, (long long)P.QD, (long long)P.DR,
           (long long)P.VD) +
       (P.full_quant ? "INT8 full quantisation" : P.fp16 ? "FLOAT16" : "BF16") +
       (P.aq.on ? (P.aq.int4 ? ", INT4 key / value" : ", INT8 key / value") : "") +
       (P.paged ? fmt(", paged (blockSize %lld)", (long long)P.block_size) : "") +
       fmt(", sparseMode %lld", (long long)P.mode) + (P.explicit_mask ? " with a mask" : "") +
       (P.pse ? ", pseShift" : "") + (P.sink ? ", learnableSink" : "") +
       (P.post_quant ? (P.pq_channel ? ", post-quant INT8 per channel" : ", post-quant INT8 per tensor") : "") + (P.lse ? ", softmaxLse" : "") + "\n";
  s += fia_inner_precise_explain(P, 0);
  s += std::string("level ") + isa_name(P.isa) + fmt(", %lld threads; ", (long long)P.threads) +
       fmt("%lld work items of up to %lld query rows x %lld heads, %lld tasks, ", (long long)P.items.size(),
           (long long)P.R, (long long)P.G, (long long)P.tasks.size()) +
       fmt("%lld KV split(s)", (long long)P.splits) +
       (P.pgroup ? fmt(", shared prefix work range: %lld units (KV head x up to %lld query rows of all batches) x "
                       "%lld prefix chunk(s), merged per item",
                       (long long)P.punits.size(), (long long)P.prow_rows, (long long)P.psplits)
                 : "") +
       (P.copy_rows > 0 ? fmt(", K / V rows copied %lld positions at a time", (long long)P.copy_rows) : "") + "\n";
  if (P.full_quant)
    s += std::string("kernel: ") + kernels::flash_quant_family().info(P.fq_row).name +
         fmt(", online softmax over %lld-position KV chunks\n", (long long)kernels::kFqChunk);
  const auto& fam = kernels::attn_family();
  for (const FiaPlan::Kind& k : P.kinds) {
    const FiaPlan::Item& w = P.items[static_cast<size_t>(k.first)];
    std::string skipped;
    choose_item(P, item_shape(P, w.b, w.r0, w.rows), &skipped);
    s += fmt("kernel: %lld items of %lld query row(s): ", (long long)k.count, (long long)k.rows) +
         fam.info(k.row).name + (k.dequant ? " over dequantised 128-position chunks" : "") +
         (k.full ? "" : ", masked inside the KV range") + (skipped.empty() ? "" : " (skipped " + skipped + ")") + "\n";
  }
  for (size_t i = 0; i < P.punits.size(); ++i) {
    const FiaPlan::PUnit& u = P.punits[i];
    if (i > 0 && u.rows == P.punits[i - 1].rows) continue;
    s += fmt("kernel: prefix units of %lld query row(s): ", (long long)u.rows) + fam.info(u.row).name +
         (u.dequant ? " over dequantised 128-position chunks" : "") + "\n";
  }
  bool panel = false;
  for (const FiaPlan::Task& t : P.tasks)
    panel = panel || fam.value(t.row).kind == AttnKind::kPanel;
  for (const FiaPlan::PUnit& u : P.punits) panel = panel || fam.value(u.row).kind == AttnKind::kPanel;
  if (panel)
    s += std::string("panel path: ") + row_name(kernels::gemm_bf16_family(), P.isa) + ", " +
         row_name(kernels::gemm_f16_family(), P.isa) + ", " +
         row_name(kernels::softmax_family(), P.isa) + ", " + row_name(kernels::convert_family(), P.isa) + ", " +
         row_name(kernels::transpose16_family(), P.isa) + "\n";
  s += fmt("workspace: %lld bytes (per-thread scratch %lld", (long long)P.workspace_bytes, (long long)P.thread_bytes) +
       (P.aq.on ? fmt(", INT8 buffers %lld per thread", (long long)P.aq_thread_bytes) : "") +
       (P.splits > 1 ? ", KV-split partials" : "") + ")\n";
  return s;
}

}  // namespace

Status fia_plan(const FiaCall& call, const char* op, FiaPlan* plan) {
  MLAOPS_TRY(plan_call(call, op, plan));
  // the workspace's parts: the strided inputs' dense copies, then the plan's own
  WorkspaceLayout l(op, "FIA-17 workspace overflows int64 (the sum of its parts)");
  int64_t at = 0;
  MLAOPS_TRY(l.add(plan->stage.bytes, &at));
  return l.add(plan->workspace_bytes, &at);
}

int64_t fia_workspace_bytes(const FiaPlan& plan) { return plan.noop ? 0 : plan.stage.bytes + plan.workspace_bytes; }

std::string fia_explain(const FiaPlan& P) {
  const std::string staged = P.noop ? "" : P.stage.explain();
  return explain_call(P) + (staged.empty() ? "" : staged + "\n");
}

CallSignature fia_signature(const FiaParams& p) {
  CallSignature s;
  s.add("query", p.query);
  s.add("key count", static_cast<int64_t>(p.key.size()));
  for (const TensorView& t : p.key) s.add("key", t);
  s.add("value count", static_cast<int64_t>(p.value.size()));
  for (const TensorView& t : p.value) s.add("value", t);
  const struct {
    const char* name;
    const TensorView* t;
  } opt[] = {{"pseShiftOptional", p.pse_shift},
             {"attenMaskOptional", p.atten_mask},
             {"deqScale1Optional", p.deq_scale1},
             {"quantScale1Optional", p.quant_scale1},
             {"deqScale2Optional", p.deq_scale2},
             {"quantScale2Optional", p.quant_scale2},
             {"quantOffset2Optional", p.quant_offset2},
             {"antiquantScaleOptional", p.antiquant_scale},
             {"antiquantOffsetOptional", p.antiquant_offset},
             {"blockTableOptional", p.block_table},
             {"queryPaddingSizeOptional", p.query_padding_size},
             {"kvPaddingSizeOptional", p.kv_padding_size},
             {"keyAntiquantScaleOptional", p.key_antiquant_scale},
             {"keyAntiquantOffsetOptional", p.key_antiquant_offset},
             {"valueAntiquantScaleOptional", p.value_antiquant_scale},
             {"valueAntiquantOffsetOptional", p.value_antiquant_offset},
             {"keySharedPrefixOptional", p.key_shared_prefix},
             {"valueSharedPrefixOptional", p.value_shared_prefix},
             {"queryRopeOptional", p.query_rope},
             {"keyRopeOptional", p.key_rope},
             {"keyRopeAntiquantScaleOptional", p.key_rope_antiquant_scale},
             {"dequantScaleQueryOptional", p.dequant_scale_query},
             {"learnableSinkOptional", p.learnable_sink},
             {"attentionOut", &p.attention_out},
             {"softmaxLse", p.softmax_lse_flag ? p.softmax_lse : nullptr}};
  for (const auto& x : opt) s.add(x.name, x.t);
  s.add("actualSeqLengthsOptional", p.actual_seq_lengths);
  s.add("actualSeqLengthsKvOptional", p.actual_seq_lengths_kv);
  s.add("actualSharedPrefixLenOptional", p.actual_shared_prefix_len);
  s.add("numHeads", p.num_heads);
  s.add("scaleValue", p.scale_value);
  s.add("preTokens", p.pre_tokens);
  s.add("nextTokens", p.next_tokens);
  s.add("inputLayout", p.input_layout);
  s.add("numKeyValueHeads", p.num_key_value_heads);
  s.add("sparseMode", p.sparse_mode);
  s.add("innerPrecise", p.inner_precise);
  s.add("legacy_uniform_invalid_rows", static_cast<int64_t>(p.legacy_uniform_invalid_rows));
  s.add("blockSize", p.block_size);
  s.add("antiquantMode", p.antiquant_mode);
  s.add("softmaxLseFlag", static_cast<int64_t>(p.softmax_lse_flag));
  s.add("keyAntiquantMode", p.key_antiquant_mode);
  s.add("valueAntiquantMode", p.value_antiquant_mode);
  s.add("queryQuantMode", p.query_quant_mode);
  return s;
}

void fia_row_deltas(const FiaCall& c, int64_t b, int64_t* lo, int64_t* hi) {
  const __int128 big = static_cast<__int128>(1) << 62;
  const __int128 diag = static_cast<__int128>(c.act_kv[static_cast<size_t>(b)]) + c.prefix.len - c.act_q[static_cast<size_t>(b)];
  __int128 l = -big, h = big;
  if (!c.decode_rule) {
    switch (c.mode) {
      case 0:
        if (c.explicit_mask && !c.lp.on) {  // left padding: pre / next ignored
          l = -static_cast<__int128>(c.pre);
          h = c.next;
        }
        break;
      case 1: break;
      case 9: break;  // tree: every position; the tree covers the last S1 (FlashItem::mask_j0)
      case 2: h = 0; break;
      case 3: h = diag; break;
      default:
        l = diag - c.pre;
        h = diag + c.next;
        break;
    }
  }
  *lo = clamp62(l);
  *hi = clamp62(h);
}

}  // namespace mlaops
