// Negative tests of aclnnFusedInferAttentionScoreV4: every validation rule
// (docs/ops/fused_infer_attention_score.md, ids FIA-01..FIA-20) through the C API, each checking
// the status code, a message naming the operator, the parameter and the rule id, and that every
// byte of attentionOut and softmaxLse is unchanged (they hold a NaN canary before the call).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "ops/fia/fia_error_cases.h"

namespace mlaops::testing {
namespace {

constexpr aclnnStatus kNull = ACLNN_ERR_PARAM_NULLPTR;
constexpr aclnnStatus kInv = ACLNN_ERR_PARAM_INVALID;

TEST(FiaErrors, BaseCasesSucceed) {
  for (Base b : {Base::kGqaPagedTnd, Base::kMla, Base::kBsnd, Base::kTndSink, Base::kDecodePse}) {
    auto d = make_case_data(base_case(b));
    auto r = fia_test::build_fia_run(d->canon, d->cfg);
    EXPECT_EQ(fia_aclnn_call(acl_args_of(*r)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
}

TEST(FiaErrors, FIA01_RequiredArguments) {
  expect_rejected(Base::kMla, {kNull, "query", "FIA-01 required argument is null"}, [](FiaAclArgs& a) { a.passed[0] = false; });
  expect_rejected(Base::kMla, {kNull, "key", "FIA-01 required argument is null"}, [](FiaAclArgs& a) { a.key_list_null = true; });
  expect_rejected(Base::kMla, {kNull, "value", "FIA-01 required argument is null"}, [](FiaAclArgs& a) { a.value_list_null = true; });
  expect_rejected(Base::kMla, {kNull, "key", "FIA-01 required tensor list is null or empty"}, [](FiaAclArgs& a) { a.key_list_len = 0; });
  expect_rejected(Base::kMla, {kNull, "attentionOut", "FIA-01 required argument is null"}, [](FiaAclArgs& a) { a.out_passed = false; });
  expect_rejected(Base::kMla, {kNull, "softmaxLse", "FIA-01 required when softmaxLseFlag is true"}, [](FiaAclArgs& a) { a.lse_passed = false; });
  expect_rejected(Base::kMla, {kNull, "workspaceSize", "FIA-01 out-pointer is null"}, [](FiaAclArgs& a) { a.null_workspace_size = true; });
  expect_rejected(Base::kMla, {kNull, "executor", "FIA-01 out-pointer is null"}, [](FiaAclArgs& a) { a.null_executor = true; });
}

TEST(FiaErrors, FIA01_LseIgnoredWhenFlagFalse) {
  FiaRun& r = *base(Base::kMla).run;
  FiaAclArgs a = acl_args_of(r);
  a.lse_flag = false;
  a.lse_passed = false;
  EXPECT_EQ(fia_aclnn_call(a), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

// FIA-30: the full-quantisation scales only with an INT8 query (tests/ops/fia/test_fia_full_quant.cpp
// has the INT8 side).
TEST(FiaErrors, FIA30_FullQuantScalesNeedAnInt8Query) {
  const struct {
    int index;
    const char* name;
  } opts[] = {{7, "deqScale1Optional"}, {8, "quantScale1Optional"}, {9, "deqScale2Optional"}};
  for (const auto& o : opts) {
    SCOPED_TRACE(o.name);
    expect_rejected(Base::kGqaPagedTnd, {kInv, o.name, "FIA-30 only with an INT8 query without queryRope / dequantScaleQuery (GQA / MHA full quantisation)"}, [&](FiaAclArgs& a) {
      a.in[o.index] = dummy();
      a.passed[o.index] = true;
    });
  }
}

TEST(FiaErrors, FIA02_OutOfScopeInputsNotSupportedYet) {
  const struct {
    int index;
    const char* name;
  } opts[] = {{26, "keyRopeAntiquantScaleOptional"}};  // dequantScaleQuery: MLA full quant (test_fia_mla_quant)
  for (const auto& o : opts) {
    SCOPED_TRACE(o.name);
    expect_rejected(Base::kGqaPagedTnd, {kInv, o.name, "FIA-02"}, [&](FiaAclArgs& a) {
      a.in[o.index] = dummy();
      a.passed[o.index] = true;
    });
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not supported yet"), std::string::npos);
  }
  // tensor lists are supported: two copies of the (B = 2) key are elements of batch 2, not 1
  // (FIA-51; the feature and its rules: tests/ops/fia/test_fia_tensor_list.cpp)
  expect_rejected(Base::kBsnd, {kInv, "key[0]", "FIA-51 tensor list element shape for layout"}, [](FiaAclArgs& a) {
    a.key_list_len = 2;
    a.value_list_len = 2;
  });
  // sparseMode 9 (the tree mask) is supported: a 2048 template is the wrong mask for it (FIA-14;
  // the tree's rules: tests/ops/fia/test_fia_tree_mask.cpp)
  expect_rejected(Base::kGqaPagedTnd, {kInv, "attenMaskOptional", "FIA-14 tree mask (sparseMode 9) with layout"}, [](FiaAclArgs& a) { a.sparse = 9; });
  expect_rejected(Base::kBsnd, {kInv, "key", "FIA-33 INT4 key/value are passed as INT32 (8 nibbles per word, last dim D / 8)"}, [](FiaAclArgs& a) { a.in[1].dtype = DType::kInt4; });
}

// KV antiquant (FIA-21; the full rule set: tests/ops/fia/test_fia_antiquant.cpp): through the C
// API, parameters without INT8 key / value and an INT8 key with a BF16 value.
TEST(FiaErrors, FIA21_AntiquantThroughTheCApi) {
  const struct {
    int index;
    const char* name;
  } opts[] = {{12, "antiquantScaleOptional"},      {13, "antiquantOffsetOptional"},
              {17, "keyAntiquantScaleOptional"},   {18, "keyAntiquantOffsetOptional"},
              {19, "valueAntiquantScaleOptional"}, {20, "valueAntiquantOffsetOptional"}};
  for (const auto& o : opts) {
    SCOPED_TRACE(o.name);
    expect_rejected(Base::kBsnd, {kInv, o.name, "FIA-21 KV antiquant parameters need INT8 / INT4 (INT32) key/value"}, [&](FiaAclArgs& a) {
      a.in[o.index] = dummy();
      a.passed[o.index] = true;
    });
  }
  expect_rejected(Base::kBsnd, {kInv, "value", "FIA-21 (= key dtype: the query dtype, or INT8 / INT32 with an INT8 / INT32 key)"}, [](FiaAclArgs& a) { a.in[1].dtype = DType::kInt8; });
}

TEST(FiaErrors, FIA03_Dtypes) {
  expect_rejected(Base::kBsnd, {kInv, "query", "FIA-03 (INT8: full quantisation, FIA-30)"}, [](FiaAclArgs& a) { a.in[0].dtype = DType::kFloat32; });
  expect_rejected(Base::kBsnd, {kInv, "key", "FIA-03 (= query dtype, or INT8 / INT32 = packed INT4 with KV antiquant"}, [](FiaAclArgs& a) { a.in[1].dtype = DType::kFloat16; });
  expect_rejected(Base::kBsnd, {kInv, "value", "FIA-03 / FIA-21 (= key dtype: the query dtype, or INT8 / INT32 with an INT8 / INT32 key)"}, [](FiaAclArgs& a) { a.in[2].dtype = DType::kFloat16; });
  expect_rejected(Base::kBsnd, {kInv, "attentionOut", "FIA-03 (= query dtype (FLOAT16 for an INT8 query), or INT8 with quantScale2, FIA-26)"}, [](FiaAclArgs& a) { a.out.dtype = DType::kFloat16; });
  expect_rejected(Base::kBsnd, {kInv, "softmaxLse", "FIA-03"}, [](FiaAclArgs& a) { a.lse.dtype = DType::kInt32; });
  expect_rejected(Base::kMla, {kInv, "queryRopeOptional", "FIA-03 (= query dtype)"},
                  [](FiaAclArgs& a) { a.in[24].dtype = DType::kFloat16; });
  expect_rejected(Base::kBsnd, {kInv, "attenMaskOptional", "FIA-14"}, [](FiaAclArgs& a) { a.in[4].dtype = DType::kInt32; });
}

TEST(FiaErrors, FIA04_Formats) {
  expect_rejected(Base::kBsnd, {kInv, "query", "FIA-04"}, [](FiaAclArgs& a) { a.in[0].format = Format::kFractalNZ; });
  expect_rejected(Base::kMla, {kInv, "key", "FIA-04"}, [](FiaAclArgs& a) { a.in[1].format = Format::kFractalNZ; });
}

TEST(FiaErrors, FIA05_LayoutStrings) {
  expect_rejected(Base::kMla, {kInv, "inputLayout", "FIA-05 value"}, [](FiaAclArgs& a) { a.layout = "BNSDX"; });
  expect_rejected(Base::kMla, {kInv, "inputLayout", "FIA-05 value"}, [](FiaAclArgs& a) { a.layout = "NBSD"; });
  expect_rejected(Base::kMla, {kInv, "inputLayout", "FIA-05 value"}, [](FiaAclArgs& a) { a.layout = std::string(100, 'B'); });
  static char unterminated[32];  // exactly the bound, no NUL inside: never read past it
  std::memset(unterminated, 'N', sizeof unterminated);
  expect_rejected(Base::kMla, {kInv, "inputLayout", "FIA-05 value"}, [](FiaAclArgs& a) { a.raw_layout = unterminated; });
}

TEST(FiaErrors, FIA06_Heads) {
  expect_rejected(Base::kGqaPagedTnd, {kInv, "numHeads", "FIA-06 must be a multiple of numKeyValueHeads"}, [](FiaAclArgs& a) { a.kvn = 3; });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "numHeads", "FIA-06 value"}, [](FiaAclArgs& a) { a.num_heads = 0; });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "numKeyValueHeads", "FIA-06 value"}, [](FiaAclArgs& a) { a.kvn = -1; });
}

TEST(FiaErrors, FIA07_Ranks) {
  expect_rejected(Base::kBsnd, {kInv, "query", "FIA-07 dim count for layout"}, [](FiaAclArgs& a) { a.layout = "BSH"; });
  expect_rejected(Base::kMla, {kInv, "key", "FIA-07 paged cache (3 BnBsH, 4 BnNBsD, 5 NZ)"}, [](FiaAclArgs& a) {
    a.in[1] = make_view(a.in[1].data, a.in[1].dtype, {a.in[1].dims[0], a.in[1].dims[1] * a.in[1].dims[2] * a.in[1].dims[3]});
  });
}

TEST(FiaErrors, FIA08_Shapes) {
  expect_rejected(Base::kGqaPagedTnd, {kInv, "query", "FIA-08 head count in the shape"}, [](FiaAclArgs& a) {
    a.num_heads = 8;
    a.kvn = 2;
  });
  expect_rejected(Base::kBsnd, {kInv, "key", "FIA-08 head count in the shape"}, [](FiaAclArgs& a) { a.kvn = 4; });
  expect_rejected(Base::kBsnd, {kInv, "key", "FIA-08 key/value batch must equal the query batch"}, [](FiaAclArgs& a) {
    TensorView& k = a.in[1];  // [2, 10, 2, 16] -> [1, 20, 2, 16]
    k = make_view(k.data, k.dtype, {1, 20, 2, 16});
  });
  expect_rejected(Base::kBsnd, {kInv, "key", "FIA-08 head dim must equal the query head dim"}, [](FiaAclArgs& a) {
    TensorView& k = a.in[1];  // head dim 16 -> 8
    k = make_view(k.data, k.dtype, {2, 10, 2, 8});
  });
  expect_rejected(Base::kBsnd, {kInv, "attentionOut", "FIA-08 shape for output layout"}, [](FiaAclArgs& a) {
    a.out = make_view(a.out.data, a.out.dtype, {2, 3, 4, 8});
  });
  expect_rejected(Base::kMla, {kInv, "attentionOut", "FIA-08 shape for output layout"}, [](FiaAclArgs& a) {
    a.out = make_view(a.out.data, a.out.dtype, {2, 16, 1, 512});  // BNSD, but the output layout is NBSD
  });
}

TEST(FiaErrors, FIA09_Attributes) {
  expect_rejected(Base::kBsnd, {kInv, "sparseMode", "FIA-09"}, [](FiaAclArgs& a) { a.sparse = 5; });
  expect_rejected(Base::kBsnd, {kInv, "sparseMode", "FIA-09"}, [](FiaAclArgs& a) { a.sparse = -1; });
  expect_rejected(Base::kBsnd, {kInv, "innerPrecise", "FIA-09"}, [](FiaAclArgs& a) { a.inner = 4; });
}

TEST(FiaErrors, FIA10_QueryLengths) {
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsOptional", "FIA-10"},
                  [](FiaAclArgs& a) { a.asl_q = {3, 2}; });  // decreasing (cumulative 3, 2)
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsOptional", "FIA-10"},
                  [](FiaAclArgs& a) { a.asl_q = {3, 4}; });  // ends at 4 != T = 5
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsOptional", "FIA-10 needed by the TND/NTD layouts"},
                  [](FiaAclArgs& a) { a.has_asl_q = false; });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsOptional", "FIA-10"},
                  [](FiaAclArgs& a) { a.asl_q = {-1, 5}; });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengthsOptional", "FIA-10"}, [](FiaAclArgs& a) { a.asl_q = {3, 4}; });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengthsOptional", "FIA-10"}, [](FiaAclArgs& a) { a.asl_q = {-1, 2}; });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengthsOptional", "FIA-10"}, [](FiaAclArgs& a) {
    a.in[0] = make_view(a.in[0].data, a.in[0].dtype, {3, 2, 4, 16});  // B = 3 with a length-2 array
    a.in[1] = make_view(a.in[1].data, a.in[1].dtype, {3, 5, 2, 16});
    a.in[2] = make_view(a.in[2].data, a.in[2].dtype, {3, 5, 2, 16});
    a.out = make_view(a.out.data, a.out.dtype, {3, 2, 4, 16});
    a.asl_q = {2, 2};
  });
}

