// The vendor's shape-dependent limits of FusedInferAttentionScoreV4 (rule FIA-19, aclnn layer only;
// docs/ops/fused_infer_attention_score.md): each call below is computed by the C++ API (and
// matches the float64 reference) and rejected by aclnnFusedInferAttentionScoreV4 with 161002, a
// message naming the parameter and FIA-19, and every byte of attentionOut and softmaxLse
// unchanged:
//   * the head dim of a prefill (Q_S > 1) in BSH / BSND / BNSD: a multiple of 16 (query and value)
//   * innerPrecise 0 / 1 for a decode without rope
//   * the decode KV_S <= 262144
//   * MLA with D 512: sparse modes 0, 3, 4, 9
//   * Q_D != V_D without rope: sparse modes 0, 2, 3, and no softmaxLse
// and the edges that stay accepted (D 16 prefill, innerPrecise 1 decode, KV_S 262144, TND D 1).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {
namespace {

constexpr DType BF = DType::kBFloat16;

struct Limit {
  std::string name;
  FiaCase c;
  std::function<void(FiaParams&)> tweak;  // attributes the case config does not carry
  const char* param = "";                  // nullptr: accepted by aclnn too
  const char* words = "";                  // part of the expected message
};

std::vector<Limit> limits() {
  std::vector<Limit> v;
  FiaCase c = fia_case("prefill_d24", BF, 2, 4, 2, 4, 30, 24, "BSND");
  v.push_back({"prefill_head_dim_24", c, {}, "query", "head dim with Q_S > 1"});
  c = fia_case("prefill_vd24", BF, 1, 2, 2, 3, 20, 32, "BNSD");
  c.Dv = 24;
  c.cfg.lse = false;
  v.push_back({"prefill_value_head_dim_24", c, {}, "value", "head dim with Q_S > 1"});
  c = fia_case("prefill_d16", BF, 1, 2, 1, 5, 20, 16, "BSH");
  v.push_back({"prefill_head_dim_16_accepted", c, {}, nullptr, ""});
  c = fia_case("tnd_d1", DType::kFloat16, 2, 2, 2, 3, 7, 1, "TND");
  c.act_q = {3, 1};
  c.act_kv = {7, 4};
  v.push_back({"tnd_head_dim_1_accepted", c, {}, nullptr, ""});
  c = fia_case("decode_ip2", BF, 2, 4, 2, 1, 30, 32, "BSND");
  v.push_back({"decode_inner_precise_2", c, [](FiaParams& p) { p.inner_precise = 2; }, "innerPrecise",
               "with Q_S = 1"});
  c = fia_case("decode_ip3", BF, 2, 4, 2, 1, 30, 32, "BNSD");
  v.push_back({"decode_inner_precise_3", c, [](FiaParams& p) { p.inner_precise = 3; }, "innerPrecise",
               "with Q_S = 1"});
  c = fia_case("decode_ip1", BF, 2, 4, 2, 1, 30, 32, "BNSD");
  v.push_back({"decode_inner_precise_1_accepted", c, [](FiaParams& p) { p.inner_precise = 1; }, nullptr, ""});
  c = fia_case("decode_long", BF, 1, 1, 1, 1, 262145, 16, "BSH");
  c.cfg.lse = false;
  v.push_back({"decode_kv_s_262145", c, {}, "key", "decode KV_S"});
  c = fia_case("decode_long_ok", BF, 1, 1, 1, 1, 262144, 16, "BSH");
  c.cfg.lse = false;
  v.push_back({"decode_kv_s_262144_accepted", c, {}, nullptr, ""});
  c = fia_case("mla_sparse2", BF, 2, 8, 1, 2, 40, 512, "BSND");
  mla(c, 64);
  paged(c, 3, 16);  // BSND: a BnBsH cache (FIA-56)
  sparse(c, 2, MaskForm::kTemplate);
  v.push_back({"mla_d512_sparse_2", c, {}, "sparseMode", "MLA with D 512"});
  c = fia_case("mla_sparse3", BF, 2, 8, 1, 2, 40, 512, "BSND");
  mla(c, 64);
  paged(c, 3, 16);  // BSND: a BnBsH cache (FIA-56)
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back({"mla_d512_sparse_3_accepted", c, {}, nullptr, ""});
  c = fia_case("qd_ne_vd_sparse1", BF, 2, 4, 2, 4, 20, 32, "BSND");
  c.Dv = 64;
  c.cfg.lse = false;
  sparse(c, 1, MaskForm::kRank3);
  v.push_back({"qd_ne_vd_sparse_1", c, {}, "sparseMode", "with Q_D != V_D"});
  c = fia_case("qd_ne_vd_lse", BF, 2, 4, 2, 4, 20, 32, "BSND");
  c.Dv = 64;
  v.push_back({"qd_ne_vd_lse", c, {}, "softmaxLse", "with Q_D != V_D"});
  c = fia_case("qd_ne_vd_ok", BF, 2, 4, 2, 4, 20, 32, "BSND");
  c.Dv = 64;
  c.cfg.lse = false;
  sparse(c, 3, MaskForm::kTemplate);
  v.push_back({"qd_ne_vd_sparse_3_accepted", c, {}, nullptr, ""});
  return v;
}

void PrintTo(const Limit& l, std::ostream* os) { *os << l.name; }

class FiaVendorLimits : public ::testing::TestWithParam<Limit> {};

TEST_P(FiaVendorLimits, Fia19RejectedByAclnnComputedByCpp) {
  const Limit& l = GetParam();
  auto data = make_case_data(l.c);
  auto op = fia_test::build_fia_run(data->canon, data->cfg);
  ASSERT_TRUE(op);
  if (l.tweak) l.tweak(op->params);
  // aclnn: rejected (nothing written) or, for the accepted edges, computed.
  std::memset(op->out.data(), 0x5A, op->out.storage.size() * 8);
  const std::vector<uint64_t> out0 = op->out.storage, lse0 = op->lse.storage;
  const aclnnStatus s = fia_aclnn_call(acl_args_of(*op));
  const std::string msg = aclGetRecentErrMsg();
  if (l.param != nullptr) {
    EXPECT_EQ(s, ACLNN_ERR_PARAM_INVALID) << msg;
    EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(l.param) + ": FIA-19"), std::string::npos) << msg;
    EXPECT_NE(msg.find(l.words), std::string::npos) << msg;
    EXPECT_TRUE(op->out.storage == out0) << "attentionOut changed by a rejected call";
    EXPECT_TRUE(op->lse.storage == lse0) << "softmaxLse changed by a rejected call";
  } else {
    EXPECT_EQ(s, ACLNN_SUCCESS) << msg;
  }
  // The C++ API computes the call; it matches the float64 reference.
  ASSERT_EQ(run_fia_cpp(op->params), kSuccess) << last_error_message();
  auto ref = reference_run(*data);
  ASSERT_TRUE(ref);
  const FiaCompare cmp = compare_fia(*op, *ref, l.c.dtype, l.c.cfg.lse);
  EXPECT_TRUE(cmp.ok) << l.name << ": " << cmp.str();
}

INSTANTIATE_TEST_SUITE_P(Limits, FiaVendorLimits, ::testing::ValuesIn(limits()),
                         [](const ::testing::TestParamInfo<Limit>& i) { return i.param.name; });

}  // namespace
}  // namespace mlaops::testing
