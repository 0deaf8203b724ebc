// Check-site negative tests of aclnnFusedInferAttentionScoreV4 (docs/testing.md, "Coverage
// tables"): one call per site of FIA-26 (post-quant), FIA-40 (left padding tensor form), FIA-46 /
// FIA-47 (shared prefix) and FIA-51 (tensor-list key / value) that no other test names by its
// exact tag. Each checks the status, a message naming the operator,
// the parameter and the site's tag, and that attentionOut and softmaxLse kept their canaries.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/fia/fia_error_cases.h"

namespace mlaops::testing {
namespace {

constexpr aclnnStatus kInv = ACLNN_ERR_PARAM_INVALID;

// Argument positions of FiaAclArgs::in (the C API's order).
constexpr int kMask = 4, kQuantScale2 = 10, kQuantOffset2 = 11, kKvPadding = 16, kKeyPrefix = 21, kValuePrefix = 22;

// A tensor of `dims` over static storage large enough for every use below.
TensorView tensor(DType dt, std::vector<int64_t> dims) {
  static float store[1024] = {};
  return make_view(store, dt, dims.data(), static_cast<int>(dims.size()));
}

// Post-quant arguments: quantScale2 (and quantOffset2) given, attentionOut INT8 (same canary
// storage: a rejected call writes nothing).
void post_quant(FiaAclArgs& a, TensorView scale, const TensorView* offset = nullptr) {
  a.in[kQuantScale2] = scale;
  a.passed[kQuantScale2] = true;
  if (offset != nullptr) {
    a.in[kQuantOffset2] = *offset;
    a.passed[kQuantOffset2] = true;
  }
  a.out.dtype = DType::kInt8;
}

TEST(FiaSitesB, FIA26_PostQuantPairingAndDtypes) {
  expect_rejected(Base::kBsnd, {kInv, "quantOffset2Optional", "FIA-26 only with quantScale2"}, [](FiaAclArgs& a) {
    a.in[kQuantOffset2] = dummy();
    a.passed[kQuantOffset2] = true;
  });
  expect_rejected(Base::kBsnd, {kInv, "quantScale2Optional: FIA-26 dtype; allowed", "FIA-26 dtype"},
                  [](FiaAclArgs& a) { post_quant(a, tensor(DType::kInt32, {1})); });
  expect_rejected(Base::kBsnd, {kInv, "quantOffset2Optional", "FIA-26 dtype and shape must equal quantScale2's"},
                  [](FiaAclArgs& a) {
                    const TensorView off = tensor(DType::kFloat32, {2});
                    post_quant(a, tensor(DType::kFloat32, {1}), &off);
                  });
}

TEST(FiaSitesB, FIA26_PostQuantExclusions) {
  const auto per_tensor = [](FiaAclArgs& a) { post_quant(a, tensor(DType::kFloat32, {1})); };
  expect_rejected(Base::kTndSink, {kInv, "quantScale2Optional", "FIA-26 post-quant is not allowed with learnableSink"}, per_tensor);
  expect_rejected(Base::kMla, {kInv, "quantScale2Optional", "FIA-26 post-quant is not allowed with MLA (queryRope)"}, per_tensor);
  expect_rejected(Base::kGqaPagedTnd, {kInv, "quantScale2Optional", "FIA-26 post-quant is not allowed with layout"}, per_tensor);
}

TEST(FiaSitesB, FIA26_PerChannel) {
  // kDecodePse: BSND decode, N 4, V_D 32; per-channel [N, V_D] with softmaxLse [B, N, 1, 1].
  expect_rejected(Base::kDecodePse, {kInv, "softmaxLse", "FIA-26 per-channel post-quant is not allowed with softmaxLse"},
                  [](FiaAclArgs& a) {
                    post_quant(a, tensor(DType::kFloat32, {4, 32}));
                    a.lse_flag = true;
                    a.lse = tensor(DType::kFloat32, {2, 4, 1, 1});
                    a.lse_passed = true;
                  });
  // kBsnd: Q_S 3, V_D 16.
  expect_rejected(Base::kBsnd, {kInv, "quantScale2Optional", "FIA-26 per-channel post-quant with Q_S > 1 needs V_D"},
                  [](FiaAclArgs& a) {
                    post_quant(a, tensor(DType::kFloat32, {4, 16}));
                    a.lse_flag = false;
                    a.lse_passed = false;
                  });
}

// quantOffset2 with configurations that can fully mask a row: kBsnd (BSND, Q_S 3, actQ 3, 2)
// under the 2048 template mask with sparse mode 3 / 4.
void offset_with_template(FiaAclArgs& a, int64_t sparse) {
  const TensorView off = tensor(DType::kFloat32, {1});
  post_quant(a, tensor(DType::kFloat32, {1}), &off);
  a.in[kMask] = const_cast<HostTensor&>(template_mask(DType::kBool, 2)).view();
  a.passed[kMask] = true;
  a.sparse = sparse;
}

TEST(FiaSitesB, FIA26_OffsetFullyMaskedRows) {
  expect_rejected(Base::kBsnd, {kInv, "preTokens/nextTokens", "FIA-26 with quantOffset2 and sparseMode 4 must be >= 0"},
                  [](FiaAclArgs& a) {
                    offset_with_template(a, 4);
                    a.pre = -1;
                    a.next = 5;
                  });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengths", "FIA-26 with quantOffset2 batch"}, [](FiaAclArgs& a) {
    offset_with_template(a, 3);
    a.has_asl_kv = true;
    a.asl_kv = {1, 1};  // actKV 1 < actQ 3 under the causal mask
  });
}

