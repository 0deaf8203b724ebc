// The vendor system-test shapes of the performance coverage (coverage.h): every case of the
// vendor's FusedInferAttentionScoreV4 ST list (tests/ops/fia/data/fia_vendor_st_cases.txt, the
// list test_fia_vendor_st replays), materialised by the test kit (testkit/fia_vendor_st.h), its
// call planned once and the plan's runs timed. These are small shapes where the per-call floor
// dominates; the bound is the usual max(bytes / DRAM, work / compute) with the bytes of the case's
// tensors and the work of the positions each query row sees (fia_call_work, coverage.h). A case
// whose tensors exceed the run's data limit (3 GiB: every case of today's list; --tiny: 4 MiB) is
// listed with a note instead of a time.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/coverage.h"
#include "mlaops/fused_infer_attention_score.h"
#include "ops/fia/fia.h"
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
  fia_call_work(d->p, &r.flops_bf16, &r.ops_int8);
  return r;
}

}  // namespace

bool fia_call_work(const mlaops::FiaParams& p, double* flops_bf16, double* ops_int8) {
  *flops_bf16 = *ops_int8 = 0;
  mlaops::FiaCall call;
  if (mlaops::fia_check(p, mlaops::FiaCheckOptions{}, &call) != mlaops::kSuccess) return false;
  if (call.noop || call.empty_kv) return true;
  double seen = 0;  // (query row, KV position) pairs of one head inside the row's band
  for (int64_t b = 0; b < call.B; ++b) {
    int64_t lo = 0, hi = 0;
    mlaops::fia_row_deltas(call, b, &lo, &hi);
    const int64_t kv = call.act_kv[static_cast<size_t>(b)] + call.prefix.len;
    for (int64_t i = 0; i < call.act_q[static_cast<size_t>(b)]; ++i) {
      const int64_t first = std::max<int64_t>(0, i + std::max<int64_t>(lo, -kv));
      const int64_t last = std::min<int64_t>(kv - 1, i + std::min<int64_t>(hi, kv));
      if (last >= first) seen += static_cast<double>(last - first + 1);
    }
  }
  const double per = 2.0 * static_cast<double>(call.N) * seen;  // FLOPs per channel of the two products
  if (call.full_quant) {
    *ops_int8 = per * static_cast<double>(call.QD + call.VD);
  } else if (call.mq.on) {  // MLA full quant: q . k on the int8 units, the rope part and P . V in bf16
    *ops_int8 = per * static_cast<double>(call.QD);
    *flops_bf16 = per * static_cast<double>(call.DR + call.VD);
  } else {
    *flops_bf16 = per * static_cast<double>(call.QD + call.DR + call.VD);
  }
  return true;
}

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
