// The vendor's rules of FusedInferAttentionScoreV4 found missing by the spec audit, as data
// (ops/fia/fia_exclusions.h; docs/ops/fia_rule_audit.md names the spec clause of every row).
#include "ops/fia/fia_exclusions.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "core/checked_math.h"
#include "core/error.h"
#include "ops/common/check_util.h"
#include "ops/fia/fia.h"

namespace mlaops {
namespace {

using check::shape_str;
using std::to_string;

constexpr int64_t kMaxPrefillS = 20971520;  // Q_S / KV_S of a prefill (the vendor's 20M)

// The longest query of a batch: Q_S, or the largest actual length of a packed layout.
int64_t max_q(const FiaCall& c) {
  if (!c.packed) return c.QS;
  int64_t m = 0;
  for (int64_t x : c.act_q) m = std::max(m, x);
  return m;
}
bool prefill(const FiaCall& c) { return max_q(c) > 1; }
bool half(const FiaParams& p) { return p.query.dtype == DType::kFloat16 || p.query.dtype == DType::kBFloat16; }
bool mla512(const FiaCall& c) { return c.rope && c.QD == 512; }
bool int8_kv(const FiaParams& p) { return p.key[0].dtype == DType::kInt8; }
bool nz_cache(const FiaParams& p, const FiaCall& c) { return c.paged && p.key[0].rank == 5; }
// sparseMode 0 with attenMask, or 1 (the full mask of the caller).
bool explicit01(const FiaParams& p) { return p.atten_mask != nullptr && (p.sparse_mode == 0 || p.sparse_mode == 1); }
// An explicit 2-D mask (not the tree mask).
bool mask_2d(const FiaParams& p, const FiaCall& c) {
  return c.explicit_mask && !c.tree && p.atten_mask != nullptr && p.atten_mask->rank == 2;
}
bool layout_in(const FiaParams& p, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (p.input_layout == n) return true;
  return false;
}
bool pow2_upto_128(int64_t n) { return n >= 1 && n <= 128 && (n & (n - 1)) == 0; }

std::string s_layout(const FiaParams& p, const FiaCall&) { return "inputLayout \"" + p.input_layout + "\""; }
std::string s_dims(const FiaParams&, const FiaCall& c) {
  return "Q_D " + to_string(c.QD) + ", V_D " + to_string(c.VD);
}
std::string s_sparse(const FiaParams& p, const FiaCall&) {
  return "sparseMode " + to_string(p.sparse_mode) +
         (p.atten_mask != nullptr ? " with attenMask " + shape_str(*p.atten_mask) : " without attenMask");
}
std::string s_tokens(const FiaParams& p, const FiaCall&) {
  return "preTokens " + to_string(p.pre_tokens) + ", nextTokens " + to_string(p.next_tokens);
}
std::string s_block(const FiaParams& p, const FiaCall& c) {
  return "blockSize " + to_string(p.block_size) + " (Q_D " + to_string(c.QD) + ", V_D " + to_string(c.VD) +
         ", Q_S " + to_string(max_q(c)) + ")";
}
std::string s_mask(const FiaParams& p, const FiaCall&) {
  return "attenMask " + (p.atten_mask != nullptr ? shape_str(*p.atten_mask) : std::string("null"));
}

// TND / NTD sparse 4, per batch: preTokens >= -actQ[b], nextTokens >= -actKV[b], and their sum >= 0.
int64_t band_bad_batch(const FiaParams& p, const FiaCall& c) {
  for (int64_t b = 0; b < c.B; ++b) {
    const size_t i = static_cast<size_t>(b);
    if (p.pre_tokens < -c.act_q[i] || p.next_tokens < -c.act_kv[i]) return b;
  }
  return -1;
}

// sparseMode 0 with a mask, the vendor's rule per batch (S1 = actQ[b], S2 = actKV[b] + the prefix;
// batches without query rows read nothing): nextTokens < 0 needs preTokens >= |nextTokens| and
// |nextTokens| < S2; preTokens < 0 needs nextTokens >= |preTokens| and |preTokens| < S1. The sum
// saturates (both INT64_MAX: the whole band; both INT64_MIN: refused).
int64_t band_bad_batch_mode0(const FiaParams& p, const FiaCall& c) {
  const int64_t pre = p.pre_tokens, next = p.next_tokens;
  for (int64_t b = 0; b < c.B; ++b) {
    const size_t i = static_cast<size_t>(b);
    const int64_t s1 = c.act_q[i], s2 = c.act_kv[i] + c.prefix.len;
    if (s1 == 0) continue;
    if ((pre < 0 || next < 0) && sat_add(pre, next) < 0) return b;
    if ((next < 0 && next <= -s2) || (pre < 0 && pre <= -s1)) return b;
  }
  return -1;
}

const std::vector<FiaVendorRule> kRules = {
    // ---- FIA-19: the vendor's shape limits (§3.2 items 3 and 10, §2.9) ----
    {"FIA-19", "query", "a prefill (Q_S > 1)", [](const FiaParams&, const FiaCall& c) { return prefill(c); },
     "a query sequence extent above 20971520",
     [](const FiaParams&, const FiaCall& c) { return c.QS > kMaxPrefillS; }, "Q_S (TND / NTD: T) <= 20971520",
     [](const FiaParams&, const FiaCall& c) { return "Q_S " + to_string(c.QS); }},
    {"FIA-19", "key", "a prefill (Q_S > 1)", [](const FiaParams&, const FiaCall& c) { return prefill(c); },
     "a key sequence extent above 20971520",
     [](const FiaParams&, const FiaCall& c) { return c.kv_s > kMaxPrefillS; },
     "KV_S (paged: blockTable width * blockSize; TND / NTD: T_kv) <= 20971520",
     [](const FiaParams&, const FiaCall& c) { return "KV_S " + to_string(c.kv_s); }},
    {"FIA-19", "query", "a FLOAT16 / BF16 prefill (Q_S > 1) with a head dim not a multiple of 16",
     [](const FiaParams& p, const FiaCall& c) { return half(p) && prefill(c) && (c.QD % 16 != 0 || c.VD % 16 != 0); },
     "a batch above 128", [](const FiaParams&, const FiaCall& c) { return c.B > 128; }, "B <= 128",
     [](const FiaParams&, const FiaCall& c) {
       return "B " + to_string(c.B) + " (Q_D " + to_string(c.QD) + ", V_D " + to_string(c.VD) + ")";
     }},
    {"FIA-19", "blockSize", "a paged INT8 key / value (KV antiquant, BnBsH / BnNBsD)",
     [](const FiaParams& p, const FiaCall& c) { return c.paged && int8_kv(p) && !nz_cache(p, c) && !c.mq.on; },
     "a blockSize not a multiple of 32", [](const FiaParams& p, const FiaCall&) { return p.block_size % 32 != 0; },
     "a multiple of 32", s_block},
    {"FIA-19", "blockSize", "a paged FLOAT16 / BF16 prefill (Q_S > 1) without rope, head dims other than 64 / 128",
     [](const FiaParams& p, const FiaCall& c) {
       return c.paged && !c.rope && p.key[0].dtype == p.query.dtype && prefill(c) &&
              !(c.QD == c.VD && (c.QD == 64 || c.QD == 128));
     },
     "a blockSize not a multiple of 128", [](const FiaParams& p, const FiaCall&) { return p.block_size % 128 != 0; },
     "a multiple of 128 in [128, 1024]", s_block},
    {"FIA-19", "blockSize", "a paged FLOAT16 / BF16 decode (Q_S = 1) without rope, head dims other than 64 / 128",
     [](const FiaParams& p, const FiaCall& c) {
       return c.paged && !c.rope && p.key[0].dtype == p.query.dtype && !prefill(c) &&
              !(c.QD == c.VD && (c.QD == 64 || c.QD == 128));
     },
     "a blockSize above 512", [](const FiaParams& p, const FiaCall&) { return p.block_size > 512; },
     "a multiple of 16 in [16, 512]", s_block},
    {"FIA-19", "key", "a paged BnBsH cache (rank 3)",
     [](const FiaParams& p, const FiaCall& c) { return c.paged && p.key[0].rank == 3; },
     "KV_N * D above 65535",
     [](const FiaParams&, const FiaCall& c) { return c.KVN * c.QD > 65535 || c.KVN * c.VD > 65535; },
     "KV_N * D <= 65535 (key and value)",
     [](const FiaParams&, const FiaCall& c) {
       return "KV_N * D " + to_string(c.KVN * c.QD) + ", KV_N * V_D " + to_string(c.KVN * c.VD);
     }},
    {"FIA-19", "numHeads", "MLA with D 512", [](const FiaParams&, const FiaCall& c) { return mla512(c); },
     "a head count outside {1, 2, 4, ..., 128}", [](const FiaParams&, const FiaCall& c) { return !pow2_upto_128(c.N); },
     "numHeads in {1, 2, 4, 8, 16, 32, 64, 128}",
     [](const FiaParams&, const FiaCall& c) { return "numHeads " + to_string(c.N); }},
    {"FIA-19", "numKeyValueHeads", "MLA with D 512", [](const FiaParams&, const FiaCall& c) { return mla512(c); },
     "more than one key / value head", [](const FiaParams&, const FiaCall& c) { return c.KVN != 1; },
     "numKeyValueHeads 1", [](const FiaParams&, const FiaCall& c) { return "numKeyValueHeads " + to_string(c.KVN); }},
    {"FIA-19", "attenMaskOptional", "paged attention with an explicit mask",
     [](const FiaParams&, const FiaCall& c) { return c.paged && c.explicit_mask && !c.tree; },
     "a mask narrower than blockTable width * blockSize",
     [](const FiaParams& p, const FiaCall& c) { return p.atten_mask->dim(-1) < c.kv_s; },
     "last dim >= blockTable width * blockSize", [](const FiaParams& p, const FiaCall& c) {
       return s_mask(p, c) + " (blockTable width * blockSize " + to_string(c.kv_s) + ")";
     }},
    {"FIA-19", "pseShiftOptional", "paged attention with pseShift",
     [](const FiaParams&, const FiaCall& c) { return c.paged && c.pse; },
     "a pseShift narrower than blockTable width * blockSize",
     [](const FiaParams& p, const FiaCall& c) { return p.pse_shift->dims[3] < c.kv_s; },
     "dim 3 >= blockTable width * blockSize", [](const FiaParams& p, const FiaCall& c) {
       return "pseShift " + shape_str(*p.pse_shift) + " (blockTable width * blockSize " + to_string(c.kv_s) + ")";
     }},
    // ---- FIA-21: KV antiquant (§2.11.2) ----
    {"FIA-21", "query", "INT8 key / value with key 0 (per-channel) + value 1 (per-token) scales",
     [](const FiaParams& p, const FiaCall& c) {
       return c.aq.on && int8_kv(p) && !nz_cache(p, c) && p.key_antiquant_scale != nullptr &&
              p.key_antiquant_mode == 0 && p.value_antiquant_mode == 1;
     },
     "a query other than FLOAT16", [](const FiaParams& p, const FiaCall&) { return p.query.dtype != DType::kFloat16; },
     "FLOAT16", [](const FiaParams& p, const FiaCall&) { return std::string(dtype_name(p.query.dtype)); }},
    // ---- FIA-24: pairs of features (§3.4, §4) ----
    {"FIA-24", "attenMaskOptional", "MLA with D 512", [](const FiaParams&, const FiaCall& c) { return mla512(c); },
     "an explicit mask (sparseMode 0 with attenMask)",
     [](const FiaParams& p, const FiaCall&) { return p.sparse_mode == 0 && p.atten_mask != nullptr; },
     "sparseMode 0 without attenMask, 3, 4 or 9", s_sparse},
    {"FIA-24", "attenMaskOptional", "a TND / NTD layout",
     [](const FiaParams&, const FiaCall& c) { return c.packed; },
     "an explicit mask (sparseMode 0 with attenMask, or 1)",
     [](const FiaParams& p, const FiaCall&) { return explicit01(p); }, "sparseMode 0 without attenMask, 3, 4 or 9",
     s_sparse},
    {"FIA-24", "sparseMode", "a TND / NTD layout", [](const FiaParams&, const FiaCall& c) { return c.packed; },
     "sparseMode 2", [](const FiaParams& p, const FiaCall&) { return p.sparse_mode == 2; },
     "sparseMode 0 without attenMask, 3, 4 or 9", s_sparse},
    {"FIA-24", "quantScale2Optional", "KV antiquant with Q_S > 1",
     [](const FiaParams&, const FiaCall& c) { return c.aq.on && prefill(c); }, "INT8 output (post-quant)",
     [](const FiaParams& p, const FiaCall&) { return p.quant_scale2 != nullptr; }, "no quantScale2 (BF16 output)",
     [](const FiaParams&, const FiaCall&) { return std::string("quantScale2 given (INT8 attentionOut)"); }},
    {"FIA-24", "preTokens/nextTokens", "INT8 output (post-quant) with sparseMode 4",
     [](const FiaParams& p, const FiaCall&) { return p.quant_scale2 != nullptr && p.sparse_mode == 4; },
     "a negative preTokens / nextTokens",
     [](const FiaParams& p, const FiaCall&) { return p.pre_tokens < 0 || p.next_tokens < 0; },
     "preTokens >= 0 and nextTokens >= 0", s_tokens},
    {"FIA-24", "attenMaskOptional", "a 2-D mask", mask_2d,
     "queryRope / keyRope (MLA)", [](const FiaParams&, const FiaCall& c) { return c.rope; },
     "a rank-3 / rank-4 mask, or no rope", s_mask},
    {"FIA-24", "attenMaskOptional", "a 2-D mask", mask_2d,
     "a value head dim different from the query's", [](const FiaParams&, const FiaCall& c) { return c.QD != c.VD; },
     "a rank-3 / rank-4 mask, or Q_D == V_D",
     [](const FiaParams& p, const FiaCall& c) { return s_mask(p, c) + ", " + s_dims(p, c); }},
    {"FIA-24", "attenMaskOptional", "a 2-D mask", mask_2d,
     "an inputLayout other than BSH, BSND, BNSD, BNSD_BSND",
     [](const FiaParams& p, const FiaCall&) { return !layout_in(p, {"BSH", "BSND", "BNSD", "BNSD_BSND"}); },
     "a rank-3 / rank-4 mask, or inputLayout in {BSH, BSND, BNSD, BNSD_BSND}",
     [](const FiaParams& p, const FiaCall& c) { return s_mask(p, c) + ", " + s_layout(p, c); }},
    // ---- FIA-28: MLA full quant (§2.14, §2.6.3) ----
    {"FIA-28", "sparseMode", "MLA full quant in BSH / BSND with Q_S = 1",
     [](const FiaParams&, const FiaCall& c) { return c.mq.on && !c.packed && c.QS == 1; }, "a sparseMode other than 0",
     [](const FiaParams& p, const FiaCall&) { return p.sparse_mode != 0; }, "sparseMode 0 without attenMask",
     s_sparse},
    {"FIA-28", "sparseMode", "MLA full quant in BSH / BSND with Q_S > 1",
     [](const FiaParams&, const FiaCall& c) { return c.mq.on && !c.packed && c.QS > 1; }, "sparseMode 0",
     [](const FiaParams& p, const FiaCall&) { return p.sparse_mode == 0; }, "sparseMode 3 or 9", s_sparse},
    // ---- FIA-56: layouts (§2.1, §2.9, §2.16, §2.17) ----
    {"FIA-56", "inputLayout", "MLA with D 512", [](const FiaParams&, const FiaCall& c) { return mla512(c); },
     "this layout",
     [](const FiaParams& p, const FiaCall&) {
       return !layout_in(p, {"BSH", "BSND", "BNSD", "BNSD_NBSD", "BSND_NBSD", "BSH_NBSD", "TND", "TND_NTD"});
     },
     "{BSH, BSND, BNSD, BNSD_NBSD, BSND_NBSD, BSH_NBSD, TND, TND_NTD}", s_layout},
    {"FIA-56", "query", "MLA (queryRope / keyRope) with a head dim other than 512",
     [](const FiaParams&, const FiaCall& c) { return c.rope && c.QD != 512; }, "head dims other than 128 / 128",
     [](const FiaParams&, const FiaCall& c) { return c.QD != 128 || c.VD != 128; },
     "Q_D 512 (decode) or Q_D = V_D = 128 (prefill)", s_dims},
    {"FIA-56", "inputLayout", "MLA with D 128 (prefill)",
     [](const FiaParams&, const FiaCall& c) { return c.rope && c.QD == 128; }, "this layout",
     [](const FiaParams& p, const FiaCall&) {
       return !layout_in(p, {"BSH", "BSND", "BNSD", "TND", "NTD", "BSH_BNSD", "BSND_BNSD", "BNSD_BSND", "NTD_TND"});
     },
     "{BSH, BSND, BNSD, TND, NTD, BSH_BNSD, BSND_BNSD, BNSD_BSND, NTD_TND}", s_layout},
    {"FIA-56", "inputLayout", "the output layouts BSH_BNSD / BSND_BNSD",
     [](const FiaParams& p, const FiaCall&) { return layout_in(p, {"BSH_BNSD", "BSND_BNSD"}); },
     "these head dims",
     [](const FiaParams&, const FiaCall& c) {
       return !((c.QD == c.VD && (c.QD == 64 || c.QD == 128)) || (c.QD == 192 && c.VD == 128));
     },
     "(Q_D, V_D) in {(64, 64), (128, 128), (192, 128)}", s_dims},
    {"FIA-56", "inputLayout", "the output layout BNSD_BSND",
     [](const FiaParams& p, const FiaCall&) { return p.input_layout == "BNSD_BSND"; }, "a decode (Q_S = 1)",
     [](const FiaParams&, const FiaCall& c) { return c.QS == 1; }, "Q_S > 1",
     [](const FiaParams&, const FiaCall& c) { return "Q_S " + to_string(c.QS); }},
    {"FIA-56", "key", "paged attention with a BSH / BSND query",
     [](const FiaParams&, const FiaCall& c) {
       return c.paged && (c.in_l == FiaLayout::kBSH || c.in_l == FiaLayout::kBSND);
     },
     "a BnNBsD cache (rank 4)", [](const FiaParams& p, const FiaCall&) { return p.key[0].rank == 4; },
     "a BnBsH cache (rank 3) or the NZ cache (rank 5)",
     [](const FiaParams& p, const FiaCall&) { return "key " + shape_str(p.key[0]); }},
    {"FIA-56", "learnableSinkOptional", "learnableSink", [](const FiaParams&, const FiaCall& c) { return c.sink; },
     "this layout", [](const FiaParams& p, const FiaCall&) { return !layout_in(p, {"TND", "NTD_TND"}); },
     "inputLayout TND or NTD_TND", s_layout},
    // ---- FIA-57: sparse modes and tokens (§2.5, §2.3, §2.16) ----
    {"FIA-57", "preTokens/nextTokens", "sparseMode 0 with attenMask (not the decode rule, no left padding)",
     [](const FiaParams& p, const FiaCall& c) {
       return p.sparse_mode == 0 && p.atten_mask != nullptr && !c.decode_rule && p.query_padding_size == nullptr &&
              p.kv_padding_size == nullptr;
     },
     "a band the vendor's rule refuses",
     [](const FiaParams& p, const FiaCall& c) { return band_bad_batch_mode0(p, c) >= 0; },
     "preTokens + nextTokens >= 0; a negative nextTokens above -S2, a negative preTokens above -S1 (S1 = actQ, "
     "S2 = actKV + prefix, per batch)",
     [](const FiaParams& p, const FiaCall& c) {
       const int64_t b = std::max<int64_t>(band_bad_batch_mode0(p, c), 0);
       const size_t i = static_cast<size_t>(b);
       return s_tokens(p, c) + " (batch " + to_string(b) + ": actQ " + to_string(c.act_q[i]) + ", actKV " +
              to_string(c.act_kv[i] + c.prefix.len) + ")";
     }},
    {"FIA-57", "preTokens/nextTokens", "sparseMode 4 in a TND / NTD layout without rope",
     [](const FiaParams& p, const FiaCall& c) { return c.packed && !c.rope && p.sparse_mode == 4; },
     "a band outside the batch's lengths",
     [](const FiaParams& p, const FiaCall& c) {
       return sat_add(p.pre_tokens, p.next_tokens) < 0 || band_bad_batch(p, c) >= 0;
     },
     "preTokens >= -actQ[b], nextTokens >= -actKV[b], preTokens + nextTokens >= 0",
     [](const FiaParams& p, const FiaCall& c) {
       const int64_t b = std::max<int64_t>(band_bad_batch(p, c), 0);
       const size_t i = static_cast<size_t>(b);
       return s_tokens(p, c) + " (batch " + to_string(b) + ": actQ " + to_string(c.act_q[i]) + ", actKV " +
              to_string(c.act_kv[i]) + ")";
     }},
    {"FIA-57", "actualSeqLengthsOptional", "MLA with D 512 in a BSH / BSND / BNSD layout",
     [](const FiaParams&, const FiaCall& c) { return mla512(c) && !c.packed; }, "actualSeqLengths",
     [](const FiaParams& p, const FiaCall&) { return p.actual_seq_lengths != nullptr; },
     "null (actualSeqLengths only with TND)", [](const FiaParams& p, const FiaCall&) {
       return "an array of " + to_string(p.actual_seq_lengths->size());
     }},
};

}  // namespace

const std::vector<FiaVendorRule>& fia_vendor_rules() { return kRules; }

Status fia_check_vendor_rules(const FiaParams& p, const char* op, const FiaCall& c) {
  for (const FiaVendorRule& r : kRules) {
    if (!r.in_context(p, c) || !r.violates(p, c)) continue;
    return fail(kParamInvalid,
                "%s: %s: %s %s excludes %s (the vendor's rule; the C++ API computes the call); allowed %s, got %s", op,
                r.param, r.rule, r.context, r.what, r.allowed, r.got(p, c).c_str());
  }
  return kSuccess;
}

}  // namespace mlaops
