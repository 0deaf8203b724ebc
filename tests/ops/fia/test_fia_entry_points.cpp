// The neighbouring entry points over FusedInferAttentionScoreV4 (docs/ops/fused_infer_attention_score.md
// "Earlier versions", docs/ops/incre_flash_attention.md, docs/ops/prompt_flash_attention.md), each
// through the C API:
//   * every entry point on cases it can express (BSH / BSND / BNSD / TND / BNSD_BSND layouts, GQA,
//     masks, paged KV through IFA V3 / V4, INT8 KV antiquant through IFA V3), compared with the
//     float64 reference and bitwise with a V4 call of the mapped arguments, under every kernel
//     configuration and 1 and 2 threads
//   * the forced values (seen through the run observer: the inner operator's parameters): IFA's
//     actualSeqLengths are the KV lengths, innerPrecise 1 and no pseShift in IFA V1/V2 and PFA
//     V1/V2 (a pseShift passed there changes nothing), sparseMode 0 in PFA V1
//   * the entry points' own rules: null required arguments (161001, nothing written), PFA's null
//     layout (161001) and empty attentionOut (success, workspace 0, no work), IFA's Q_S = 1 and
//     layouts, V1's INT32 key / value; every message names the entry point called
//   * the decode sparse-mode leniency (sparseMode 2/3/4 with an explicit (B, KV_S)-style mask at
//     Q_S = 1): the vendor's system-test cases 22, 23, 24 and the other mask shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "api/runtime/executor.h"
#include "ops/fia/fia_entry_call.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr int64_t kIntMax = 2147483647;

struct EntryCase {
  std::string name;
  Entry e;
  FiaCase c;
};

void PrintTo(const EntryCase& c, std::ostream* os) { *os << c.name; }

FiaCase base(DType dt, int64_t B, int64_t N, int64_t KVN, int64_t Sq, int64_t Skv, int64_t D, const char* layout,
             bool lse) {
  FiaCase c = fia_case("", dt, B, N, KVN, Sq, Skv, D, layout);
  c.cfg.lse = lse;
  return c;
}

std::vector<EntryCase> entry_cases() {
  constexpr DType BF = DType::kBFloat16, F16 = DType::kFloat16;
  std::vector<EntryCase> v;
  {  // FIA V1: BSH GQA prefill, right-down causal, lse
    FiaCase c = base(BF, 2, 4, 2, 5, 33, 32, "BSH", true);
    c.act_q = {5, 3};
    c.act_kv = {33, 20};
    sparse(c, 3, MaskForm::kTemplate);
    v.push_back({"FiaV1BshGqaSparse3", Entry::kFiaV1, c});
  }
  {  // FIA V2: BNSD decode over a paged BnBsH cache, lse
    FiaCase c = base(F16, 3, 8, 2, 1, 50, 64, "BNSD", true);
    c.act_kv = {50, 17, 1};
    paged(c, 3, 16);
    v.push_back({"FiaV2BnsdDecodePaged", Entry::kFiaV2, c});
  }
  {  // FIA V3: MLA decode (rope) over a paged BnNBsD cache, NBSD output
    FiaCase c = base(BF, 2, 16, 1, 1, 40, 512, "BNSD_NBSD", true);
    c.act_kv = {40, 17};
    paged(c, 4, 16);
    mla(c, 64);
    v.push_back({"FiaV3MlaDecodePaged", Entry::kFiaV3, c});
  }
  {  // FIA V4: BSND prefill with an explicit sparse-1 mask
    FiaCase c = base(F16, 2, 4, 2, 3, 10, 16, "BSND", true);
    c.act_q = {3, 2};
    sparse(c, 1, MaskForm::kRank3);
    v.push_back({"FiaV4BsndMask", Entry::kFiaV4, c});
  }
  {  // IFA V1: BSH GQA decode, KV lengths (one empty batch), (B, KV_S) mask
    FiaCase c = base(BF, 3, 8, 2, 1, 40, 64, "BSH", false);
    c.act_kv = {40, 7, 0};
    c.mask = MaskForm::kRank2Batch;
    v.push_back({"IfaV1BshGqaMask", Entry::kIfaV1, c});
  }
  {  // IFA V2: BSND MHA decode
    FiaCase c = base(F16, 2, 4, 4, 1, 30, 128, "BSND", false);
    c.act_kv = {30, 21};
    v.push_back({"IfaV2BsndMha", Entry::kIfaV2, c});
  }
  {  // IFA V3: BSH decode over a paged BnBsH cache with pseShift
    FiaCase c = base(BF, 2, 8, 2, 1, 70, 64, "BSH", false);
    c.act_kv = {70, 33};
    paged(c, 3, 16);
    c.pse = PseForm::kRandom;
    v.push_back({"IfaV3BshPagedPse", Entry::kIfaV3, c});
  }
  {  // IFA V4: BNSD GQA decode over a paged BnNBsD cache with a 4-D mask
    FiaCase c = base(F16, 2, 16, 2, 1, 100, 128, "BNSD", false);
    c.act_kv = {100, 64};
    paged(c, 4, 32);
    c.mask = MaskForm::kRank4;
    v.push_back({"IfaV4BnsdPagedMask", Entry::kIfaV4, c});
  }
  {  // PFA V1: BSH GQA prefill, query lengths, causal mask by sparse 0 + nextTokens 0
    FiaCase c = base(BF, 2, 4, 2, 9, 9, 32, "BSH", false);
    c.act_q = {9, 4};
    sparse(c, 0, MaskForm::kRank3, kIntMax, 0);
    v.push_back({"PfaV1BshGqaMask", Entry::kPfaV1, c});
  }
  {  // PFA V2: BNSD MQA, query and KV lengths, right-down causal
    FiaCase c = base(F16, 2, 4, 1, 7, 20, 64, "BNSD", false);
    c.act_q = {7, 5};
    c.act_kv = {20, 12};
    sparse(c, 3, MaskForm::kTemplate);
    v.push_back({"PfaV2BnsdSparse3", Entry::kPfaV2, c});
  }
  {  // PFA V3: BSND with pseShift and a band (sparse 4), innerPrecise 0
    FiaCase c = base(BF, 2, 4, 2, 6, 16, 32, "BSND", false);
    c.pse = PseForm::kBroadcast;
    sparse(c, 4, MaskForm::kTemplate, 3, 1);
    v.push_back({"PfaV3BsndPseBand", Entry::kPfaV3, c});
  }
  {  // PFA V3: TND GQA prefill, right-down causal
    FiaCase c = base(BF, 2, 4, 2, 8, 12, 64, "TND", false);
    c.act_q = {8, 3};
    c.act_kv = {12, 5};
    sparse(c, 3, MaskForm::kTemplate);
    v.push_back({"PfaV3TndSparse3", Entry::kPfaV3, c});
  }
  {  // PFA V3: BNSD in, BSND out
    FiaCase c = base(F16, 1, 2, 2, 17, 17, 16, "BNSD_BSND", false);
    v.push_back({"PfaV3BnsdBsnd", Entry::kPfaV3, c});
  }
  return v;
}

