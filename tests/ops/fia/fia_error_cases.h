// The base cases and the rejection check of the FusedInferAttentionScoreV4 negative tests: a
// rejected call through the C API must return the code, name the operator, the parameter and the
// rule id, and leave every byte of attentionOut and softmaxLse (NaN canaries) unchanged.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/fia/fia_aclnn_call.h"
#include "ops/fia/fia_harness.h"

namespace mlaops::testing {

// kGqaPagedTnd: TND, paged BnBsH (blockSize 16, so head dim 64: FIA-19), sparse 3; kMla: MLA
// decode, paged BnNBsD; kBsnd: BSND with a sparse-1 mask; kTndSink: kGqaPagedTnd with a learnableSink (the vendor's sink configuration);
// kDecodePse: BSND decode with a pseShift [B, N, 1, S].
enum class Base { kGqaPagedTnd, kMla, kBsnd, kTndSink, kDecodePse };
constexpr int kBaseCount = 5;

struct BaseCase {
  std::unique_ptr<FiaCaseData> data;
  std::unique_ptr<FiaRun> run;
};

inline FiaCase base_case(Base b) {
  FiaCase c;
  c.dtype = DType::kBFloat16;
  switch (b) {
    case Base::kGqaPagedTnd:
      c.B = 2, c.N = 4, c.KVN = 2, c.Sq = 3, c.Skv = 20, c.D = 64, c.Dv = 64;
      c.act_q = {3, 2};
      c.act_kv = {20, 9};
      c.cfg.layout = "TND";
      c.cfg.paged = true;
      c.cfg.cache_rank = 3;
      c.cfg.block_size = 16;
      c.cfg.sparse_mode = 3;
      c.mask = MaskForm::kTemplate;
      c.seed = 2;  // template rank 4
      break;
    case Base::kMla:
      c.B = 2, c.N = 16, c.KVN = 1, c.Sq = 1, c.Skv = 40, c.D = 512, c.Dv = 512, c.Dr = 64;
      c.act_kv = {40, 17};
      c.cfg.layout = "BNSD_NBSD";
      c.cfg.paged = true;
      c.cfg.cache_rank = 4;
      c.cfg.block_size = 16;
      c.cfg.value_is_key = true;
      break;
    case Base::kBsnd:
      c.B = 2, c.N = 4, c.KVN = 2, c.Sq = 3, c.Skv = 10, c.D = 16, c.Dv = 16;
      c.act_q = {3, 2};
      c.cfg.layout = "BSND";
      c.cfg.sparse_mode = 1;
      c.mask = MaskForm::kRank3;
      break;
    case Base::kTndSink:
      c = base_case(Base::kGqaPagedTnd);
      c.sink = true;
      break;
    case Base::kDecodePse:
      c.B = 2, c.N = 4, c.KVN = 2, c.Sq = 1, c.Skv = 20, c.D = 32, c.Dv = 32;
      c.cfg.layout = "BSND";
      c.pse = PseForm::kRandom;
      break;
  }
  return c;
}

inline BaseCase& base(Base b) {
  static BaseCase cases[kBaseCount];
  BaseCase& bc = cases[static_cast<int>(b)];
  if (!bc.run) {
    bc.data = make_case_data(base_case(b));
    bc.run = fia_test::build_fia_run(bc.data->canon, bc.data->cfg);
  }
  return bc;
}

// A small FP32 tensor to pass as an out-of-scope optional input.
inline TensorView dummy() {
  static float v[4] = {1, 1, 1, 1};
  return make_view(v, DType::kFloat32, {1});
}

struct Expect {
  aclnnStatus code;
  const char* param;
  const char* rule;
};

inline void expect_rejected(Base b, Expect e, const std::function<void(FiaAclArgs&)>& mutate,
                            const std::function<void(FiaRun&)>& between = {}) {
  FiaRun& r = *base(b).run;
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage, bt0 = r.block_table.storage;
  FiaAclArgs a = acl_args_of(r);
  mutate(a);
  std::function<void()> hook;
  if (between) hook = [&] { between(r); };
  const aclnnStatus s = fia_aclnn_call(a, nullptr, hook);
  const std::string msg = aclGetRecentErrMsg();
  r.block_table.storage = bt0;  // restore a corrupted table for the next test
  EXPECT_EQ(s, e.code) << msg;
  EXPECT_NE(msg.find("aclnnFusedInferAttentionScoreV4"), std::string::npos) << msg;
  EXPECT_NE(msg.find(e.param), std::string::npos) << "message does not name " << e.param << ": " << msg;
  EXPECT_NE(msg.find(e.rule), std::string::npos) << "message does not name " << e.rule << ": " << msg;
  EXPECT_TRUE(r.out.storage == out0) << "attentionOut changed by a rejected call (" << e.rule << ")";
  EXPECT_TRUE(r.lse.storage == lse0) << "softmaxLse changed by a rejected call (" << e.rule << ")";
}

}  // namespace mlaops::testing
