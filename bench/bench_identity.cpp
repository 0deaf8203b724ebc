// bench_identity: the before / after proof of a refactor (docs/performance.md, "Proving a change
// changes nothing"). It uses only the installed public API (include/mlaops/*.h), so the same
// source compiles against an old and a new build of the library (scripts/compare_builds.sh).
//
//   bench_identity digest [--isa scalar|avx2|avx512|all] [--threads N|all] [--filter SUBSTR]
//       Runs a broad, deterministic set of cases (fixed seeds) of FusedInferAttentionScoreV4,
//       MlaProlog (V1 / V2 / V3) and MlaPreprocess and prints one line per case and setting:
//       "<isa> t<threads> <case> <hash>", the hash a 64-bit FNV-1a of every output and cache
//       byte, or "ERR <status> <message>" when the call is refused. Default: every ISA level the
//       host can run (mlaops::runnable_isas()) under 1 and 2 threads.
//   bench_identity callgrind CASE [--isa LEVEL] [--threads N]
//       Builds CASE (see `bench_identity list`), runs it once to warm, then once between
//       CALLGRIND_START_INSTRUMENTATION / CALLGRIND_STOP_INSTRUMENTATION; meant for
//       `valgrind --tool=callgrind --instr-atstart=no`. One thread unless --threads says else.
//   bench_identity list
//       The callgrind cases.
#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/identity_common.h"
#include "bench/identity_fia.h"
#include "bench/identity_mla.h"
#include "mlaops/runtime.h"
#include "mlaops/status.h"

namespace bench_identity {
namespace {

std::vector<Case> digest_cases() {
  std::vector<Case> out;
  fia_cases(out);
  prolog_cases(out);
  preprocess_cases(out);
  return out;
}

// ---- the callgrind cases (the bench's main rows, bench/case_defs.h, shrunk where a row would
// take over ~2 min under callgrind on a 2-core host; docs/performance.md lists them) ----

std::unique_ptr<Prepared> callgrind_case(const std::string& name) {
  if (name == "mla_decode") {  // MLA decode: N 32, L 4096, B 1, paged BnNBsD, BNSD_NBSD, LSE
    FiaCfg c;
    c.D = c.Dv = 512, c.Dr = 64, c.N = 32, c.KVN = 1, c.B = 1, c.QS = 1, c.KVS = 4096, c.kv = Kv::kBnNBsD, c.bs = 128;
    c.layout = "BNSD_NBSD", c.lse = true;
    return build_fia(c);
  }
  if (name == "gqa_decode") {  // GQA decode: 32q / 8kv, D 128, L 4096, B 8, paged BnBsH, BNSD
    FiaCfg c;
    c.N = 32, c.KVN = 8, c.D = c.Dv = 128, c.B = 8, c.QS = 1, c.KVS = 4096, c.kv = Kv::kBnBsH, c.bs = 128;
    c.layout = "BNSD";
    return build_fia(c);
  }
  if (name == "mla_prefill") {  // MLA prefill: T 128, L 1024 (bench: 4096), N 16 (bench: 128), TND, causal
    FiaCfg c;
    c.D = c.Dv = 128, c.Dr = 64, c.N = 16, c.KVN = 16, c.B = 1, c.QS = 128, c.KVS = 1024, c.kv = Kv::kBnBsH, c.bs = 128;
    c.layout = "TND", c.sparse = 3, c.mask = 3;
    return build_fia(c);
  }
  // MlaPrologV2 bf16, DeepSeek-V3 dims, N 32, T 1 and T 64 (the bench's T 1024 row shrunk: T <= 256
  // is one chunk of tokens); prolog_t1024, the row itself (4 chunks), is not in the default list:
  // about 20 minutes a side under callgrind on the 2-core host (CASES=prolog_t1024 runs it)
  if (name == "prolog_t1" || name == "prolog_t64" || name == "prolog_t1024") {
    PrologCfg c;
    c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 32, c.bs = 128;
    c.B = name == "prolog_t1" ? 1 : name == "prolog_t64" ? 64 : 1024, c.S = 1;
    return build_prolog(c);
  }
  if (name == "preprocess") {  // MlaPreprocess W8A8, cacheMode 1, DeepSeek-V3 dims, N 32, T 32
    PreCfg c;
    c.He = 7168, c.Hcq = 1536, c.Hckv = 512, c.D = 128, c.Dr = 64, c.N = 32, c.T = 32, c.bs = 128, c.blocks = 1;
    c.cm = mlaops::MlaPreprocessCacheMode::kKropeCtkv;
    return build_pre(c);
  }
  return nullptr;
}

const char* const kCallgrindCases[] = {"mla_decode", "gqa_decode", "mla_prefill", "prolog_t1", "prolog_t64", "preprocess"};

// ---- main ----

int usage() {
  std::fprintf(stderr,
               "usage: bench_identity digest [--isa scalar|avx2|avx512|all] [--threads N|all] [--filter SUBSTR]\n"
               "       bench_identity callgrind CASE [--isa LEVEL] [--threads N]\n"
               "       bench_identity list\n");
  return 2;
}

std::string result_of(Prepared& P) {
  mlaops::Status s = P.prepare();
  if (s == mlaops::kSuccess) s = P.call();
  if (s != mlaops::kSuccess) return "ERR " + std::to_string(static_cast<int>(s)) + " " + mlaops::last_error_message();
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(P.digest()));
  return buf;
}

}  // namespace
}  // namespace bench_identity