TEST(FiaErrors, FIA11_KvLengths) {
  // Paged: lengths larger than the block table covers (width 3 * 16 = 48).
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsKvOptional", "FIA-11"},
                  [](FiaAclArgs& a) { a.asl_kv = {49, 9}; });
  // A table narrower than the lengths need.
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsKvOptional", "FIA-11"}, [](FiaAclArgs& a) {
    a.in[14] = make_view(a.in[14].data, a.in[14].dtype, {2, 1});  // 1 * 16 < 20 positions of batch 0
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "actualSeqLengthsKvOptional", "FIA-11 needed with paged attention"},
                  [](FiaAclArgs& a) { a.has_asl_kv = false; });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengthsKvOptional", "FIA-11"}, [](FiaAclArgs& a) {
    a.has_asl_kv = true;
    a.asl_kv = {11};  // > KV_S = 10
  });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengthsKvOptional", "FIA-11"}, [](FiaAclArgs& a) {
    a.has_asl_kv = true;
    a.asl_kv = {-2, 3};
  });
  // An empty key / value holds no position: a paged cache of blockNum 0 with a non-zero length (it
  // was computed as an empty KV: output 0, lse +inf) and an empty contiguous key.
  expect_rejected(Base::kMla, {kInv, "actualSeqLengthsKvOptional", "FIA-11 value with an empty key / value"},
                  [](FiaAclArgs& a) {
                    for (int i : {1, 2, 25}) a.in[i].dims[0] = 0;  // key, value, keyRope: 0 blocks
                  });
  expect_rejected(Base::kBsnd, {kInv, "actualSeqLengthsKvOptional", "FIA-11 value with an empty key / value"},
                  [](FiaAclArgs& a) {
                    for (int i : {1, 2}) a.in[i].dims[1] = 0;  // KV_S 0
                    a.has_asl_kv = true;
                    a.asl_kv = {0, 1};
                  });
}

