// The FIA path table (ops/fia/fia_paths.h, docs/architecture.md "FIA paths"): its rows in order,
// which row each kind of call takes and the reasons of the rows it skips (on validated calls
// built field by field), the sizes the prefix rows decide with (left padding: bounded by the
// lengths before the windows), and on planned calls the path the plan records and its explain
// names.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mlaops/plan.h"
#include "mlaops/runtime.h"
#include "ops/fia/fia_harness.h"
#include "ops/fia/fia_paths.h"
#include "ops/fia/fia.h"

namespace mlaops::testing {
namespace {

// A validated decode call: B 2, N 4, KV_N 2, Q_S 1, D 64, KV lengths 100.
FiaCall decode_call() {
  FiaCall c;
  c.in_l = c.out_l = FiaLayout::kBNSD;
  c.B = 2;
  c.N = 4;
  c.KVN = 2;
  c.G = 2;
  c.QS = 1;
  c.QD = c.VD = 64;
  c.kv_s = 100;
  c.act_q = {1, 1};
  c.act_kv = {100, 100};
  c.q_start = {0, 0};
  c.kv_start = {0, 0};
  c.q = {c.N * c.QS * c.QD, c.QS * c.QD, c.QD};
  c.decode_rule = true;
  return c;
}

FiaCall with_prefix(FiaCall c, int64_t len) {
  c.prefix.on = true;
  c.prefix.len = len;
  c.prefix.s = len;
  return c;
}

std::string chosen(const FiaCall& c, int threads, std::string* skipped = nullptr) {
  return fia_path(fia_path_choose(c, threads, skipped)).name;
}

std::string reason(const FiaCall& c, const char* path, int threads = 1) {
  for (int i = 0; i < fia_path_count(); ++i)
    if (std::string(fia_path(i).name) == path) {
      const char* w = fia_path(i).why_not(c, threads);
      return w == nullptr ? "" : w;
    }
  return "no such path";
}

TEST(FiaPaths, RowsInOrderTheLastRunsEveryCall) {
  const char* names[] = {"mla_quant", "full_quant", "prefix_group", "prefix_pair", "attention"};
  ASSERT_EQ(fia_path_count(), 5);
  for (int i = 0; i < fia_path_count(); ++i) {
    EXPECT_STREQ(fia_path(i).name, names[i]);
    EXPECT_TRUE(fia_path(i).why_not != nullptr && fia_path(i).plan != nullptr && fia_path(i).run != nullptr);
  }
  FiaCall c = with_prefix(decode_call(), 64);
  c.mq.on = true;
  c.full_quant = true;
  EXPECT_EQ(fia_path(fia_path_count() - 1).why_not(c, 1), nullptr);
  EXPECT_EQ(fia_path(fia_path_count() - 1).why_not(decode_call(), 64), nullptr);
}

TEST(FiaPaths, EachRowTakesItsCalls) {
  std::string skipped;
  EXPECT_EQ(chosen(decode_call(), 1, &skipped), "attention");
  EXPECT_EQ(skipped,
            "mla_quant: not MLA full quant (INT8 query and latent cache); full_quant: not INT8 full quantisation "
            "(INT8 query, key and value); prefix_group: no shared prefix; prefix_pair: no shared prefix");
  FiaCall mq = decode_call();
  mq.mq.on = true;
  EXPECT_EQ(chosen(mq, 1), "mla_quant");
  mq.full_quant = true;  // the first row that runs the call
  EXPECT_EQ(chosen(mq, 1), "mla_quant");
  FiaCall fq = decode_call();
  fq.full_quant = true;
  skipped.clear();
  EXPECT_EQ(chosen(fq, 1, &skipped), "full_quant");
  EXPECT_EQ(skipped, "mla_quant: not MLA full quant (INT8 query and latent cache)");
  EXPECT_EQ(chosen(with_prefix(decode_call(), 64), 1), "prefix_group");
  EXPECT_EQ(chosen(with_prefix(decode_call(), 64), 64), "prefix_group");
  // one batch: the prefix in two splits per item, while each item has one split per source
  FiaCall one = with_prefix(decode_call(), 512);
  one.B = 1;
  one.act_q = {1};
  one.act_kv = {512};
  skipped.clear();
  EXPECT_EQ(chosen(one, 1, &skipped), "prefix_pair");
  EXPECT_NE(skipped.find("prefix_group: one batch"), std::string::npos) << skipped;
  // 2 items, 8 threads, 1024 KV positions: more splits per source, the attention path's splits
  EXPECT_EQ(chosen(one, 8), "attention");
  EXPECT_EQ(reason(one, "prefix_pair", 8), "more than one KV split per source (fewer items than threads)");
  one.ip.fp16_softmax = true;  // the FP16 emulation runs items whole
  EXPECT_EQ(chosen(one, 8), "prefix_pair");
}

TEST(FiaPaths, PrefixGroupReasons) {
  FiaCall c = with_prefix(decode_call(), 0);
  EXPECT_EQ(reason(c, "prefix_group"), "an empty prefix (actualSharedPrefixLen 0)");
  c = with_prefix(decode_call(), 64);
  c.packed = true;
  EXPECT_EQ(reason(c, "prefix_group"), "a packed layout (TND / NTD)");
  c = with_prefix(decode_call(), 64);
  c.aq.on = true;
  c.aq.k.kind = FiaAntiquantParam::Kind::kRow;
  c.aq.v.kind = FiaAntiquantParam::Kind::kChannel;
  EXPECT_EQ(reason(c, "prefix_group"), "per-batch antiquant parameters");
  c.aq.k.kind = FiaAntiquantParam::Kind::kChannel;
  EXPECT_EQ(reason(c, "prefix_group"), "");
  // Q_S > 1: one stride for the batch and the row
  c = with_prefix(decode_call(), 64);
  c.QS = 4;
  c.decode_rule = false;
  c.act_q = {4, 4};
  c.q = {c.N * c.QS * c.QD, c.QS * c.QD, c.QD};  // BNSD: the batch stride is not Q_S rows
  EXPECT_EQ(reason(c, "prefix_group"), "the query's batch stride is not Q_S rows");
  c.q = {c.QS * c.N * c.QD, c.QD, c.N * c.QD};  // BSND
  EXPECT_EQ(reason(c, "prefix_group"), "");
  c.explicit_mask = true;  // sparse 0 with a mask: preTokens / nextTokens wide open
  c.pre = c.next = int64_t{1} << 40;
  c.mask_i = 200;
  c.mask_b = 4 * 200 + 1;
  EXPECT_EQ(reason(c, "prefix_group"), "the mask's batch stride is not Q_S rows");
  c.mask_b = 4 * 200;
  c.pse = true;
  c.pse_i = 200;
  c.pse_b = 0;
  EXPECT_EQ(reason(c, "prefix_group"), "pseShift's batch stride is not Q_S rows");
  c.pse_b = 4 * 200;
  EXPECT_EQ(reason(c, "prefix_group"), "");
  c.mode = 2;  // causal from the top left: the first rows see the first column only
  EXPECT_EQ(reason(c, "prefix_group"), "the sparse rule hides prefix columns from some rows");
}

// Left padding: a decode batch whose KV window starts before 0 has no own position; the sizes
// the plan splits with come from the lengths before the windows, so a plan fits every value.
TEST(FiaPaths, SizesBoundedByTheLengthsBeforeLeftPadding) {
  FiaCall c = decode_call();
  c.act_kv = {0, 19};
  EXPECT_EQ(fia_attn_sizes(c, 8, false).max_kv, 19);
  c.lp.on = c.lp.kv = true;
  c.lp.act_kv_in = {250, 19};
  const FiaAttnSizes z = fia_attn_sizes(c, 8, false);
  EXPECT_EQ(z.max_kv, 250);
  EXPECT_EQ(z.n_items, 4);
  EXPECT_EQ(z.R, 1);
  EXPECT_EQ(z.splits, 1);  // 250 / (2 x 64) positions
  c = with_prefix(c, 300);
  EXPECT_EQ(fia_attn_sizes(c, 8, false).max_kv, 550);
  EXPECT_EQ(fia_attn_sizes(c, 8, false).splits, 2);
  EXPECT_EQ(fia_attn_sizes(c, 8, true).split_kv, 250);  // the prefix work range splits the own rows
}

// MLA MTP (KV_N 1, G = N query rows per position): the draft tokens of a request are the rows of
// one work item while G x Q_S <= 128, so each KV block is read once for all of them
// (docs/ops/fused_infer_attention_score.md "Performance design"); N 128 runs a token per item.
TEST(FiaPaths, MtpDraftTokensOfARequestShareOneItem) {
  for (int64_t N : {16, 32, 64, 128})
    for (int64_t QS : {2, 4}) {
      FiaCall c = decode_call();
      c.B = 8;
      c.N = c.G = N;
      c.KVN = 1;
      c.QS = QS;
      c.act_q.assign(8, QS);
      c.act_kv.assign(8, 4096);
      c.q_start.assign(8, 0);
      c.kv_start.assign(8, 0);
      const FiaAttnSizes z = fia_attn_sizes(c, 2, false);
      const bool shared = N * QS <= 128;
      EXPECT_EQ(z.R, shared ? QS : 128 / N) << "N " << N << " Q_S " << QS;
      EXPECT_EQ(z.n_items, shared ? 8 : 8 * QS / (128 / N)) << "N " << N << " Q_S " << QS;
    }
}

// A planned call with its shared prefix (batch 1, Sp positions) bound.
struct Planned {
  std::unique_ptr<FiaRun> run, pre;
  std::vector<int64_t> len;
};

std::unique_ptr<Planned> planned(int64_t B, int64_t Skv, int64_t Sp) {
  auto r = std::make_unique<Planned>();
  const FiaCase c = fia_case("paths", DType::kBFloat16, B, 4, 2, 1, Skv, 64, "BNSD");
  auto d = make_case_data(c);
  r->run = fia_test::build_fia_run(d->canon, d->cfg);
  if (Sp > 0) {
    FiaRunConfig pcfg;
    pcfg.layout = "BNSD";
    pcfg.lse = false;
    r->pre = fia_test::build_fia_run(fia_test::make_canonical(DType::kBFloat16, 1, 4, 2, 1, Sp, 64, 64, 0, 5), pcfg);
    r->run->params.key_shared_prefix = &r->pre->params.key[0];
    r->run->params.value_shared_prefix = &r->pre->params.value[0];
    r->len = {Sp};
    r->run->params.actual_shared_prefix_len = &r->len;
  }
  return r;
}

std::string explain_at(const Planned& r, int threads) {
  set_num_threads(threads);
  OpPlan plan;
  const Status s = fused_infer_attention_score_v4_plan(r.run->params, &plan);
  set_num_threads(0);
  EXPECT_EQ(s, kSuccess) << last_error_message();
  return s == kSuccess ? plan.explain() : "";
}

TEST(FiaPaths, PlanRecordsAndExplainNamesThePath) {
  std::string e = explain_at(*planned(2, 100, 0), 1);
  EXPECT_EQ(e.rfind("path: attention (skipped mla_quant: not MLA full quant", 0), 0u) << e;
  e = explain_at(*planned(2, 100, 64), 1);
  EXPECT_EQ(e.rfind("path: prefix_group (skipped mla_quant: ", 0), 0u) << e;
  e = explain_at(*planned(1, 512, 512), 1);
  EXPECT_EQ(e.rfind("path: prefix_pair (skipped ", 0), 0u) << e;
  EXPECT_NE(e.find("prefix_group: one batch"), std::string::npos) << e;
  e = explain_at(*planned(1, 512, 512), 8);
  EXPECT_EQ(e.rfind("path: attention (skipped ", 0), 0u) << e;
  EXPECT_NE(e.find("prefix_pair: more than one KV split per source"), std::string::npos) << e;
}

}  // namespace
}  // namespace mlaops::testing
