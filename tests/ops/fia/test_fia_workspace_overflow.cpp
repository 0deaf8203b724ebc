// FIA-17 workspace sizes of FusedInferAttentionScoreV4 that overflow int64 (docs/ops/
// fused_infer_attention_score.md, rule FIA-17; the check sites of fia_plan in
// ops/fia/fia_plan.cpp and of the INT8 full quantisation plan in
// ops/fia/fia_full_quant.cpp). Only the C++ API reaches them: the aclnn entry
// points apply the vendor's ranges (FIA-19: D, V_D <= 512, N <= 256), under which every scratch
// size is a few MiB. The calls describe their large tensors by views of fake addresses (phase 1
// reads no tensor data; the pointer rules see aligned, non-null, non-overlapping ranges): each is
// rejected in phase 1 (workspace size and plan) with the site's words, and the calls that have
// real outputs also through the one-shot function with attentionOut and softmaxLse unchanged.
// A control next to each case shows that the same call with one size smaller is accepted.
//
// The sites that no input reaches (docs/ops/fia_coverage.md, tests/support/
// fia_site_exceptions.tsv): the INT8 chunk buffers (the per-thread scratch bound rejects first)
// and the two of MLA full quant (FIA-28 fixes D 512, D_R 64, <= 16 query tokens: a few hundred KiB
// per thread, below 2^51 bytes for any int thread count).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_full_quant_cases.h"
#include "ops/fia/fia_harness.h"
#include "testkit/fia_test_data.h"

namespace mlaops::testing {
namespace {

constexpr int64_t kOne = 1;
constexpr uint64_t kAddr = 1;

// A dense view at a fake address (phase 1 never dereferences it).
TensorView fake_view(uint64_t addr, DType dt, std::initializer_list<int64_t> dims) {
  return make_view(reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), dt, dims);
}

// Threads for the duration of a test (plan sizes only: no pool runs that many).
struct Threads {
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(0); }
};

// Phase 1 (workspace size, plan) rejects p with `words` (the site's tag) and `got` in the message.
void expect_phase1_rejected(const FiaParams& p, const std::string& words, const std::string& got) {
  uint64_t need = 0;
  EXPECT_EQ(fused_infer_attention_score_v4_workspace_size(p, &need), kParamInvalid);
  std::string msg = last_error_message();
  EXPECT_NE(msg.find("fused_infer_attention_score_v4: "), std::string::npos) << msg;
  EXPECT_NE(msg.find(words), std::string::npos) << msg;
  EXPECT_NE(msg.find(got), std::string::npos) << msg;
  OpPlan plan;
  EXPECT_EQ(fused_infer_attention_score_v4_plan(p, &plan), kParamInvalid);
  msg = last_error_message();
  EXPECT_NE(msg.find(words), std::string::npos) << msg;
}

// As expect_phase1_rejected, and the one-shot call leaves r's real attentionOut / softmaxLse unchanged.
void expect_rejected_unwritten(const FiaParams& p, FiaRun& r, const std::string& words, const std::string& got) {
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  expect_phase1_rejected(p, words, got);
  std::vector<uint64_t> ws(1 << 12);
  EXPECT_EQ(fused_infer_attention_score_v4(p, ws.data(), ws.size() * 8), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find(words), std::string::npos) << last_error_message();
  EXPECT_TRUE(r.out.storage == out0);
  EXPECT_TRUE(r.lse.storage == lse0);
}

Status phase1(const FiaParams& p, uint64_t* need) { return fused_infer_attention_score_v4_workspace_size(p, need); }

// A BSND decode call (B 1, Q_S 1, KV_S 1) with real value, attentionOut and softmaxLse of head dim
// 16; query and key get head dim d at fake addresses.
struct Decode {
  std::unique_ptr<FiaCaseData> data;
  std::unique_ptr<FiaRun> run;
  FiaParams p;
  Decode(int64_t n, int64_t kvn) {
    data = make_case_data(fia_case("ws", DType::kBFloat16, 1, n, kvn, 1, 1, 16, "BSND"));
    run = fia_test::build_fia_run(data->canon, data->cfg);
    p = run->params;
  }
  void head_dim(int64_t d) {
    p.query = fake_view(kAddr << 56, p.query.dtype, {1, 1, p.num_heads, d});
    p.key = {fake_view(kAddr << 60, p.key[0].dtype, {1, 1, kvn(), d})};
  }
  int64_t kvn() const { return p.num_key_value_heads == 0 ? p.num_heads : p.num_key_value_heads; }
};

// The bound of the per-thread scratch, checked before the kernels' scratch formulas are evaluated:
// a query row of D 2^58 (2^59 bytes) made the panel path's K panel size (D x 64 positions x 2)
// overflow int64 inside those formulas, before any check.
TEST(FiaWorkspaceOverflow, FIA17_PerThreadScratchBound) {
  Decode d(1, 1);
  ASSERT_EQ(run_fia_cpp(d.p), kSuccess) << last_error_message();
  d.head_dim(kOne << 58);
  expect_rejected_unwritten(d.p, *d.run, "query: FIA-17 per-thread scratch bound overflows int64",
                            "got M 1 (G x rows per item), D 288230376151711744, D_R 0, V_D 16");
  // control: D 2^20 (a 2 GiB query row) is planned
  d.head_dim(kOne << 20);
  uint64_t need = 0;
  EXPECT_EQ(phase1(d.p, &need), kSuccess) << last_error_message();
  EXPECT_GT(need, uint64_t{1} << 27);
}

