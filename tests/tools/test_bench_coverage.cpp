// The performance coverage of `mlaops bench --coverage` (bench/coverage.h), its non-timing
// parts: every supported feature row of tests/support/fia_features.tsv has a coverage line (a
// case or a note), every case of the vendor's ST list is listed, the MLA tables' rows are there,
// the case ids are unique; the path read from a plan's explain(); the Markdown table's lines,
// percentages and flags on made-up rows. Timing results are never asserted.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/coverage.h"
#include "testkit/fia_test_data.h"

namespace {

using bench::CoverageEntry;

// The rows of fia_features.tsv with status "supported" (row<TAB>feature<TAB>status<TAB>tests).
std::set<int> supported_fia_rows() {
  const std::string tsv = bench::coverage_source_dir() + "/tests/support/fia_features.tsv";
  std::ifstream in(tsv);
  EXPECT_TRUE(in.good()) << tsv;
  std::set<int> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string x; std::getline(s, x, '\t');) f.push_back(x);
    if (f.size() >= 3 && f[2] == "supported") rows.insert(std::stoi(f[0]));
  }
  return rows;
}

TEST(BenchCoverage, EverySupportedFiaFeatureRowHasACoverageLine) {
  const std::set<int> want = supported_fia_rows();
  ASSERT_GE(want.size(), 30u);
  for (bench::Size size : {bench::Size::kTiny, bench::Size::kFull}) {
    const std::vector<CoverageEntry> fia = bench::coverage_fia(size, 2);
    const std::vector<int> got = bench::coverage_fia_row_ids(fia);
    EXPECT_EQ(std::set<int>(got.begin(), got.end()), want);
    for (const CoverageEntry& e : fia) {
      EXPECT_EQ(e.c.op, bench::kCovFia);
      EXPECT_NE(e.timed(), !e.note.empty()) << e.c.id << ": a case or a note, not both, not neither";
    }
  }
}

