// The performance coverage of `mlaops bench --coverage` (docs/performance.md "Performance
// coverage", docs/cli.md): every supported feature row of the operators timed at a
// serving-sized shape through the suite's machinery (suite.h: Case, Row, run_one, the report and
// the JSON), each against its roofline bound and against that bound plus the operator's per-call
// floor, the time of a minimal valid call of the same operator measured in the same run.
//
//   * FusedInferAttentionScoreV4: one or more cases per row of tests/support/fia_features.tsv
//     (coverage_fia.cpp); rows that are no execution path (validation, empty tensors, fully
//     masked rows) are entries with a note instead of a case, never missing.
//   * MlaPrologV2 / V3: every quant scenario and every cache mode (coverage_mla.cpp).
//   * MlaPreprocess: every cache mode, both quant modes, FP16 / BF16 input and the unquantised
//     path (coverage_mla.cpp).
//   * the MlaProlog / MlaPreprocess vendor shapes of the operator tests (coverage_mla.cpp).
//   * the vendor's FIA system-test shapes (coverage_vendor_st.cpp), small: the floor dominates.
//   * the per-call floors: one tiny case per operator (coverage_mla.cpp).
// The Markdown table (coverage_report.cpp) has one line per entry.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench/suite.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/plan.h"
#include "mlaops/status.h"

namespace bench {

// The operators' names in the table and the floor case of each (Case::op).
inline constexpr const char* kCovFia = "fia";
inline constexpr const char* kCovProlog = "mla_prolog";
inline constexpr const char* kCovPreprocess = "mla_preprocess";

// One line of the coverage table: a timed case, or a note saying why the row has no time.
struct CoverageEntry {
  std::string row;      // FIA: the feature row id of fia_features.tsv ("5"); MLA: the table row ("NO_QUANT")
  std::string feature;  // the row's name
  std::string note;     // untimed rows: why (no case)
  Case c;               // timed rows: the case (c.op one of the kCov* names); c.run empty when untimed
  bool timed() const { return static_cast<bool>(c.run); }
};

std::vector<CoverageEntry> coverage_fia(Size size, int threads);
std::vector<CoverageEntry> coverage_mla_prolog(Size size, int threads);
std::vector<CoverageEntry> coverage_mla_preprocess(Size size, int threads);
// The MlaProlog / MlaPreprocess vendor shapes of the operator tests (--tiny: the first of each timed).
std::vector<CoverageEntry> coverage_mla_vendor(Size size, int threads);
// The vendor's FIA system-test list (coverage_vendor_st.cpp; vendor_st_list_path: where it is read).
std::vector<CoverageEntry> coverage_vendor_st(Size size, int threads);
std::string vendor_st_list_path();
// The source tree the suite was built from (where the vendor list and fia_features.tsv are).
std::string coverage_source_dir();
// Every entry: FIA, the FIA vendor ST cases, MlaProlog, MlaPreprocess, then their vendor shapes.
std::vector<CoverageEntry> coverage_entries(Size size, int threads);

// The per-call floor cases, one per operator (id "floor.<op>", op the kCov* name): a minimal
// valid call (one token / query row, a few KV positions, the smallest heads the operator takes).
std::vector<Case> coverage_floor_cases(int threads);
Case coverage_fia_floor(int threads);  // the FIA one (coverage_fia.cpp)

// Plans the FIA call `p` once, then times `reps` runs of the plan (after a warm-up run): best /
// median, the path from the plan's explain(), or the error (coverage_fia.cpp).
Row time_fia_plan(const mlaops::FiaParams& p, int reps);
// `planned` is the status of planning `plan`: on success sets r.path from the plan's explain()
// and returns true, else sets r.error to the library's message (coverage_report.cpp).
bool plan_path(Row& r, mlaops::Status planned, const mlaops::OpPlan& plan);

// The work of an FIA call for its bound: 2 N (D + D_rope + V_D) FLOPs per (query row, KV position)
// pair inside the row's band (sparse modes 2 / 3 / 4, preTokens / nextTokens, the shared prefix
// counted as KV positions; an explicit or tree mask counts the whole band: the kernels evaluate
// it per score), split between the int8 units (INT8 full quant: both products; MLA full quant:
// q . k) and the bf16 ones (the rest; FP16 counted at the bf16 rate). False (and 0) when the
// call is rejected by the rules (coverage_vendor_st.cpp).
bool fia_call_work(const mlaops::FiaParams& p, double* flops_bf16, double* ops_int8);

// What the plan says it will run, in a few words: the FIA "path:" line and the kernel of its
// first kind of item, or the first kernel listed under "kernels (isa ...)" (MlaProlog /
// MlaPreprocess; the first GEMM product's oneDNN route instead, when it takes one); "" when the
// explain text has neither.
std::string path_of_explain(const std::string& explain);

// Below this % of bound + floor a row is flagged in the table (the target of docs/performance.md
// "Performance coverage": no supported path below it at serving sizes).
inline constexpr double kCoverageFlagPct = 40.0;

// The Markdown table: a header naming the host, the limits and the floors, then one line per
// entry (operator, row, feature, shape, path, best / median us, bound us (mem / cmp), floor us,
// % of bound, % of bound + floor, flag). `rows` are the measured rows (matched by case id),
// `floor_us` the best time of each operator's floor case (by Case::op).
std::string coverage_markdown(const Report& rep, const std::vector<CoverageEntry>& entries,
                              const std::vector<Row>& rows, const std::map<std::string, double>& floor_us);

// The FIA feature row ids the entries cover (timed or with a note), sorted, unique.
std::vector<int> coverage_fia_row_ids(const std::vector<CoverageEntry>& entries);

}  // namespace bench