TEST(FiaErrors, FIA12_PagedGeometry) {
  expect_rejected(Base::kMla, {kInv, "blockSize", "FIA-12 must equal the cache block size"}, [](FiaAclArgs& a) { a.block_size = 32; });
  expect_rejected(Base::kMla, {kInv, "blockTableOptional", "FIA-12"},
                  [](FiaAclArgs& a) { a.in[14].dtype = DType::kInt64; });
  expect_rejected(Base::kMla, {kInv, "blockTableOptional", "FIA-12 dim 0"}, [](FiaAclArgs& a) {
    a.in[14] = make_view(a.in[14].data, a.in[14].dtype, {1, a.in[14].dims[1]});
  });
  expect_rejected(Base::kMla, {kInv, "value", "FIA-12 paged blockNum/blockSize must equal key's"}, [](FiaAclArgs& a) {
    TensorView& v = a.in[2];
    v = make_view(v.data, v.dtype, {v.dims[0] - 1, v.dims[1], v.dims[2], v.dims[3]});
  });
}

// Check sites of the shapes and sizes (docs/testing.md, "Coverage tables"): each names its site.
TEST(FiaErrors, ShapeAndSizeSites) {
  expect_rejected(Base::kBsnd, {kInv, "query", "FIA-08 BSH hidden dim must be a multiple of the head count"},
                  [](FiaAclArgs& a) {
                    a.layout = "BSH";
                    a.in[0] = make_view(a.in[0].data, a.in[0].dtype, {2, 3, 62});  // 62 % 4 heads
                  });
  expect_rejected(Base::kMla, {kInv, "blockTableOptional", "FIA-12 block table"}, [](FiaAclArgs& a) {
    a.in[14] = make_view(a.in[14].data, a.in[14].dtype, {a.in[14].dims[0] * a.in[14].dims[1]});
  });
  expect_rejected(Base::kMla, {kInv, "key", "FIA-08 NZ cache last dim"}, [](FiaAclArgs& a) {
    for (int i : {1, 2}) {  // [blockNum, 1, 512 / 32, 16, 32]: c0 32 is INT8's, the cache is BF16
      TensorView& k = a.in[i];
      k = make_view(k.data, k.dtype, {k.dims[0], 1, 512 / 32, k.dims[2], 32}, Format::kFractalNZ);
    }
  });
  expect_rejected(Base::kMla, {kInv, "blockTableOptional", "FIA-17 width * blockSize overflows int64"},
                  [](FiaAclArgs& a) {  // [B, 2^59] int32 fits in bytes; 2^59 blocks of 16 do not
                    a.in[14] = make_view(a.in[14].data, a.in[14].dtype, {a.in[14].dims[0], int64_t{1} << 59});
                  });
}

