// `mlaops check` (golden mode), the parts every op shares: the flags table and the option parser
// (check_common.cpp, with the flat JSON reader), the .npy save / load helpers, and the per-output
// comparison, report and verdict. One file per op builds its case, runs the fast path and the
// reference, and hands its outputs to finish(): check_mla_prolog.cpp, check_fia.cpp,
// check_mla_preprocess.cpp; cmd_check.cpp dispatches. docs/cli.md.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "mlaops/dtype.h"
#include "mlaops/plan.h"
#include "mlaops/status.h"
#include "mlaops/tensor_view.h"
#include "testkit/compare.h"
#include "tools/npy.h"

namespace mlaops::tools::check {

// The ops.
constexpr const char* kProlog = "mla_prolog_v2";
constexpr const char* kFia = "fia_v4";
constexpr const char* kPreprocess = "mla_preprocess";

// Thrown for bad arguments / files (exit 2).
struct UsageError {
  std::string msg;
};
[[noreturn]] void bad(const std::string& msg);

// ---- options ----

// The resolved options: the op, the flags the user set (the JSON file, then the command line),
// and the control flags. Accessors fall back to the flag's default and throw UsageError (with
// the flag's name) for a malformed or out-of-range value.
struct Options {
  std::string op;
  std::map<std::string, std::string> given;  // flags set by the user (JSON, then command line)
  std::string from_dir, save_dir;
  bool explain = false;  // --explain: print the fast path's plan (explain_plan)

  bool has(const std::string& name) const { return given.count(name) != 0; }
  std::string raw(const std::string& name) const;  // the value, else the default ("" = unset)
  bool set(const std::string& name) const { return !raw(name).empty(); }
  int64_t i64(const std::string& name, int64_t lo, int64_t hi = INT64_MAX) const;
  double num(const std::string& name) const;
  bool flag(const std::string& name) const;
  std::vector<int64_t> list(const std::string& name, int64_t lo) const;
  std::string choice(const std::string& name, std::initializer_list<const char*> allowed) const;
};

// `mlaops check --help`.
std::string usage();
// Parses the arguments after `check` (and the --json file); validates the op and that every
// flag applies to it.
Options parse_args(int argc, char** argv);
// case.json: the op, the seed and every case flag with a value (except those in `skip`).
void write_case_json(const Options& o, const std::string& path, const std::vector<std::string>& skip);

// ---- files ----

std::string shape_str(const TensorView& t);
// A 2-D FRACTAL_NZ view with 4-D storage dims is stored (and saved) as its 4-D storage.
TensorView storage_view(const TensorView& v);
// Replaces a (dense) case input with DIR/<name>.npy when that file exists; its dtype and shape
// must be the case's. Returns true if it was read.
bool load_input(const std::string& dir, const std::string& name, const TensorView& dst);
bool load_int_array(const std::string& dir, const std::string& name, std::vector<int64_t>* dst);
// An output saved by another implementation: the case's shape; the case's dtype or (for float
// outputs) any float dtype.
NpyArray load_output(const std::string& dir, const std::string& name, const TensorView& like);
void save(const std::string& dir, const std::string& name, const TensorView& t);
void save_ints(const std::string& dir, const std::string& name, const std::vector<int64_t>& v);
void make_dir(const std::string& dir);

// ---- comparison and report ----

enum class Rule {
  kTolerance,  // testing::within(compare(got, ref, tol)) (testkit/compare.h)
  kLse,        // the FIA harness's softmaxLse rule: |d| <= 1e-4 |ref| + 1e-5, +-inf positions equal
  kVendor,     // the MlaPreprocess harness (the vendor's rule, docs/ops/mla_preprocess.md): float: at most 0.1 % of the elements beyond
               // max(0.003 |ref|, 0.003); int8: every element within +-1
};

struct OutputCheck {
  std::string name;
  TensorView got, ref;
  testing::Tolerance tol;
  Rule rule = Rule::kTolerance;
  const TensorView* initial = nullptr;  // in/out tensors: the content before the call
  DType out_dtype = DType::kUndefined;  // the operator's dtype (undefined: ref.dtype)
};

// Reports every output; prints the result line and returns the exit status (0 all PASS, 1).
int finish(const std::vector<OutputCheck>& checks);
// "compared: <api> (isa, threads) vs the float64 reference" or the --from-files directory.
void print_fast_path_line(const Options& o, const char* api);
// With --explain: the plan the fast path made for the case (OpPlan::explain()), or why it
// refused the case (`planned`: the planning status).
void explain_plan(const Options& o, Status planned, const OpPlan& plan);

// ---- the ops (one file each) ----

int check_mla_prolog(const Options& o);
int check_fia(const Options& o);
int check_mla_preprocess(const Options& o);

}  // namespace mlaops::tools::check