// The entry point on a fresh run of the case and V4 on the mapped arguments: outputs (and lse)
// bitwise equal, and the entry point's output within the tolerance of the reference.
void check_entry(const EntryCase& ec, const FiaCaseData& data, const FiaRun& ref, const std::string& where) {
  auto a = fia_test::build_fia_run(data.canon, data.cfg);
  auto b = fia_test::build_fia_run(data.canon, data.cfg);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(entry_call(ec.e, acl_args_of(*a)), ACLNN_SUCCESS) << where << ": " << aclGetRecentErrMsg();
  ASSERT_EQ(fia_aclnn_call(mapped_v4(ec.e, acl_args_of(*b))), ACLNN_SUCCESS) << where << ": " << aclGetRecentErrMsg();
  EXPECT_TRUE(a->out.storage == b->out.storage) << where << ": attentionOut differs from the mapped V4 call";
  EXPECT_TRUE(a->lse.storage == b->lse.storage) << where << ": softmaxLse differs from the mapped V4 call";
  const FiaCompare r = compare_fia(*a, ref, ec.c.dtype, ec.c.cfg.lse);
  EXPECT_TRUE(r.ok) << where << ": " << r.str();
}

class FiaEntryPoints : public ::testing::TestWithParam<EntryCase> {};

TEST_P(FiaEntryPoints, MatchReferenceAndV4Bitwise) {
  const EntryCase& ec = GetParam();
  auto data = make_case_data(ec.c);
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  int runs = 0;
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    for (int t : {1, 2}) {
      set_num_threads(t);
      check_entry(ec, *data, *ref, fia_kernel_config_name(ec.name, k) + " threads=" + std::to_string(t));
      ++runs;
    }
  }
  set_num_threads(0);
  set_kernel_override("");
  reset_isa();
  EXPECT_GT(runs, 0);
}

TEST_P(FiaEntryPoints, OnAStream) {
  const EntryCase& ec = GetParam();
  auto data = make_case_data(ec.c);
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  auto a = fia_test::build_fia_run(data->canon, data->cfg);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  const aclnnStatus s = entry_call(ec.e, acl_args_of(*a), stream);
  aclrtDestroyStream(stream);
  ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const FiaCompare r = compare_fia(*a, *ref, ec.c.dtype, ec.c.cfg.lse);
  EXPECT_TRUE(r.ok) << r.str();
}