TEST(BenchCoverage, EntriesHaveUniqueIdsAndListTheTablesAndTheVendorCases) {
  const std::vector<CoverageEntry> all = bench::coverage_entries(bench::Size::kFull, 2);
  std::set<std::string> ids;
  std::map<std::string, int> per_op;
  int st = 0;
  for (const CoverageEntry& e : all) {
    EXPECT_TRUE(ids.insert(e.c.id).second) << "duplicate id " << e.c.id;
    ++per_op[e.c.op];
    st += e.row.rfind("vendor ST #", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(st, 165);  // every case of tests/ops/fia/data/fia_vendor_st_cases.txt
  // MlaProlog: 7 scenarios in PA_BSND + FULL_QUANT_KV_QUANT in PA_NZ + the 5 other cache modes, T 1 and 1024
  // + the 18 vendor shapes of test_mla_prolog_aclnn
  EXPECT_EQ(per_op[bench::kCovProlog], 26 + 18);
  // MlaPreprocess: cache modes 0..3, per-token quant, FP16 input, unquantised weights, T 1 and 1024
  // + the 8 vendor shapes of test_mla_preprocess_aclnn
  EXPECT_EQ(per_op[bench::kCovPreprocess], 14 + 8);
  std::set<std::string> floors;
  for (const bench::Case& c : bench::coverage_floor_cases(2)) floors.insert(c.op);
  EXPECT_EQ(floors, (std::set<std::string>{bench::kCovFia, bench::kCovProlog, bench::kCovPreprocess}));
}

TEST(BenchCoverage, PathOfExplain) {
  EXPECT_EQ(bench::path_of_explain("path: attention (skipped mla_quant: no INT8 query)\nshape: B 8\n"
                                   "kernel: 8 items of 1 query row(s): attn_avx512_decode (skipped attn_amx: no AMX)\n"
                                   "kernel: 2 items of 3 query row(s): attn_scalar_panel\n"),
            "attention; attn_avx512_decode");
  EXPECT_EQ(bench::path_of_explain("mla_preprocess: BF16 input\nkernels (isa avx512):\n"
                                   "  input @ wdqkv^T: gemm_s8_t_avx512\n  qn @ wuk per head: gemm_bf16_avx512\n"),
            "gemm_s8_t_avx512");
  EXPECT_EQ(bench::path_of_explain("mla_prolog: NO_QUANT\nkernels (isa avx512):\n  x projection [W_DQ | W_DKV_KR]: "
                                   "gemm_bf16_avx512\nGEMM routes: x @ [W_DQ | W_DKV_KR]: onednn-f32 (brg:avx512_core): "
                                   "measured per call: oneDNN 1 ms, own 2 ms; oneDNN is faster\n  c_Q' @ W_UQ_QR: own: x\n"),
            "onednn-f32 (brg:avx512_core)");
  EXPECT_EQ(bench::path_of_explain("mla_prolog: NO_QUANT\nkernels (isa avx512):\n  x projection: gemm_bf16_avx512\n"
                                   "GEMM routes: x @ [W_DQ | W_DKV_KR]: own: the setting says own\n"),
            "gemm_bf16_avx512");
  EXPECT_EQ(bench::path_of_explain("empty query or output: nothing to do\n"), "");
}

TEST(BenchCoverage, MarkdownTableHasOneLinePerEntryWithPercentagesAndFlags) {
  std::vector<CoverageEntry> entries(4);
  const char* ids[] = {"cov.a", "cov.b", "cov.c", "cov.d"};
  for (int i = 0; i < 4; ++i) {
    entries[static_cast<size_t>(i)].row = std::to_string(i + 1);
    entries[static_cast<size_t>(i)].feature = "feature | " + std::to_string(i + 1);
    entries[static_cast<size_t>(i)].c.id = ids[i];
    entries[static_cast<size_t>(i)].c.op = bench::kCovFia;
    entries[static_cast<size_t>(i)].c.label = "shape";
    entries[static_cast<size_t>(i)].c.run = [](bench::RunContext&) { return bench::Row{}; };
  }
  entries[2].c.run = nullptr;
  entries[2].note = "no execution path";
  std::vector<bench::Row> rows(3);
  rows[0].id = "cov.a", rows[0].best_us = 100, rows[0].median_us = 110, rows[0].bound_us = 50, rows[0].mem_bound = true;
  rows[0].path = "attention; attn_avx512_decode";
  rows[1].id = "cov.b", rows[1].best_us = 100, rows[1].median_us = 100, rows[1].bound_us = 10;
  rows[2].id = "cov.d", rows[2].error = "the plan failed";
  bench::Report rep;
  rep.cpu = "Test CPU";
  const std::string md = bench::coverage_markdown(rep, entries, rows, {{bench::kCovFia, 20.0}});
  std::vector<std::string> table;
  std::stringstream s(md);
  for (std::string l; std::getline(s, l);)
    if (l.rfind("| FusedInferAttentionScoreV4 |", 0) == 0) table.push_back(l);
  ASSERT_EQ(table.size(), 4u) << md;
  EXPECT_NE(md.find("Test CPU"), std::string::npos);
  EXPECT_NE(md.find("FusedInferAttentionScoreV4 20.0 us"), std::string::npos) << md;
  // row a: 50 / 100 = 50 % of bound, 70 / 100 = 70 % of bound + floor, not flagged; the '|' of
  // the feature written as '/'
  EXPECT_NE(table[0].find("| feature / 1 |"), std::string::npos) << table[0];
  EXPECT_NE(table[0].find("| attention; attn_avx512_decode | 100.0 | 110.0 | 50.0 (mem) | 20.0 | 50.0 | 70.0 |  |"),
            std::string::npos)
      << table[0];
  // row b: 10 % of bound, 30 % of bound + floor: flagged
  EXPECT_NE(table[1].find("| 10.0 (cmp) | 20.0 | 10.0 | 30.0 | **< 40 %** |"), std::string::npos) << table[1];
  EXPECT_NE(table[2].find("no time: no execution path"), std::string::npos) << table[2];
  EXPECT_NE(table[3].find("error: the plan failed"), std::string::npos) << table[3];
  EXPECT_NE(table[3].find("FAILED"), std::string::npos) << table[3];
}

// The work an FIA call's bound counts: 2 N (D + V_D) per (row, position) pair inside the row's
// band, counted by hand for B 1, N 2, Q_S 4, KV 6, D = V_D = 16.
TEST(BenchCoverage, FiaCallWorkCountsThePositionsEachRowSees) {
  using namespace mlaops::fia_test;
  const FiaCanonical c = make_canonical(mlaops::DType::kBFloat16, 1, 2, 2, 4, 6, 16, 16, 0, 3);
  const HostTensor tmpl = template_mask_2048(mlaops::DType::kBool, 2);
  struct Mode {
    int64_t mode, pre, next;
    double seen;  // pairs of one head
  };
  // rows 0..3: every position (24); left-up causal 1 + 2 + 3 + 4; right-down causal 3 + 4 + 5 + 6;
  // band (right-down origin, 1 before, 0 after) 2 + 2 + 2 + 2
  for (const Mode m : {Mode{0, 2147483647, 2147483647, 24}, Mode{2, 0, 0, 10}, Mode{3, 0, 0, 18}, Mode{4, 1, 0, 8}}) {
    FiaRunConfig cfg;
    cfg.layout = "BSND";
    cfg.sparse_mode = m.mode;
    cfg.pre_tokens = m.pre;
    cfg.next_tokens = m.next;
    if (m.mode >= 2) cfg.mask = &tmpl;
    const auto run = build_fia_run(c, cfg);
    double flops = -1, ops8 = -1;
    ASSERT_TRUE(bench::fia_call_work(run->params, &flops, &ops8)) << "mode " << m.mode;
    EXPECT_EQ(flops, 2.0 * 2 * m.seen * (16 + 16)) << "mode " << m.mode;
    EXPECT_EQ(ops8, 0.0);
  }
}

}  // namespace