TEST(FiaErrors, FIA13_BlockIdsCheckedBeforeAnyWrite) {
  // Changed after phase 1 (contents are read in phase 2's pre-pass only).
  expect_rejected(Base::kGqaPagedTnd, {kInv, "blockTableOptional", "FIA-13 blockTable["}, [](FiaAclArgs&) {},
                  [](FiaRun& r) { r.block_table.set({1, 0}, 1000); });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "blockTableOptional", "FIA-13 blockTable["}, [](FiaAclArgs&) {},
                  [](FiaRun& r) { r.block_table.set({0, 1}, -1); });
  expect_rejected(Base::kMla, {kInv, "blockTableOptional", "FIA-13 blockTable["}, [](FiaAclArgs&) {},
                  [](FiaRun& r) { r.block_table.set({0, 2}, static_cast<double>(r.key.dims[0])); });
}

TEST(FiaErrors, FIA14_Masks) {
  expect_rejected(Base::kGqaPagedTnd, {kInv, "attenMaskOptional", "FIA-14 needed by sparseMode"}, [](FiaAclArgs& a) { a.passed[4] = false; });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "attenMaskOptional", "FIA-14 shape for sparseMode"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {1, 2048, 2047});
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "attenMaskOptional", "FIA-14 shape for sparseMode"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {2, 1024, 2048});
  });
  expect_rejected(Base::kBsnd, {kInv, "attenMaskOptional", "FIA-14 extent"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {2, 2, 15});  // rows < Q_S
  });
  expect_rejected(Base::kBsnd, {kInv, "attenMaskOptional", "FIA-14 extent"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {2, 6, 5});  // columns < KV_S
  });
  expect_rejected(Base::kBsnd, {kInv, "attenMaskOptional", "FIA-14 batch dim"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {3, 4, 15});  // batch dim 3
  });
  expect_rejected(Base::kBsnd, {kInv, "attenMaskOptional", "FIA-14 4-D mask dim 1"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {1, 2, 6, 15});  // 4-D dim 1 != 1
  });
  expect_rejected(Base::kBsnd, {kInv, "attenMaskOptional", "FIA-14"}, [](FiaAclArgs& a) {
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {180});  // rank 1
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "attenMaskOptional", "FIA-14 a 2-D mask is not accepted with TND/NTD layouts"}, [](FiaAclArgs& a) {
    a.sparse = 1;
    a.in[4] = make_view(a.in[4].data, a.in[4].dtype, {8, 30});  // 2-D mask with TND
  });
}

