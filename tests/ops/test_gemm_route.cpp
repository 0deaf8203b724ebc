// GEMM routes (ops/common/gemm_route.h): the setting (MLAOPS_GEMM names, set_gemm_route), each rule
// of the decision (own by setting, no oneDNN, forced ISA, few rows, little work; forced oneDNN; the
// measured decision and its margin) and the per-process list of decisions.
#include <gtest/gtest.h>

#include <string>

#include "ops/common/gemm_route.h"

namespace mlaops {
namespace {

class GemmRouteTest : public ::testing::Test {
 protected:
  void TearDown() override { set_gemm_route(nullptr); }
  static GemmRouteQuery query(int64_t m, int64_t K, int64_t N, kernels::GemmElem e = kernels::GemmElem::kBf16) {
    GemmRouteQuery q;
    q.op = "test";
    q.what = "A @ W";
    q.elem = e;
    q.m_max = q.m_last = m;
    q.K = K, q.N = N, q.lda = K, q.ldc = N;
    q.threads = 2;
    q.isa = active_isa();
    return q;
  }
};

TEST_F(GemmRouteTest, SettingNames) {
  GemmRouteSetting s;
  for (const char* name : {"auto", "own", "onednn", "onednn-bf16", "onednn-f32"}) {
    ASSERT_TRUE(parse_gemm_route(name, &s)) << name;
    EXPECT_STREQ(gemm_route_name(s), name);
  }
  EXPECT_FALSE(parse_gemm_route("oneDNN", &s));
  EXPECT_FALSE(parse_gemm_route("", &s));
  EXPECT_FALSE(parse_gemm_route(nullptr, &s));
  ASSERT_TRUE(set_gemm_route("own"));
  EXPECT_EQ(gemm_route_setting(), GemmRouteSetting::kOwn);
  EXPECT_FALSE(set_gemm_route("fastest"));  // nothing changed
  EXPECT_EQ(gemm_route_setting(), GemmRouteSetting::kOwn);
  ASSERT_TRUE(set_gemm_route(nullptr));
  EXPECT_FALSE(onednn_info().empty());
}

TEST_F(GemmRouteTest, OwnWhenTheSettingSaysOwn) {
  ASSERT_TRUE(set_gemm_route("own"));
  const GemmRoute r = choose_gemm_route(query(256, 4096, 4096));
  EXPECT_FALSE(r.onednn);
  EXPECT_EQ(r.workspace_bytes(), 0);
  EXPECT_NE(r.why.find("the setting says own"), std::string::npos) << r.why;
}

TEST_F(GemmRouteTest, AutoRulesBeforeMeasuring) {
  ASSERT_TRUE(set_gemm_route("auto"));
  const GemmRoute few = choose_gemm_route(query(8, 7168, 1536));
  EXPECT_FALSE(few.onednn);
  const GemmRoute small = choose_gemm_route(query(32, 256, 256));
  EXPECT_FALSE(small.onednn);
  if (!kernels::onednn_built()) {
    EXPECT_NE(few.why.find("no oneDNN"), std::string::npos) << few.why;
    return;
  }
  EXPECT_NE(few.why.find("rows per chunk"), std::string::npos) << few.why;
  EXPECT_NE(small.why.find("not measured"), std::string::npos) << small.why;
  if (detected_isa() != Isa::kScalar) {
    GemmRouteQuery q = query(256, 4096, 4096);
    q.isa = Isa::kScalar;
    const GemmRoute r = choose_gemm_route(q);
    EXPECT_FALSE(r.onednn);
    EXPECT_NE(r.why.find("ISA is forced"), std::string::npos) << r.why;
  }
}

TEST_F(GemmRouteTest, ForcedOnednnRunsItsType) {
  for (const char* s : {"onednn", "onednn-bf16", "onednn-f32"}) {
    ASSERT_TRUE(set_gemm_route(s));
    const GemmRoute r = choose_gemm_route(query(8, 64, 48));
    const GemmRoute i8 = choose_gemm_route(query(8, 64, 48, kernels::GemmElem::kS8));
    const GemmRoute f16 = choose_gemm_route(query(8, 64, 48, kernels::GemmElem::kF16));
    if (!kernels::onednn_built()) {
      EXPECT_FALSE(r.onednn);
      EXPECT_NE(r.why.find("no oneDNN"), std::string::npos) << r.why;
      continue;
    }
    ASSERT_TRUE(r.onednn && i8.onednn && f16.onednn) << r.why << " / " << i8.why << " / " << f16.why;
    EXPECT_EQ(r.plan.type(), std::string(s) == "onednn-f32" ? kernels::OnednnType::kF32 : kernels::OnednnType::kBf16);
    EXPECT_EQ(i8.plan.type(), kernels::OnednnType::kU8S8);
    EXPECT_EQ(f16.plan.type(), kernels::OnednnType::kF32);
    EXPECT_GT(r.workspace_bytes(), 0);
    EXPECT_NE(r.why.find("forced"), std::string::npos) << r.why;
  }
}

// A product above the work rule: both routes are timed, and oneDNN runs only when its time per call
// (with the weight conversion) is under the margin times own's. The decision is listed once.
TEST_F(GemmRouteTest, MeasuredDecisionFollowsTheMargin) {
  ASSERT_TRUE(set_gemm_route("auto"));
  const GemmRouteQuery q = query(256, 2048, 1024);
  const GemmRoute r = choose_gemm_route(q);
  const GemmRoute again = choose_gemm_route(q);
  EXPECT_EQ(r.onednn, again.onednn);
  EXPECT_EQ(r.why, again.why);
  int listed = 0;
  for (const GemmRouteInfo& d : gemm_route_decisions()) {
    if (d.op != "test" || d.m != 256 || d.k != 2048 || d.n != 1024) continue;
    ++listed;
    if (!kernels::onednn_built()) continue;
    EXPECT_GT(d.own_ms, 0.0);
    EXPECT_GT(d.onednn_ms, 0.0);
    EXPECT_EQ(r.onednn, d.onednn_ms < kGemmRouteRules.margin * d.own_ms) << d.why;
    EXPECT_EQ(d.route.rfind(r.onednn ? "onednn-" : "own", 0), 0u) << d.route;
  }
  EXPECT_EQ(listed, 1);
}

}  // namespace
}  // namespace mlaops
