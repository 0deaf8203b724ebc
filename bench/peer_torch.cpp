// The PyTorch peer of the benchmark suite (suite.h): GQA decode through
// torch.nn.functional.scaled_dot_product_attention (the CPU flash-attention kernel of
// torch >= 2.1), run by a child Python process because torch is a Python library. Two forms are
// timed and the faster one reported: K / V repeated per query group (outside the timing; takes
// the flash kernel) and, from torch 2.5, enable_gqa=True (measured 5x slower on torch 2.5.1 here:
// it takes the unfused math path). The script prints one JSON line
// {"best_us": .., "median_us": .., "torch": "<version>"} or {"error": ".."}.
#include <cstdio>
#include <string>

#include "bench/peer_python.h"
#include "bench/suite.h"

namespace bench {
namespace {

const char* kScript = R"PY(
import json, sys, time
try:
    import torch
    import torch.nn.functional as F
except Exception as e:
    print(json.dumps({"error": "torch not importable: %s" % e})); sys.exit(0)
B, N, KVN, D, L, reps, threads = (int(a) for a in sys.argv[1:8])
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(1)
q = torch.rand(B, N, 1, D, generator=g, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
k = torch.rand(B, KVN, L, D, generator=g, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
v = torch.rand(B, KVN, L, D, generator=g, dtype=torch.float32).mul_(2).sub_(1).to(torch.bfloat16)
gqa = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)
kr = k.repeat_interleave(N // KVN, dim=1).contiguous()  # outside the timing
vr = v.repeat_interleave(N // KVN, dim=1).contiguous()
forms = {"K/V repeated per group": lambda: F.scaled_dot_product_attention(q, kr, vr, scale=D ** -0.5)}
if gqa:
    forms["enable_gqa"] = lambda: F.scaled_dot_product_attention(q, k, v, scale=D ** -0.5, enable_gqa=True)
best = None
for name, run in forms.items():
    with torch.no_grad():
        run()
        t = []
        for _ in range(reps):
            t0 = time.perf_counter(); run(); t.append((time.perf_counter() - t0) * 1e6)
    t.sort()
    if best is None or t[0] < best[1]:
        best = (name, t[0], t[len(t) // 2])
print(json.dumps({"best_us": best[1], "median_us": best[2], "torch": torch.__version__, "gqa": best[0]}))
)PY";

}  // namespace

PeerTime torch_sdpa_peer(const std::string& python, int64_t B, int64_t N, int64_t KVN, int64_t D, int64_t L,
                         int reps, int threads) {
  PeerTime p;
  p.name = "torch SDPA";
  char args[160];
  std::snprintf(args, sizeof args, " %lld %lld %lld %lld %lld %d %d", (long long)B, (long long)N, (long long)KVN,
                (long long)D, (long long)L, reps, threads);
  std::string why;
  const std::string line = run_python_json(python, kScript, args, &why);
  if (line.empty()) {
    p.note = why;
    return p;
  }
  const std::string err = json_string(line, "error");
  if (!err.empty()) {
    p.note = err.substr(0, 200);
    return p;
  }
  p.best_us = json_number(line, "best_us");
  p.median_us = json_number(line, "median_us");
  p.note = "torch " + json_string(line, "torch") + ", contiguous K/V, " + json_string(line, "gqa");
  return p;
}

}  // namespace bench
