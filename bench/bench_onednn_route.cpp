// bench_onednn_route: could the prefill projections run on oneDNN's matmul (which picks AMX by
// itself on CPUs that have it) instead of the library's panel GEMMs? The question is whether
// oneDNN can read the operators' FRACTAL_NZ weights as they are passed, call after call:
//   * oneDNN's matmul on prepacked weights (format any, reordered once, outside the timing): the
//     peer `mlaops bench` compares against;
//   * the same matmul told the weights are NZ (int8 NZ is oneDNN's BA16a32b, bf16 NZ BA16a16b):
//     which implementation it picks (a "ref" one is not timed: it is the reference loop);
//   * the per-call reorder NZ -> prepacked it would need otherwise, direct or through ab;
//   * the library's own GEMM kernel (gemm.h, the active ISA) on the NZ weights, in 256-row chunks
//     as the operators run it.
// One thread by default (--threads N). Results: docs/performance.md ("A oneDNN route").
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/cpu/gemm/gemm.h"
#include "mlaops/runtime.h"

#ifdef MLAOPS_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

struct Shape {
  const char* name;
  bool int8;
  int64_t M, K, N;
};

template <class F>
double best_of(int reps, F&& f) {
  return bench::time_it(f, reps).best;
}

void run(const Shape& s, int reps) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream st(eng);
  const Dt w_dt = s.int8 ? Dt::s8 : Dt::bf16;
  const memory::desc a_md({s.M, s.K}, w_dt, Tag::ab), c_md({s.M, s.N}, s.int8 ? Dt::s32 : Dt::f32, Tag::ab);
  const Tag nz_tag = s.int8 ? Tag::BA16a32b : Tag::BA16a16b;
  const double work = 2.0 * double(s.M) * double(s.K) * double(s.N);
  const char* unit = s.int8 ? "GOP/s" : "GFLOP/s";

  // prepacked
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, memory::desc({s.K, s.N}, w_dt, Tag::any), c_md), eng);
  memory A(a_md, eng), C(c_md, eng), Wp(pd.weights_desc(), eng), Wnz(memory::desc({s.K, s.N}, w_dt, nz_tag), eng),
      Wab(memory::desc({s.K, s.N}, w_dt, Tag::ab), eng);
  std::memset(A.get_data_handle(), 1, a_md.get_size());
  std::memset(Wp.get_data_handle(), 1, pd.weights_desc().get_size());
  std::memset(Wnz.get_data_handle(), 1, Wnz.get_desc().get_size());
  dnnl::matmul mm(pd);
  const double t_packed = best_of(reps, [&] {
    mm.execute(st, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, Wp}, {DNNL_ARG_DST, C}});
    st.wait();
  });
  std::printf("%-34s oneDNN prepacked   %-26s %9.2f ms  %6.1f %s\n", s.name, pd.impl_info_str(), t_packed * 1e3,
              work / t_packed / 1e9, unit);

  // told the weights are NZ
  dnnl::matmul::primitive_desc pd_nz(dnnl::matmul::desc(a_md, Wnz.get_desc(), c_md), eng);
  const std::string nz_impl = pd_nz.impl_info_str();
  if (nz_impl.find("ref") != std::string::npos) {
    std::printf("%-34s oneDNN on NZ       %-26s (the reference loop: not timed)\n", s.name, nz_impl.c_str());
  } else {
    dnnl::matmul mm_nz(pd_nz);
    const double t = best_of(reps, [&] {
      mm_nz.execute(st, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, Wnz}, {DNNL_ARG_DST, C}});
      st.wait();
    });
    std::printf("%-34s oneDNN on NZ       %-26s %9.2f ms  %6.1f %s\n", s.name, nz_impl.c_str(), t * 1e3, work / t / 1e9, unit);
  }

  // the per-call reorders
  auto reorder_time = [&](memory& from, memory& to, const char* what) {
    try {
      dnnl::reorder::primitive_desc rpd(eng, from.get_desc(), eng, to.get_desc());
      dnnl::reorder r(rpd);
      const double t = best_of(reps, [&] {
        r.execute(st, from, to);
        st.wait();
      });
      std::printf("%-34s reorder %-10s %-26s %9.2f ms  (%.1f%% of the prepacked GEMM)\n", s.name, what,
                  rpd.impl_info_str(), t * 1e3, 100.0 * t / t_packed);
    } catch (const dnnl::error&) {
      std::printf("%-34s reorder %-10s none available\n", s.name, what);
    }
  };
  reorder_time(Wnz, Wp, "NZ->packed");
  reorder_time(Wnz, Wab, "NZ->ab");
  reorder_time(Wab, Wp, "ab->packed");

  // the library's kernel on the NZ weights (every column, on this thread)
  using namespace mlaops::kernels;
  const int64_t width = s.int8 ? 32 : 16;
  const GemmFn fn = gemm_pick(s.int8 ? gemm_s8_family() : gemm_bf16_family(), mlaops::active_isa(),
                              {gemm_layout(width, width)});
  std::vector<unsigned char> a(static_cast<size_t>(s.M * s.K * (s.int8 ? 1 : 2)), 1);
  std::vector<unsigned char> w(static_cast<size_t>(s.K * s.N * (s.int8 ? 1 : 2)), 1);
  std::vector<float> c(static_cast<size_t>(s.M * s.N));
  const GemmKind kind = s.int8 ? GemmKind::kS8 : GemmKind::kBf16;
  std::vector<unsigned char> scratch(static_cast<size_t>(std::max<int64_t>(64, gemm_scratch_bytes(kind, s.M, s.K, s.N))) + 64);
  GemmArgs g;
  g.M = s.M, g.N = s.N, g.K = s.K;
  g.A = a.data(), g.lda = s.K;
  g.B = w.data(), g.ldb = width, g.panel_stride = s.K * width, g.panel_width = width;
  g.C = c.data(), g.ldc = s.N;
  g.n_begin = 0, g.n_end = s.N;
  g.scratch = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
  // in chunks of kChunk rows, as the operators' plans run their projections (MlaPrologV2: 256)
  constexpr int64_t kChunk = 256;
  const double t_ours = best_of(reps, [&] {
    for (int64_t m0 = 0; m0 < s.M; m0 += kChunk) {
      GemmArgs gc = g;
      gc.M = std::min(kChunk, s.M - m0);
      gc.A = a.data() + m0 * s.K * (s.int8 ? 1 : 2);
      gc.C = c.data() + m0 * s.N;
      fn(gc);
    }
  });
  std::printf("%-34s mlaops on NZ       %-26s %9.2f ms  %6.1f %s  (oneDNN prepacked / mlaops %.2f)\n", s.name,
              mlaops::isa_name(mlaops::active_isa()), t_ours * 1e3, work / t_ours / 1e9, unit, t_packed / t_ours);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  }
  omp_set_num_threads(threads);
  std::printf("bench_onednn_route: oneDNN %d.%d.%d, %d thread(s) for oneDNN, the library's kernel on this thread\n",
              dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, threads);
  const Shape shapes[] = {{"int8 W_DQ  1024 x 7168 x 1536", true, 1024, 7168, 1536},
                          {"int8 W_UQ_QR N 32 1024 x 1536 x 6144", true, 1024, 1536, 6144},
                          {"bf16 W_DQ  1024 x 7168 x 1536", false, 1024, 7168, 1536}};
  for (const Shape& s : shapes) run(s, reps);
  return 0;
}

#else
int main() {
  std::printf("bench_onednn_route: not built with oneDNN (install libdnnl-dev and rebuild)\n");
  return 0;
}
#endif