INSTANTIATE_TEST_SUITE_P(All, FiaEntryPoints, ::testing::ValuesIn(entry_cases()),
                         [](const ::testing::TestParamInfo<EntryCase>& i) { return i.param.name; });

// ---- INT8 KV antiquant through IFA V3 (combined antiquantScale / antiquantOffset, mode 0) ----

TEST(FiaEntryPointsAntiquant, IfaV3Int8PagedAndContiguous) {
  for (bool paged_kv : {false, true}) {
    SCOPED_TRACE(paged_kv ? "paged BnBsH" : "contiguous BSH");
    const int64_t B = 2, N = 4, KVN = 2, D = 32, L = 37, bs = 32, H = KVN * D;  // INT8 paged: bs % 32 (FIA-19)
    const std::vector<int64_t> akv = {37, 20};
    std::mt19937 g(5);
    std::uniform_real_distribution<double> u(-1, 1);
    fia_test::HostTensor q(DType::kFloat16, {B, 1, N * D});
    for (int64_t i = 0; i < q.numel(); ++i) q.set_flat(i, u(g));
    const int64_t blocks_per = (L + bs - 1) / bs, block_num = B * blocks_per + 1;
    // The same logical rows [B, L, H] for both caches; the paged one scatters them into its blocks.
    fia_test::HostTensor kl(DType::kInt8, {B, L, H}), vl(DType::kInt8, {B, L, H}), bt(DType::kInt32, {B, blocks_per});
    for (fia_test::HostTensor* t : {&kl, &vl})
      for (int64_t i = 0; i < t->numel(); ++i) t->set_flat(i, std::round(127 * u(g)));
    for (int64_t i = 0; i < bt.numel(); ++i) bt.set_flat(i, static_cast<double>((i * 5 + 1) % block_num));
    fia_test::HostTensor k = kl, v = vl;
    if (paged_kv) {
      k = fia_test::HostTensor(DType::kInt8, {block_num, bs, H});
      v = fia_test::HostTensor(DType::kInt8, {block_num, bs, H});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < L; ++t)
          for (int64_t h = 0; h < H; ++h) {
            const int64_t blk = static_cast<int64_t>(bt.get({b, t / bs}));
            k.set({blk, t % bs, h}, kl.get({b, t, h}));
            v.set({blk, t % bs, h}, vl.get({b, t, h}));
          }
    }
    fia_test::HostTensor scale(DType::kFloat16, {2, KVN, 1, D}), offset(DType::kFloat16, {2, KVN, 1, D});
    for (int64_t i = 0; i < scale.numel(); ++i) {
      scale.set_flat(i, (1.0 + 0.5 * u(g)) / 127.0);
      offset.set_flat(i, std::round(4 * u(g)));
    }
    auto make_args = [&](fia_test::HostTensor* out) {
      FiaAclArgs a;
      a.in[0] = q.view();
      a.in[1] = k.view();
      a.in[2] = v.view();
      a.passed[0] = a.passed[1] = a.passed[2] = true;
      a.in[12] = scale.view();
      a.in[13] = offset.view();
      a.passed[12] = a.passed[13] = true;
      if (paged_kv) {
        a.in[14] = bt.view();
        a.passed[14] = true;
        a.block_size = bs;
      }
      a.has_asl_kv = true;
      a.asl_kv = akv;
      a.num_heads = N;
      a.kvn = KVN;
      a.scale = 1.0 / std::sqrt(static_cast<double>(D));
      a.layout = "BSH";
      a.inner = 1;
      a.out = out->view();
      return a;
    };
    fia_test::HostTensor out_a(DType::kFloat16, {B, 1, N * D}, fia_test::kNaN), out_b = out_a;
    fia_test::HostTensor out_ref(DType::kFloat64, {B, 1, N * D});
    ASSERT_EQ(entry_call(Entry::kIfaV3, make_args(&out_a)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(fia_aclnn_call(mapped_v4(Entry::kIfaV3, make_args(&out_b))), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_TRUE(out_a.storage == out_b.storage);
    // The reference on the same arguments.
    FiaParams p;
    const TensorView sv = scale.view(), ov = offset.view(), btv = bt.view();
    p.query = q.view();
    p.key = {k.view()};
    p.value = {v.view()};
    p.antiquant_scale = &sv;
    p.antiquant_offset = &ov;
    if (paged_kv) {
      p.block_table = &btv;
      p.block_size = bs;
    }
    p.actual_seq_lengths_kv = &akv;
    p.num_heads = N;
    p.num_key_value_heads = KVN;
    p.scale_value = 1.0 / std::sqrt(static_cast<double>(D));
    p.input_layout = "BSH";
    p.inner_precise = 1;
    p.attention_out = out_ref.view();
    ASSERT_EQ(fused_infer_attention_score_v4_ref(p), kSuccess) << last_error_message();
    const Tolerance t = fia_out_tolerance(DType::kFloat16);
    const Stats st = compare(out_a.view(), out_ref.view(), t);
    EXPECT_TRUE(within(st, t, false)) << st.str();
  }
}

// ---- forced values, seen through the run observer ----

struct Seen {
  std::string op;
  bool has_pse = false, has_asl_q = false, has_asl_kv = false, lse = false;
  std::vector<int64_t> asl_kv;
  int64_t inner = -1, sparse = -1, block_size = -1, pre = 0, next = 0, antiquant_mode = -1;
};

class Capture : public api::RunObserver {
 public:
  void before(const std::string& op, const api::CallParams& params) override {
    const FiaParams* p = std::get_if<FiaParams>(&params);
    if (p == nullptr) return;
    seen.op = op;
    seen.has_pse = p->pse_shift != nullptr;
    seen.has_asl_q = p->actual_seq_lengths != nullptr;
    seen.has_asl_kv = p->actual_seq_lengths_kv != nullptr;
    if (seen.has_asl_kv) seen.asl_kv = *p->actual_seq_lengths_kv;
    seen.lse = p->softmax_lse_flag;
    seen.inner = p->inner_precise;
    seen.sparse = p->sparse_mode;
    seen.block_size = p->block_size;
    seen.pre = p->pre_tokens;
    seen.next = p->next_tokens;
    seen.antiquant_mode = p->antiquant_mode;
  }
  void after(const std::string&, const api::CallParams&, int) override {}
  Seen seen;
};

// Installs an observer for one scope (removed however the scope ends).
class ObserverScope {
 public:
  explicit ObserverScope(api::RunObserver* o) { api::set_run_observer(o); }
  ~ObserverScope() { api::set_run_observer(nullptr); }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;
};

// A decode case every entry point can run (B 2, Q_S 1, BSND, KV lengths, a pseShift of the right
// shape); PFA runs it as a one-token prefill.
struct ForcedCase {
  std::unique_ptr<FiaCaseData> data;
  std::unique_ptr<FiaRun> run;
};
ForcedCase forced_case() {
  FiaCase c = base(DType::kBFloat16, 2, 4, 2, 1, 24, 32, "BSND", false);
  c.act_kv = {24, 11};
  c.pse = PseForm::kRandom;
  ForcedCase f;
  f.data = make_case_data(c);
  f.run = fia_test::build_fia_run(f.data->canon, f.data->cfg);
  return f;
}

TEST(FiaEntryPointsForced, InnerParametersPerEntryPoint) {
  ForcedCase f = forced_case();
  Capture cap;
  const ObserverScope scope(&cap);
  for (Entry e : all_entries()) {
    SCOPED_TRACE(entry_name(e));
    FiaAclArgs a = acl_args_of(*f.run);
    a.inner = 0;
    a.pre = 5;
    a.next = 3;
    a.has_asl_q = true;  // a query length too (IFA has none to pass)
    a.asl_q = {1, 1};
    cap.seen = Seen();
    ASSERT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const Seen& s = cap.seen;
    EXPECT_EQ(s.op, entry_name(e));
    const bool old = e == Entry::kIfaV1 || e == Entry::kIfaV2 || e == Entry::kPfaV1 || e == Entry::kPfaV2;
    EXPECT_EQ(s.has_pse, !old) << "pseShift";
    EXPECT_EQ(s.inner, old ? 1 : 0) << "innerPrecise";
    EXPECT_FALSE(s.lse);
    if (is_ifa(e)) {
      EXPECT_FALSE(s.has_asl_q);
      ASSERT_TRUE(s.has_asl_kv);
      EXPECT_EQ(s.asl_kv, (std::vector<int64_t>{24, 11})) << "IFA actualSeqLengths are the KV lengths";
      EXPECT_EQ(s.pre, kIntMax);
      EXPECT_EQ(s.next, kIntMax);
      EXPECT_EQ(s.sparse, 0);
      EXPECT_EQ(s.block_size, 0);
    } else {
      EXPECT_TRUE(s.has_asl_q);
      EXPECT_EQ(s.has_asl_kv, e != Entry::kPfaV1) << "actualSeqLengthsKv";
      EXPECT_EQ(s.pre, 5);
      EXPECT_EQ(s.next, 3);
    }
    EXPECT_EQ(s.antiquant_mode, 0);
  }
}

// IFA V1/V2 and PFA V1/V2 ignore pseShift: the output with one passed (even one of a shape no
// rule accepts) is bitwise the output without.
TEST(FiaEntryPointsForced, PseShiftIgnoredByOldVersions) {
  ForcedCase f = forced_case();
  fia_test::HostTensor bad_pse(DType::kFloat32, {3});
  for (Entry e : {Entry::kIfaV1, Entry::kIfaV2, Entry::kPfaV1, Entry::kPfaV2, Entry::kIfaV3, Entry::kPfaV3}) {
    SCOPED_TRACE(entry_name(e));
    auto with = fia_test::build_fia_run(f.data->canon, f.data->cfg);
    auto without = fia_test::build_fia_run(f.data->canon, f.data->cfg);
    FiaAclArgs a = acl_args_of(*with), b = acl_args_of(*without);
    b.passed[3] = false;
    ASSERT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(entry_call(e, b), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    const bool ignored = e != Entry::kIfaV3 && e != Entry::kPfaV3;
    EXPECT_EQ(with->out.storage == without->out.storage, ignored);
    if (ignored) {
      a.in[3] = bad_pse.view();
      EXPECT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    }
  }
}

// ---- the entry points' own rules ----

struct Rejection {
  aclnnStatus code;
  const char* param;
  const char* rule;
};

// A rejected call: the code, a message naming the entry point, the parameter and the rule, and
// every byte of attentionOut (NaN canary) unchanged.
void expect_entry_rejected(Entry e, FiaRun& r, Rejection x, const std::function<void(FiaAclArgs&)>& mutate) {
  const std::vector<uint64_t> out0 = r.out.storage;
  FiaAclArgs a = acl_args_of(r);
  mutate(a);
  const aclnnStatus s = entry_call(e, a);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_EQ(s, x.code) << msg;
  EXPECT_EQ(msg.rfind(std::string(entry_name(e)) + ":", 0), 0u) << "message does not start with the entry point: " << msg;
  EXPECT_NE(msg.find(x.param), std::string::npos) << "message does not name " << x.param << ": " << msg;
  EXPECT_NE(msg.find(x.rule), std::string::npos) << "message does not name " << x.rule << ": " << msg;
  EXPECT_TRUE(r.out.storage == out0) << "attentionOut changed by a rejected call";
}

TEST(FiaEntryPointsErrors, NullRequiredArguments) {
  ForcedCase f = forced_case();
  for (Entry e : all_entries()) {
    SCOPED_TRACE(entry_name(e));
    constexpr aclnnStatus kNull = ACLNN_ERR_PARAM_NULLPTR;
    expect_entry_rejected(e, *f.run, {kNull, "query", "FIA-01"}, [](FiaAclArgs& a) { a.passed[0] = false; });
    expect_entry_rejected(e, *f.run, {kNull, "key", "FIA-01"}, [](FiaAclArgs& a) { a.key_list_null = true; });
    expect_entry_rejected(e, *f.run, {kNull, "value", "FIA-01"}, [](FiaAclArgs& a) { a.value_list_null = true; });
    expect_entry_rejected(e, *f.run, {kNull, "attentionOut", "FIA-01"}, [](FiaAclArgs& a) { a.out_passed = false; });
    expect_entry_rejected(e, *f.run, {kNull, "workspaceSize", "FIA-01"},
                          [](FiaAclArgs& a) { a.null_workspace_size = true; });
  }
}

TEST(FiaEntryPointsErrors, NullLayout) {
  ForcedCase f = forced_case();
  for (Entry e : all_entries()) {
    SCOPED_TRACE(entry_name(e));
    if (is_pfa(e)) {
      expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_NULLPTR, "inputLayout", "PFA-01"},
                            [](FiaAclArgs& a) { a.null_layout = true; });
    } else {  // FIA, IFA: the op definition's default "BSH"
      FiaCase c = base(DType::kBFloat16, 2, 4, 2, 1, 24, 32, "BSH", false);
      auto d = make_case_data(c);
      auto with = fia_test::build_fia_run(d->canon, d->cfg), without = fia_test::build_fia_run(d->canon, d->cfg);
      FiaAclArgs a = acl_args_of(*without);
      a.null_layout = true;
      ASSERT_EQ(entry_call(e, acl_args_of(*with)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_EQ(entry_call(e, a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_TRUE(with->out.storage == without->out.storage);
    }
  }
}

TEST(FiaEntryPointsErrors, PfaEmptyAttentionOutIsANoOp) {
  ForcedCase f = forced_case();
  fia_test::HostTensor empty_out(DType::kBFloat16, {2, 0, 4, 32});
  for (Entry e : {Entry::kPfaV1, Entry::kPfaV2, Entry::kPfaV3}) {
    SCOPED_TRACE(entry_name(e));
    FiaAclArgs a = acl_args_of(*f.run);
    a.out = empty_out.view();
    a.in[0].dtype = DType::kInt32;  // no other rule is applied
    a.num_heads = -1;
    uint64_t ws = 7;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(entry_phase1(e, a, &ws, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(ws, 0u);
    EXPECT_EQ(entry_phase2(e, nullptr, 0, ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
  // FIA and IFA apply their rules first (the INT32 query is rejected).
  FiaAclArgs a = acl_args_of(*f.run);
  a.out = empty_out.view();
  a.in[0].dtype = DType::kInt32;
  EXPECT_EQ(entry_call(Entry::kIfaV4, a), ACLNN_ERR_PARAM_INVALID);
}

TEST(FiaEntryPointsErrors, IfaQuerySequenceAndLayouts) {
  ForcedCase f = forced_case();
  auto d = make_case_data(base(DType::kBFloat16, 2, 4, 2, 3, 24, 32, "BSND", false));
  auto prefill = fia_test::build_fia_run(d->canon, d->cfg);
  for (Entry e : {Entry::kIfaV1, Entry::kIfaV2, Entry::kIfaV3, Entry::kIfaV4}) {
    SCOPED_TRACE(entry_name(e));
    expect_entry_rejected(e, *prefill, {ACLNN_ERR_PARAM_INVALID, "query", "IFA-01"}, [](FiaAclArgs&) {});
    for (const char* l : {"TND", "BNSD_BSND", "BSH_NBSD"})
      expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "inputLayout", "IFA-02"},
                            [&](FiaAclArgs& a) { a.layout = l; });
  }
  // The same prefill is a valid FIA / PFA call.
  EXPECT_EQ(entry_call(Entry::kPfaV3, acl_args_of(*prefill)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST(FiaEntryPointsErrors, PfaLayouts) {
  ForcedCase f = forced_case();
  for (Entry e : {Entry::kPfaV1, Entry::kPfaV2, Entry::kPfaV3}) {
    SCOPED_TRACE(entry_name(e));
    for (const char* l : {"SH", "NSD"}) {
      expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "inputLayout", "PFA-01"},
                            [&](FiaAclArgs& a) { a.layout = l; });
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not supported yet"), std::string::npos);
    }
    for (const char* l : {"BSND_NBSD", "TND_NTD", "BSH_BNSD", "XYZ"})
      expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "inputLayout", "PFA-01"},
                            [&](FiaAclArgs& a) { a.layout = l; });
  }
}

TEST(FiaEntryPointsErrors, Int32KeyValue) {
  ForcedCase f = forced_case();
  // V1 (and IFA V1/V2, PFA) do not read INT32 as packed INT4: a dtype they do not take.
  for (Entry e : {Entry::kFiaV1, Entry::kIfaV1, Entry::kIfaV2, Entry::kPfaV1, Entry::kPfaV2, Entry::kPfaV3}) {
    SCOPED_TRACE(entry_name(e));
    expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "key", "FIA-03 entry-point dtype"}, [](FiaAclArgs& a) {
      a.in[1].dtype = DType::kInt32;
      a.in[2].dtype = DType::kInt32;
    });
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("INT32"), std::string::npos);
  }
  // V2..V4 (and IFA V3/V4) read it as packed INT4 (FIA-33, tests/ops/fia/test_fia_antiquant_int4.cpp):
  // the words' last dim is D / 8, so this key's 32 words per head read as head dim 256.
  for (Entry e : {Entry::kFiaV2, Entry::kFiaV3, Entry::kFiaV4, Entry::kIfaV3, Entry::kIfaV4}) {
    SCOPED_TRACE(entry_name(e));
    expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "key", "FIA-08 head dim must equal the query head dim"}, [](FiaAclArgs& a) {
      a.in[1].dtype = DType::kInt32;
      a.in[2].dtype = DType::kInt32;
    });
  }
}

TEST(FiaEntryPointsErrors, FiaRulesNameTheEntryPoint) {
  ForcedCase f = forced_case();
  for (Entry e : all_entries()) {
    SCOPED_TRACE(entry_name(e));
    expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "numHeads", "FIA-06 must be a multiple of numKeyValueHeads"},
                          [](FiaAclArgs& a) { a.num_heads = 3; });
    // Post-quant inputs of the versions that have them reach FIA-26 (quantScale2 with a non-INT8
    // attentionOut).
    if (e == Entry::kIfaV2 || e == Entry::kPfaV2 || e == Entry::kFiaV1)
      expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "quantScale2", "FIA-26 dtype is INT8 exactly when quantScale2 is given"}, [](FiaAclArgs& a) {
        static float one = 1.0f;
        a.in[10] = make_view(&one, DType::kFloat32, {1});
        a.passed[10] = true;
      });
    if (e == Entry::kIfaV4)
      expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "kvPaddingSize", "FIA-40 dtype"}, [](FiaAclArgs& a) {
        static int32_t pad = 0;  // left padding sizes are INT64
        a.in[16] = make_view(&pad, DType::kInt32, {1});
        a.passed[16] = true;
      });
  }
}