// Per-thread scratch x threads: 2^33-byte scratch rows (D 2^26) and INT_MAX threads.
TEST(FiaWorkspaceOverflow, FIA17_ScratchTimesThreads) {
  Decode d(1, 1);
  d.head_dim(kOne << 26);
  {
    Threads t(INT_MAX);
    expect_rejected_unwritten(d.p, *d.run, "workspace: FIA-17 workspace overflows int64 (per-thread scratch x threads)",
                              "x 2147483647 threads");
  }
  Threads t(1);  // control
  uint64_t need = 0;
  EXPECT_EQ(phase1(d.p, &need), kSuccess) << last_error_message();
  EXPECT_GT(need, uint64_t{1} << 33);
}

// INT8 key / value: the dequantisation buffers of a thread (16 heads x 128 positions x D 2^20,
// 2^33 bytes) x INT_MAX threads overflow while the attention scratch (2^28 bytes) x threads fits.
TEST(FiaWorkspaceOverflow, FIA17_Int8BuffersTimesThreads) {
  Decode d(16, 16);
  const int64_t D = kOne << 20;
  std::vector<uint16_t> scale = {0x3F80};  // BF16 1.0: per-tensor key / value scales (modes 0)
  TensorView ks = make_view(scale.data(), DType::kBFloat16, {1}), vs = ks;
  d.p.query = fake_view(kAddr << 56, DType::kBFloat16, {1, 1, 16, D});
  d.p.key = {fake_view(kAddr << 58, DType::kInt8, {1, 1, 16, D})};
  d.p.value = {fake_view(kAddr << 59, DType::kInt8, {1, 1, 16, 16})};
  d.p.key_antiquant_scale = &ks;
  d.p.value_antiquant_scale = &vs;
  d.p.key_antiquant_mode = d.p.value_antiquant_mode = 0;
  {
    Threads t(INT_MAX);
    expect_rejected_unwritten(d.p, *d.run,
                              "workspace: FIA-17 workspace overflows int64 (INT8 buffers x threads, channel parameters)",
                              "x 2147483647 threads");
  }
  Threads t(1);  // control
  uint64_t need = 0;
  EXPECT_EQ(phase1(d.p, &need), kSuccess) << last_error_message();
  EXPECT_GT(need, uint64_t{1} << 33);
}

// The shared-prefix work range (ops/fia/fia_prefix.h, B >= 2, contiguous BSND): every work item
// writes a partial state, G x rows x (V_D + 2) floats, and every unit (KV head x flattened rows)
// one more. With G 2^20 and V_D 2^22 (each within the scratch bound) a partial is 2^44 bytes, so
// about 2^19 batches overflow int64; attentionOut then holds 2^62 bytes (of the same order as
// the partials), which no real buffer backs: every tensor is a fake view and only phase 1 runs.
struct PrefixCall {
  static constexpr int64_t kN = kOne << 20, kVD = kOne << 22, kD = 16;
  TensorView kp, vp;
  std::vector<int64_t> act_q;
  FiaParams p;
  PrefixCall(int64_t B, int64_t QS, bool empty_rows) {
    p.query = fake_view(kAddr << 48, DType::kBFloat16, {B, QS, kN, kD});
    p.key = {fake_view(kAddr << 50, DType::kBFloat16, {B, 1, 1, kD})};
    p.value = {fake_view(kAddr << 52, DType::kBFloat16, {B, 1, 1, kVD})};
    p.attention_out = fake_view(kAddr << 61, DType::kBFloat16, {B, QS, kN, kVD});
    kp = fake_view(kAddr << 54, DType::kBFloat16, {1, 1, 1, kD});
    vp = fake_view(kAddr << 55, DType::kBFloat16, {1, 1, 1, kVD});
    p.key_shared_prefix = &kp;
    p.value_shared_prefix = &vp;
    p.num_heads = kN;
    p.num_key_value_heads = 1;
    p.input_layout = "BSND";
    p.scale_value = 0.25;
    if (empty_rows) {  // every query row empty: no work item, only the prefix units
      act_q.assign(static_cast<size_t>(B), 0);
      p.actual_seq_lengths = &act_q;
    }
  }
};

// The items' partials: Q_S 1, B items of one row (2^44 bytes each).
TEST(FiaWorkspaceOverflow, FIA17_PrefixItemPartials) {
  Threads t(2);
  const int64_t B = (kOne << 19) + (kOne << 16);
  PrefixCall c(B, 1, false);
  expect_phase1_rejected(c.p, "workspace: FIA-17 workspace overflows int64 (KV-split partials)",
                         "got 589824 items x 1 splits x 4398048608256 floats");
  PrefixCall ok(1 << 17, 1, false);  // control: 2^17 items, 2^61 bytes of partials
  uint64_t need = 0;
  EXPECT_EQ(phase1(ok.p, &need), kSuccess) << last_error_message();
  EXPECT_GT(need, uint64_t{1} << 61);
}