int main(int argc, char** argv) {
  using namespace bench_identity;
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  std::string isa_arg = "all", threads_arg = "all", filter, case_name;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--isa" && i + 1 < argc) isa_arg = argv[++i];
    else if (a == "--threads" && i + 1 < argc) threads_arg = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (mode == "callgrind" && case_name.empty()) case_name = a;
    else return usage();
  }
  if (mode == "list") {
    for (const char* c : kCallgrindCases) std::printf("%s\n", c);
    return 0;
  }
  std::vector<mlaops::Isa> isas;
  if (isa_arg == "all") {
    isas = mlaops::runnable_isas();
  } else {
    mlaops::Isa isa;
    if (!mlaops::parse_isa(isa_arg.c_str(), &isa)) return usage();
    isas = {isa};
  }
  std::vector<int> threads;
  if (threads_arg == "all") threads = {1, 2};
  else threads = {std::atoi(threads_arg.c_str())};
  if (mode == "callgrind") {
    std::unique_ptr<Prepared> P = callgrind_case(case_name);
    if (!P) return usage();
    if (isa_arg != "all" && !mlaops::set_isa(isas[0])) {
      std::fprintf(stderr, "bench_identity: this host cannot run %s\n", isa_arg.c_str());
      return 1;
    }
    mlaops::set_num_threads(threads_arg == "all" ? 1 : threads[0]);
    mlaops::Status s = P->prepare();
    if (s == mlaops::kSuccess) s = P->call();  // warm: first-use detection, thread pool, pages
    if (s == mlaops::kSuccess) {
      CALLGRIND_START_INSTRUMENTATION;
      s = P->call();
      CALLGRIND_STOP_INSTRUMENTATION;
    }
    if (s != mlaops::kSuccess) {
      std::fprintf(stderr, "bench_identity: %s: %s\n", case_name.c_str(), mlaops::last_error_message());
      return 1;
    }
    std::printf("%s isa=%s threads=%d digest=%016llx\n", case_name.c_str(), mlaops::isa_name(mlaops::active_isa()),
                mlaops::num_threads(), static_cast<unsigned long long>(P->digest()));
    return 0;
  }
  if (mode != "digest") return usage();
  const std::vector<Case> cases = digest_cases();
  int errors = 0;
  for (mlaops::Isa isa : isas) {
    if (!mlaops::set_isa(isa)) {
      std::fprintf(stderr, "bench_identity: this host cannot run %s\n", mlaops::isa_name(isa));
      return 1;
    }
    for (int t : threads) {
      mlaops::set_num_threads(t);
      for (const Case& c : cases) {
        if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
        std::unique_ptr<Prepared> P = c.build();
        const std::string r = result_of(*P);
        if (r.compare(0, 4, "ERR ") == 0) ++errors;
        std::printf("%s t%d %s %s\n", mlaops::isa_name(isa), t, c.name.c_str(), r.c_str());
        std::fflush(stdout);
      }
    }
  }
  std::fprintf(stderr, "bench_identity: %zu cases x %zu ISA levels x %zu thread counts, %d refused\n", cases.size(),
               isas.size(), threads.size(), errors);
  return 0;
}