// The V4 rules' messages name the entry point's own parameters: IFA's actualSeqLengths (V4's
// actualSeqLengthsKvOptional), V1's pseShift (V4's pseShiftOptional).
TEST(FiaEntryPointsErrors, MessagesNameTheEntryPointsParameters) {
  ForcedCase f = forced_case();
  for (Entry e : {Entry::kIfaV1, Entry::kIfaV2, Entry::kIfaV3, Entry::kIfaV4}) {
    SCOPED_TRACE(entry_name(e));
    expect_entry_rejected(e, *f.run, {ACLNN_ERR_PARAM_INVALID, "actualSeqLengths", "FIA-"}, [](FiaAclArgs& a) {
      a.has_asl_kv = true;
      a.asl_kv.assign(8, int64_t{1} << 40);
    });
    EXPECT_EQ(std::string(aclGetRecentErrMsg()).find("actualSeqLengthsKv"), std::string::npos) << aclGetRecentErrMsg();
  }
  expect_entry_rejected(Entry::kFiaV1, *f.run, {ACLNN_ERR_PARAM_INVALID, "pseShift", "FIA-"}, [](FiaAclArgs& a) {
    static float pse = 0.0f;
    a.in[3] = make_view(&pse, DType::kFloat32, {1, 1, 1, 1});
    a.passed[3] = true;
  });
  EXPECT_EQ(std::string(aclGetRecentErrMsg()).find("pseShiftOptional"), std::string::npos) << aclGetRecentErrMsg();
}