// The units' partials: Q_S 2 with every query row empty (no item), B x 2 units of one row.
TEST(FiaWorkspaceOverflow, FIA17_PrefixUnitPartials) {
  Threads t(2);
  const int64_t B = (kOne << 18) + (kOne << 15);
  PrefixCall c(B, 2, true);
  expect_phase1_rejected(c.p, "workspace: FIA-17 workspace overflows int64 (prefix units' partials)",
                         "got 589824 units x 1 splits x 4398048608256 floats");
  PrefixCall ok(1 << 16, 2, true);  // control: 2^17 units
  uint64_t need = 0;
  EXPECT_EQ(phase1(ok.p, &need), kSuccess) << last_error_message();
}

// The sum of the parts (core/workspace.h): items' and units' partials each fit int64 (1.5 x 2^62
// bytes for Q_S 1 and 1.5 x 2^18 batches: every row is an item and a unit) but not together.
TEST(FiaWorkspaceOverflow, FIA17_SumOfTheParts) {
  Threads t(2);
  PrefixCall c((kOne << 18) + (kOne << 17), 1, false);
  expect_phase1_rejected(c.p, "workspace: FIA-17 workspace overflows int64 (the sum of its parts)",
                         "allowed <= 2^63 - 1 bytes in all, got ");
  PrefixCall ok((kOne << 18) - (kOne << 16), 1, false);  // control: 1.5 x 2^62 bytes in all
  uint64_t need = 0;
  EXPECT_EQ(phase1(ok.p, &need), kSuccess) << last_error_message();
  EXPECT_GT(need, (uint64_t{3} << 61) - 1);
}

// INT8 full quantisation (ops/fia/fia_full_quant.cpp): its own scratch bound (G x rows <= 2^40, D and
// V_D <= 2^20), then the per-thread scratch x threads. Q_S 2, BSND, per-tensor scales.
TEST(FiaWorkspaceOverflow, FIA17_FullQuantScratchBound) {
  auto d = make_data(fq("ws", 1, 1, 1, 2, 2, 32, "BSND"));
  d->bind(F16);
  ASSERT_EQ(run_fia_cpp(d->params), kSuccess) << last_error_message();
  FiaParams p = d->params;
  const int64_t D = kOne << 21;
  p.query = fake_view(kAddr << 56, I8, {1, 2, 1, D});
  p.key = {fake_view(kAddr << 58, I8, {1, 2, 1, D})};
  const std::vector<uint64_t> out0 = d->out.storage;
  expect_phase1_rejected(p, "query: FIA-17 workspace overflows int64 (INT8 full quantisation scratch bound)",
                         "got G 1 x rows 2, D 2097152, V_D 32");
  std::vector<uint64_t> ws(1 << 12);
  EXPECT_EQ(fused_infer_attention_score_v4(p, ws.data(), ws.size() * 8), kParamInvalid);
  EXPECT_TRUE(d->out.storage == out0);
  p.query = fake_view(kAddr << 56, I8, {1, 2, 1, D / 2});  // control: D 2^20
  p.key = {fake_view(kAddr << 58, I8, {1, 2, 1, D / 2})};
  uint64_t need = 0;
  EXPECT_EQ(phase1(p, &need), kSuccess) << last_error_message();
}

// G 4096 (rows of one item) x D 2^20: 2^32 bytes of INT8 query rows per thread, x INT_MAX threads.
TEST(FiaWorkspaceOverflow, FIA17_FullQuantScratchTimesThreads) {
  auto d = make_data(fq("ws", 1, 4096, 1, 2, 2, 32, "BSND"));
  d->bind(F16);
  FiaParams p = d->params;
  const int64_t D = kOne << 20;
  p.query = fake_view(kAddr << 56, I8, {1, 2, 4096, D});
  p.key = {fake_view(kAddr << 58, I8, {1, 2, 1, D})};
  const std::vector<uint64_t> out0 = d->out.storage;
  {
    Threads t(INT_MAX);
    expect_phase1_rejected(
        p, "workspace: FIA-17 workspace overflows int64 (INT8 full quantisation per-thread scratch x threads)",
        "x 2147483647 threads");
    std::vector<uint64_t> ws(1 << 12);
    EXPECT_EQ(fused_infer_attention_score_v4(p, ws.data(), ws.size() * 8), kParamInvalid);
    EXPECT_TRUE(d->out.storage == out0);
  }
  Threads t(1);  // control
  uint64_t need = 0;
  EXPECT_EQ(phase1(p, &need), kSuccess) << last_error_message();
  EXPECT_GT(need, uint64_t{1} << 32);
}

}  // namespace
}  // namespace mlaops::testing