TEST(FiaErrors, FIA15_Rope) {
  expect_rejected(Base::kMla, {kInv, "keyRopeOptional", "FIA-15 queryRope and keyRope must be given together"}, [](FiaAclArgs& a) { a.passed[25] = false; });
  expect_rejected(Base::kMla, {kInv, "queryRopeOptional", "FIA-15 queryRope and keyRope must be given together"}, [](FiaAclArgs& a) { a.passed[24] = false; });
  expect_rejected(Base::kMla, {kInv, "keyRopeOptional", "FIA-15 head dim must equal queryRope's"}, [](FiaAclArgs& a) {
    TensorView& k = a.in[25];
    k = make_view(k.data, k.dtype, {k.dims[0], k.dims[1], k.dims[2], 32});
  });
  expect_rejected(Base::kMla, {kInv, "queryRopeOptional", "FIA-15 batch/sequence must equal the query's"}, [](FiaAclArgs& a) {
    TensorView& q = a.in[24];
    q = make_view(q.data, q.dtype, {1, 16, 2, 64});
  });
}

TEST(FiaErrors, FIA16_Lse) {
  expect_rejected(Base::kMla, {kInv, "softmaxLse", "FIA-16 shape"}, [](FiaAclArgs& a) {
    a.lse = make_view(a.lse.data, a.lse.dtype, {2, 16, 1});
  });
  expect_rejected(Base::kGqaPagedTnd, {kInv, "softmaxLse", "FIA-16 shape"}, [](FiaAclArgs& a) {
    a.lse = make_view(a.lse.data, a.lse.dtype, {1, 5, 4, 1});
  });
}