// ---- decode sparse-mode leniency ----

// Decode without rope with sparseMode 2/3/4 and an explicit mask that is not the 2048 template:
// the sparse mode is ignored and the mask applied, as with sparseMode 0.
fia_test::HostTensor decode_mask(int64_t mb, int64_t cols, int rank, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  fia_test::HostTensor m = fia_test::make_mask3(DType::kBool, mb, 1, cols, [&](int64_t, int64_t, int64_t) {
    return u(g) < 0.4;
  });
  if (rank == 2) return m.reshaped({mb, cols});
  if (rank == 4) return m.reshaped({mb, 1, 1, cols});
  return m;
}

void check_decode_leniency(const FiaCase& c0, const fia_test::HostTensor& mask, int64_t mode) {
  FiaCase c = c0;
  auto d = make_case_data(c);
  d->mask = mask;
  d->cfg.mask = &d->mask;
  d->cfg.sparse_mode = mode;
  auto ref = reference_run(*d);
  ASSERT_TRUE(ref);
  FiaRunConfig zero = d->cfg;
  zero.sparse_mode = 0;
  {  // the reference ignores the sparse mode there too
    FiaCaseData d0;
    d0.canon = d->canon;
    d0.mask = d->mask;
    d0.cfg = zero;
    d0.cfg.mask = &d0.mask;
    auto ref0 = reference_run(d0);
    ASSERT_TRUE(ref0);
    EXPECT_TRUE(ref0->out.storage == ref->out.storage);
  }
  for (const FiaKernelConfig& k : fia_kernel_configs()) {
    if (!set_isa(k.isa) || !set_kernel_override(k.override_rows)) continue;
    auto a = fia_test::build_fia_run(d->canon, d->cfg);
    auto b = fia_test::build_fia_run(d->canon, zero);
    ASSERT_EQ(fia_aclnn_call(acl_args_of(*a)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(fia_aclnn_call(acl_args_of(*b)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_TRUE(a->out.storage == b->out.storage) << isa_name(k.isa) << ": differs from sparseMode 0 with the mask";
    const FiaCompare r = compare_fia(*a, *ref, c.dtype, c.cfg.lse);
    EXPECT_TRUE(r.ok) << isa_name(k.isa) << ": " << r.str();
  }
  set_kernel_override("");
  reset_isa();
}

// The vendor's system-test cases 22, 23, 24: query fp16 [1, 1, 128], key / value [1, 4096, 128],
// mask bool [1, 4096], BSH, numHeads 1, sparseMode 2 / 3 / 4, innerPrecise 0.
TEST(FiaDecodeSparseLeniency, VendorCases22To24) {
  FiaCase c = base(DType::kFloat16, 1, 1, 1, 1, 4096, 128, "BSH", false);
  c.cfg.scale = 1.0;
  const fia_test::HostTensor mask = decode_mask(1, 4096, 2, 22);
  for (int64_t mode : {2, 3, 4}) {
    SCOPED_TRACE("sparseMode " + std::to_string(mode));
    check_decode_leniency(c, mask, mode);
  }
  // The mask is applied (the output differs from the unmasked one).
  auto d = make_case_data(c);
  d->mask = mask;
  d->cfg.mask = &d->mask;
  d->cfg.sparse_mode = 3;
  auto masked = fia_test::build_fia_run(d->canon, d->cfg);
  FiaRunConfig none = d->cfg;
  none.mask = nullptr;
  none.sparse_mode = 0;
  auto plain = fia_test::build_fia_run(d->canon, none);
  ASSERT_EQ(fia_aclnn_call(acl_args_of(*masked)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  ASSERT_EQ(fia_aclnn_call(acl_args_of(*plain)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_FALSE(masked->out.storage == plain->out.storage);
}

TEST(FiaDecodeSparseLeniency, MaskShapesGqaLengthsAndEntryPoints) {
  FiaCase c = base(DType::kBFloat16, 3, 8, 2, 1, 40, 64, "BNSD", true);
  c.act_kv = {40, 13, 1};
  for (int rank : {2, 3, 4})
    for (int64_t mb : {int64_t{3}, int64_t{1}})
      for (int64_t mode : {2, 3, 4}) {
        SCOPED_TRACE("rank " + std::to_string(rank) + " batch " + std::to_string(mb) + " sparseMode " +
                     std::to_string(mode));
        check_decode_leniency(c, decode_mask(mb, 45, rank, static_cast<uint32_t>(rank * 10 + mb)), mode);
      }
  // Through FIA V1..V3 (which pass sparseMode on) as well.
  auto d = make_case_data(c);
  d->mask = decode_mask(3, 40, 2, 9);
  d->cfg.mask = &d->mask;
  d->cfg.sparse_mode = 4;
  auto ref = reference_run(*d);
  ASSERT_TRUE(ref);
  for (Entry e : {Entry::kFiaV1, Entry::kFiaV2, Entry::kFiaV3}) {
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    ASSERT_EQ(entry_call(e, acl_args_of(*r)), ACLNN_SUCCESS) << entry_name(e) << ": " << aclGetRecentErrMsg();
    EXPECT_TRUE(compare_fia(*r, *ref, c.dtype, true).ok) << entry_name(e);
  }
}

TEST(FiaDecodeSparseLeniency, StillRejectedOutsideDecode) {
  // Q_S > 1: sparse 2/3/4 need the template.
  FiaCase c = base(DType::kBFloat16, 2, 4, 2, 3, 20, 32, "BSND", false);
  auto d = make_case_data(c);
  d->mask = decode_mask(2, 20, 2, 3);
  d->cfg.mask = &d->mask;
  d->cfg.sparse_mode = 3;
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  const std::vector<uint64_t> out0 = r->out.storage;
  EXPECT_EQ(fia_aclnn_call(acl_args_of(*r)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("FIA-14"), std::string::npos) << aclGetRecentErrMsg();
  EXPECT_TRUE(r->out.storage == out0);
  // MLA decode (rope): not the decode rule, the template is required.
  FiaCase m = base(DType::kBFloat16, 2, 16, 1, 1, 40, 512, "BNSD_NBSD", false);
  paged(m, 4, 16);
  mla(m, 64);
  auto dm = make_case_data(m);
  dm->mask = decode_mask(2, 48, 2, 4);
  dm->cfg.mask = &dm->mask;
  dm->cfg.sparse_mode = 3;
  auto rm = fia_test::build_fia_run(dm->canon, dm->cfg);
  EXPECT_EQ(fia_aclnn_call(acl_args_of(*rm)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("FIA-14"), std::string::npos) << aclGetRecentErrMsg();
  // A decode mask too short for the KV lengths.
  FiaCase s = base(DType::kBFloat16, 2, 4, 2, 1, 20, 32, "BSND", false);
  auto ds = make_case_data(s);
  ds->mask = decode_mask(2, 19, 2, 5);
  ds->cfg.mask = &ds->mask;
  ds->cfg.sparse_mode = 2;
  auto rs = fia_test::build_fia_run(ds->canon, ds->cfg);
  EXPECT_EQ(fia_aclnn_call(acl_args_of(*rs)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("FIA-14"), std::string::npos) << aclGetRecentErrMsg();
}

}  // namespace
}  // namespace mlaops::testing
