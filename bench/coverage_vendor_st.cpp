// The vendor system-test shapes of the performance coverage (coverage.h): every case of the
// vendor's FusedInferAttentionScoreV4 ST list (tests/ops/fia/data/fia_vendor_st_cases.txt, the
// list test_fia_vendor_st replays), materialised by the test kit (testkit/fia_vendor_st.h), its
// call planned once and the plan's runs timed. These are small shapes where the per-call floor
// dominates; the bound is the bytes of the case's tensors at the DRAM rate (no FLOP count: the
// list's masks, paged pools and lengths vary per case). A case whose tensors exceed the run's
// data limit (3 GiB: every case of today's list; --tiny: 4 MiB) is listed with a note instead of a time.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/coverage.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/plan.h"
#include "testkit/fia_vendor_st.h"

namespace bench {
namespace {

#ifndef MLAOPS_REPO_DIR
#define MLAOPS_REPO_DIR "."
#endif

double case_bytes(const mlaops::vendor_st::StCase& c) {
  double b = 0;
  for (const mlaops::vendor_st::TensorSpec& t : c.tensors)
    b += static_cast<double>(t.numel()) * static_cast<double>(std::max<int64_t>(mlaops::dtype_size(t.dtype), 1));
  return b;
}

Row run_st(const mlaops::vendor_st::StCase& c, int reps) {
  const std::unique_ptr<mlaops::vendor_st::StData> d = mlaops::vendor_st::materialise(c);
  Row r = time_fia_plan(d->p, reps);
  r.bytes = case_bytes(c);
  return r;
}

}  // namespace

std::string coverage_source_dir() { return MLAOPS_REPO_DIR; }
std::string vendor_st_list_path() { return coverage_source_dir() + "/tests/ops/fia/data/fia_vendor_st_cases.txt"; }

std::vector<CoverageEntry> coverage_vendor_st(Size size, int threads) {
  std::vector<CoverageEntry> out;
  const std::string path = vendor_st_list_path();
  CoverageEntry e;
  e.c.op = kCovFia;
  if (!std::ifstream(path)) {
    e.row = "vendor ST";
    e.feature = "the vendor's system-test list";
    e.note = "not found at " + path + " (the source tree the command was built from)";
    e.c.id = "cov.fia_st.missing";
    out.push_back(e);
    return out;
  }
  const double limit = (size == Size::kTiny ? 4.0 : 3072.0) * double(1 << 20);
  for (const mlaops::vendor_st::StCase& c : mlaops::vendor_st::load_cases(path.c_str())) {
    CoverageEntry x = e;
    x.row = "vendor ST #" + std::to_string(c.id);
    const mlaops::vendor_st::TensorSpec* q = c.tensor("query");
    const mlaops::vendor_st::TensorSpec* k = c.tensor("key");
    x.feature = c.attr("inputLayout", "BSH") + ", sparse " + c.attr("sparseMode", "0") +
                (q ? std::string(", query ") + mlaops::dtype_name(q->dtype) : "") +
                (k ? std::string(", key ") + mlaops::dtype_name(k->dtype) : "") + (c.tensor("bt") ? ", paged" : "");
    std::string shape = "N=" + c.attr("numHeads", "1") + " KV_N=" + c.attr("numKeyValueHeads", "0");
    for (const char* name : {"query", "key"})
      if (const mlaops::vendor_st::TensorSpec* t = c.tensor(name)) {
        shape += std::string(" ") + name + " [";
        for (size_t i = 0; i < t->dims.size(); ++i) shape += (i ? "," : "") + std::to_string(t->dims[i]);
        shape += "]";
      }
    x.c.id = "cov.fia_st." + std::to_string(c.id) + ".t" + std::to_string(threads);
    const double bytes = case_bytes(c);
    if (bytes > limit) {
      char b[160];
      std::snprintf(b, sizeof b, "not timed: %.0f MiB of tensors, beyond this run's %.0f MiB per case (%s)",
                    bytes / (1 << 20), limit / (1 << 20), shape.c_str());
      x.note = b;
      x.c.id = "cov.fia_st." + std::to_string(c.id) + ".note";
      out.push_back(std::move(x));
      continue;
    }
    x.c.label = "FIA vendor ST #" + std::to_string(c.id) + " " + shape;
    x.c.threads = threads;
    x.c.run = [c](RunContext& ctx) { return run_st(c, std::max(ctx.reps, 5)); };
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace bench