// Outputs must be dense (inputs may be strided views: tests/ops/test_auto_contiguous.cpp).
TEST(FiaErrors, FIA17_Density) {
  expect_rejected(Base::kBsnd, {kInv, "attentionOut", "FIA-17"}, [](FiaAclArgs& a) {
    TensorView& o = a.out;  // [2, 3, 4, 16] written through a view with a padded row stride
    o = make_view(o.data, o.dtype, {2, 3, 4, 8});
    o.strides[2] = 16;
    o.storage_rank = 4;  // the allocation is still [2, 3, 4, 16]
    const int64_t storage[4] = {2, 3, 4, 16};
    std::copy(storage, storage + 4, o.storage_dims);
  });
}

TEST(FiaErrors, FIA18_Aliasing) {
  expect_rejected(Base::kMla, {kInv, "attentionOut", "FIA-18"}, [](FiaAclArgs& a) { a.out.data = a.in[0].data; });
  expect_rejected(Base::kMla, {kInv, "softmaxLse", "FIA-18"}, [](FiaAclArgs& a) { a.lse.data = a.in[24].data; });
}

TEST(FiaErrors, FIA19_VendorRanges) {
  expect_rejected(Base::kGqaPagedTnd, {kInv, "numHeads", "FIA-19"}, [](FiaAclArgs& a) {
    a.num_heads = 512;  // checked before the shapes
    a.kvn = 2;
  });
  expect_rejected(Base::kMla, {kInv, "queryRopeOptional", "FIA-19 rope head dim"}, [](FiaAclArgs& a) {
    TensorView& q = a.in[24];
    TensorView& k = a.in[25];
    q = make_view(q.data, q.dtype, {q.dims[0], q.dims[1], q.dims[2], 32});
    k = make_view(k.data, k.dtype, {k.dims[0], k.dims[1], k.dims[2], 32});
  });
}

