// The thread-scaling model of `mlaops bench --scaling` (bench/scaling.h), without timing: the
// static and dynamic splits replayed as core/parallel.cpp does them, the roofline arithmetic, and
// the counts the operators' plans give for a few suite cases at 8, 32 and 128 threads. Those
// counts are the table in docs/performance.md "Thread scaling past two cores": when a plan
// changes how it splits work, this test fails and the table is to be regenerated.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/scaling.h"
#include "mlaops/runtime.h"

namespace {

using bench::ScalingAssumptions;
using bench::ScalingCase;
using bench::ScalingPhase;
using bench::ScalingPoint;

TEST(ScalingSplit, StaticChunksAsParallelFor) {
  ScalingPhase ph;
  bench::split_static(std::vector<double>(132, 16.0), 1, 32, &ph);  // 132 panels over 32 threads
  EXPECT_EQ(ph.units, 132);
  EXPECT_EQ(ph.active, 32);
  EXPECT_EQ(ph.max_units, 5);  // [132 i / 32, 132 (i + 1) / 32): 4 or 5 panels
  EXPECT_DOUBLE_EQ(ph.max_work, 80.0);
  EXPECT_DOUBLE_EQ(ph.work, 132 * 16.0);
  // min_chunk 8 over 20 tokens: ceil(20 / 8) = 3 chunks whatever the thread count
  bench::split_static(std::vector<double>(20, 1.0), 8, 128, &ph);
  EXPECT_EQ(ph.active, 3);
  EXPECT_EQ(ph.max_units, 7);
  // one token: one thread
  bench::split_static(std::vector<double>(1, 1.0), 8, 128, &ph);
  EXPECT_EQ(ph.active, 1);
  EXPECT_EQ(ph.max_units, 1);
}

TEST(ScalingSplit, DynamicFirstFreeThread) {
  ScalingPhase ph;
  bench::split_dynamic({4, 1, 1, 1, 1}, 2, &ph);  // thread 0 takes 4; thread 1 the four 1s
  EXPECT_EQ(ph.active, 2);
  EXPECT_EQ(ph.max_units, 4);
  EXPECT_DOUBLE_EQ(ph.max_work, 4.0);
  bench::split_dynamic(std::vector<double>(128, 1.0), 32, &ph);
  EXPECT_EQ(ph.max_units, 4);
  bench::split_dynamic(std::vector<double>(8, 1.0), 128, &ph);  // fewer units than threads
  EXPECT_EQ(ph.active, 8);
  EXPECT_EQ(ph.max_units, 1);
}

TEST(ScalingModel, RooflineArithmetic) {
  ScalingAssumptions a;  // 12 GB/s per core, 300 GB/s socket, 235 GFLOP/s bf16 per core
  ScalingCase c;
  c.id = "synthetic";
  c.plan = [](int threads, ScalingPoint* out, std::string*) {
    ScalingPhase ph;
    ph.name = "p";
    bench::split_dynamic(std::vector<double>(64, 1.0), threads, &ph);
    ph.flops_bf16 = 235e9 * 1e-3;  // 1 ms on one core
    ph.bytes = 1.2e9;              // 100 ms at 12 GB/s, 4 ms at 300 GB/s
    out->phases.push_back(ph);
    return true;
  };
  const int before = mlaops::num_threads();
  ScalingPoint one, p;
  std::string err;
  ASSERT_TRUE(bench::scaling_point(c, 1, a, nullptr, &one, &err));
  EXPECT_NEAR(one.cmp_us, 1000.0, 1e-6);
  EXPECT_NEAR(one.mem_us, 100000.0, 1e-3);
  ASSERT_TRUE(bench::scaling_point(c, 32, a, &one, &p, &err));
  EXPECT_EQ(mlaops::num_threads(), before);  // the thread setting is restored
  EXPECT_NEAR(p.cmp_us, 1000.0 * 2 / 64, 1e-6);  // 2 of 64 units on the busiest thread
  EXPECT_NEAR(p.mem_us, 4000.0, 1e-6);         // 32 x 12 GB/s > 300: the socket
  EXPECT_NEAR(p.speedup_work, 32.0, 1e-9);
  EXPECT_NEAR(p.speedup_model, 25.0, 1e-9);
  EXPECT_STREQ(p.limit, "DRAM");
}

// The suite's cases, made once (find returns references into it).
const std::vector<ScalingCase>& cases() {
  static const std::vector<ScalingCase> all = bench::scaling_cases();
  return all;
}

const ScalingCase& find(const std::vector<ScalingCase>& cs, const std::string& id) {
  for (const ScalingCase& c : cs)
    if (c.id == id) return c;
  ADD_FAILURE() << "no case " << id;
  return cs.front();
}

ScalingPoint at(const ScalingCase& c, int threads) {
  ScalingAssumptions a;
  ScalingPoint one, p;
  std::string err;
  EXPECT_TRUE(bench::scaling_point(c, 1, a, nullptr, &one, &err)) << err;
  if (threads == 1) return one;
  EXPECT_TRUE(bench::scaling_point(c, threads, a, &one, &p, &err)) << err;
  return p;
}

const ScalingPhase& phase(const ScalingPoint& p, const std::string& name) {
  for (const ScalingPhase& ph : p.phases)
    if (ph.name == name) return ph;
  ADD_FAILURE() << "no phase " << name;
  return p.phases.front();
}

TEST(ScalingPlans, EveryCasePlansAtEveryCount) {
  const std::vector<ScalingCase>& cs = cases();
  EXPECT_GE(cs.size(), 60u);
  for (const ScalingCase& c : cs)
    for (int n : {1, 8, 128}) {
      const ScalingPoint p = at(c, n);
      EXPECT_FALSE(p.phases.empty()) << c.id;
      EXPECT_GE(p.speedup_work, 1.0 - 1e-9) << c.id << " at " << n;
      EXPECT_LE(p.speedup_work, n + 1e-9) << c.id << " at " << n;
    }
}

// MLA decode B 1 N 128 L 4096: one work item (KV_N 1, all 128 heads in its rows); its units are
// the KV splits, min(threads, L / (2 x tile 64)) = 32 at 32 threads and still 32 at 128.
TEST(ScalingPlans, MlaDecodeSplitsCappedByLength) {
  const std::vector<ScalingCase>& cs = cases();
  const ScalingCase& c = find(cs, "fia.mla_decode.N128.L4096.B1");
  const ScalingPoint p8 = at(c, 8), p32 = at(c, 32), p128 = at(c, 128);
  EXPECT_EQ(phase(p8, "attention").units, 8);
  EXPECT_EQ(phase(p32, "attention").units, 32);
  EXPECT_EQ(phase(p32, "attention").tasks, 1);
  EXPECT_EQ(phase(p32, "attention").max_units, 1);
  EXPECT_NE(p32.plan.find("1 items"), std::string::npos) << p32.plan;
  EXPECT_NE(p32.plan.find("32 KV split(s)"), std::string::npos) << p32.plan;
  EXPECT_EQ(phase(p128, "attention").units, 32);
  EXPECT_NEAR(p128.speedup_work, 32.0, 1e-9);
  EXPECT_STREQ(p128.limit, "units");
  // L 1024: at most 8 splits
  EXPECT_EQ(phase(at(find(cs, "fia.mla_decode.N128.L1024.B1"), 32), "attention").units, 8);
}

// GQA decode B 8, 8 KV heads: 64 items; the decode kernel's head groups shrink to keep a task per
// thread (8 tasks of 8 at 8 threads, 32 of 2 at 32), and at 128 threads 64 tasks x 2 KV splits.
// Head groups are the AVX-512 BF16 decode and lane kernels' (kernels/cpu/attention/attn.h); the
// portable rows (aarch64, AVX2, scalar) run each item alone.
bool head_groups() {
  return mlaops::active_isa() == mlaops::Isa::kAvx512 && mlaops::cpu_features().avx512_bf16;
}

TEST(ScalingPlans, GqaDecodeGroupsAndSplits) {
  const ScalingCase& c = find(cases(), "fia.gqa_decode.bf16.B8");
  EXPECT_EQ(phase(at(c, 8), "attention").units, head_groups() ? 8 : 64);
  EXPECT_EQ(phase(at(c, 32), "attention").units, head_groups() ? 32 : 64);
  const ScalingPoint p = at(c, 128);
  EXPECT_EQ(phase(p, "attention").units, 128);
  EXPECT_EQ(phase(p, "attention").tasks, 64);
  EXPECT_NE(p.plan.find("64 items"), std::string::npos) << p.plan;
  EXPECT_NE(p.plan.find("2 KV split(s)"), std::string::npos) << p.plan;
  EXPECT_STREQ(p.limit, "DRAM");
}

// MlaPrologV2 bf16 N 128 T 1: the x projection's 96 + 36 panels of 16 columns (contiguous
// chunks) and 128 heads (one at a time).
TEST(ScalingPlans, MlaPrologPanelsAndHeads) {
  const ScalingCase& c = find(cases(), "mla_prolog.bf16.N128.T1");
  const ScalingPoint p = at(c, 32);
  EXPECT_EQ(phase(p, "x proj").units, 132);
  EXPECT_EQ(phase(p, "x proj").max_units, 5);
  EXPECT_EQ(phase(p, "heads").units, 128);
  EXPECT_EQ(phase(p, "heads").max_units, 4);
  EXPECT_EQ(phase(p, "rows").active, 1);  // one token: one thread
  const ScalingPoint q = at(c, 128);
  EXPECT_EQ(phase(q, "x proj").max_units, 2);
  EXPECT_EQ(phase(q, "heads").max_units, 1);
  // int8 weights: NZ panels of 32 columns, 48 + 18
  EXPECT_EQ(phase(at(find(cases(), "mla_prolog.int8.N32.T1024"), 32), "x proj").units, 66);
}

// MlaPreprocess N 32 T 1024: four chunks of 256 tokens, each 132 wdqkv groups and 32 heads.
TEST(ScalingPlans, MlaPreprocessChunks) {
  const ScalingPoint p = at(find(cases(), "mla_preprocess.int8.N32.T1024"), 128);
  EXPECT_EQ(phase(p, "wdqkv").units, 132);
  EXPECT_EQ(phase(p, "wdqkv").repeats, 4);
  EXPECT_EQ(phase(p, "heads").units, 32);
  EXPECT_EQ(phase(p, "heads").active, 32);
  for (const ScalingPhase& ph : p.phases) EXPECT_NE(ph.name, "wuq");  // prefill chunks: wuq per head
}

// MlaPreprocess N 128 T 1 (a decode chunk): the wuq GEMM of all heads first, 128 x 192 columns in
// 1536 groups of 16, split statically; the heads then run W_UK only.
TEST(ScalingPlans, MlaPreprocessDecodeWuqFirst) {
  const ScalingPoint p = at(find(cases(), "mla_preprocess.int8.N128.T1"), 32);
  EXPECT_EQ(phase(p, "wuq").units, 1536);
  EXPECT_EQ(phase(p, "wuq").max_units, 48);
  EXPECT_EQ(phase(p, "heads").units, 128);
  EXPECT_EQ(phase(p, "heads").ops_int8, 0.0);
}

// MLA prefill 128 x 4096, N 128: 128 items (one per head, 128 query rows each) run in head groups
// of 8 while there are at least as many tasks as threads.
TEST(ScalingPlans, MlaPrefillHeadGroups) {
  const ScalingCase& c = find(cases(), "fia.mla_prefill.T128.L4096.N128");
  EXPECT_EQ(phase(at(c, 8), "attention").units, head_groups() ? 16 : 128);
  EXPECT_EQ(phase(at(c, 32), "attention").units, head_groups() ? 32 : 128);
  const ScalingPoint p = at(c, 128);
  EXPECT_EQ(phase(p, "attention").units, 128);
  EXPECT_NEAR(p.speedup_work, 128.0, 1e-9);
}

}  // namespace