TEST(FiaSitesB, FIA40_PaddingTensorForm) {
  expect_rejected(Base::kBsnd, {kInv, "kvPaddingSizeOptional", "FIA-40 shape"}, [](FiaAclArgs& a) {
    a.in[kKvPadding] = tensor(DType::kInt64, {2});
    a.passed[kKvPadding] = true;
  });
}

// A null data pointer: the C API rejects it before the operator (a generic tensor check); the
// C++ API reaches the rule's own site.
TEST(FiaSitesB, FIA40_PaddingDataPointerCpp) {
  FiaRun& r = *base(Base::kBsnd).run;
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  FiaParams p = r.params;
  TensorView t = tensor(DType::kInt64, {1});
  t.data = nullptr;
  p.kv_padding_size = &t;
  EXPECT_EQ(run_fia_cpp(p), kParamNullptr);
  const std::string msg = last_error_message();
  EXPECT_NE(msg.find("kvPaddingSizeOptional: FIA-40 data pointer"), std::string::npos) << msg;
  EXPECT_TRUE(r.out.storage == out0 && r.lse.storage == lse0) << "a rejected call wrote an output";
}

// kBsnd's key / value are BSND [2, 10, 2, 16] BF16: prefixes [1, Sp, 2, 16].
void prefix(FiaAclArgs& a, int64_t key_sp, int64_t value_sp, int64_t key_batch = 1) {
  a.in[kKeyPrefix] = tensor(DType::kBFloat16, {key_batch, key_sp, 2, 16});
  a.in[kValuePrefix] = tensor(DType::kBFloat16, {1, value_sp, 2, 16});
  a.passed[kKeyPrefix] = a.passed[kValuePrefix] = true;
}

TEST(FiaSitesB, FIA46_FIA47_SharedPrefix) {
  expect_rejected(Base::kBsnd, {kInv, "keySharedPrefixOptional", "FIA-46 shape"}, [](FiaAclArgs& a) { prefix(a, 4, 4, 2); });
  expect_rejected(Base::kBsnd, {kInv, "valueSharedPrefixOptional", "FIA-46 sequence extent must equal keySharedPrefix's"},
                  [](FiaAclArgs& a) { prefix(a, 4, 3); });
  expect_rejected(Base::kBsnd, {kInv, "actualSharedPrefixLenOptional", "FIA-47 length"}, [](FiaAclArgs& a) {
    prefix(a, 4, 4);
    a.has_prefix = true;
    a.prefix = {1, 1};
  });
  expect_rejected(Base::kBsnd, {kInv, "actualSharedPrefixLenOptional", "FIA-47 value"}, [](FiaAclArgs& a) {
    prefix(a, 4, 4);
    a.has_prefix = true;
    a.prefix = {5};
  });
}

// Tensor-list key / value for kBsnd (B 2, BSND, KV_N 2, D 16): element b is [1, S_b, 2, D].
TensorView elem(int64_t s, int64_t d = 16, DType dt = DType::kBFloat16) { return tensor(dt, {1, s, 2, d}); }

void lists(FiaAclArgs& a, std::vector<TensorView> k, std::vector<TensorView> v) {
  a.key_views = std::move(k);
  a.value_views = std::move(v);
  a.in[1] = a.key_views[0];
  a.in[2] = a.value_views[0];
}

TEST(FiaSitesB, FIA51_TensorListElements) {
  expect_rejected(Base::kBsnd, {kInv, "value", "FIA-51 tensor list length must equal key's"},
                  [](FiaAclArgs& a) { lists(a, {elem(10), elem(7)}, {elem(10)}); });
  expect_rejected(Base::kBsnd, {kInv, "key", "FIA-51 tensor list length must equal the query batch"},
                  [](FiaAclArgs& a) { lists(a, {elem(10), elem(7), elem(3)}, {elem(10), elem(7), elem(3)}); });
  expect_rejected(Base::kBsnd, {kInv, "key[1]", "FIA-51 tensor list element dtype must equal element 0's"},
                  [](FiaAclArgs& a) { lists(a, {elem(10), elem(7, 16, DType::kFloat16)}, {elem(10), elem(7)}); });
  expect_rejected(Base::kBsnd, {kInv, "key[1]", "FIA-51 tensor list element head dim must equal element 0's"},
                  [](FiaAclArgs& a) { lists(a, {elem(10), elem(7, 32)}, {elem(10), elem(7)}); });
  expect_rejected(Base::kBsnd, {kInv, "value[1]", "FIA-51 sequence extent must equal key["},
                  [](FiaAclArgs& a) { lists(a, {elem(10), elem(7)}, {elem(10), elem(5)}); });
}

}  // namespace
}  // namespace mlaops::testing