TEST(FiaErrors, FIA19_BlockSizeOnlyInAclnn) {
  // blockSize 8 is fine for the C++ API, outside the vendor's range for aclnn.
  FiaCase c = base_case(Base::kGqaPagedTnd);
  c.cfg.block_size = 8;
  auto d = make_case_data(c);
  auto r = fia_test::build_fia_run(d->canon, d->cfg);
  EXPECT_EQ(run_fia_cpp(r->params), kSuccess) << last_error_message();
  const std::vector<uint64_t> out0 = r->out.storage;
  EXPECT_EQ(fia_aclnn_call(acl_args_of(*r)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("FIA-19 blockSize value"), std::string::npos) << aclGetRecentErrMsg();
  EXPECT_TRUE(r->out.storage == out0);
}

TEST(FiaErrors, FIA20_WorkspaceTooSmall) {
  FiaRun& r = *base(Base::kMla).run;
  const std::vector<uint64_t> out0 = r.out.storage, lse0 = r.lse.storage;
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(fia_phase1(acl_args_of(r), &ws, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  ASSERT_GT(ws, 64u);
  std::vector<uint64_t> buf(ws / 8 + 1);
  EXPECT_EQ(aclnnFusedInferAttentionScoreV4(buf.data(), ws - 64, ex, nullptr), ACLNN_ERR_PARAM_INVALID);
  // The shared executor checks the size first (its own message names workspaceSize).
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("workspaceSize"), std::string::npos) << aclGetRecentErrMsg();
  EXPECT_TRUE(r.out.storage == out0);
  EXPECT_TRUE(r.lse.storage == lse0);
  // The C++ API: FIA-20.
  uint64_t need = 0;
  ASSERT_EQ(fused_infer_attention_score_v4_workspace_size(r.params, &need), kSuccess);
  EXPECT_EQ(fused_infer_attention_score_v4(r.params, buf.data(), need - 64), kParamInvalid);
  EXPECT_NE(std::string(last_error_message()).find("FIA-20"), std::string::npos) << last_error_message();
  EXPECT_EQ(fused_infer_attention_score_v4(r.params, nullptr, need), kParamNullptr);
  EXPECT_TRUE(r.out.storage == out0);
  EXPECT_TRUE(r.lse.storage == lse0);
}

}  // namespace
}  // namespace mlaops::testing
