// bench_mla_preprocess: the MlaPreprocess cases with the oneDNN peer (bench/cases_mla_preprocess.cpp) of the benchmark suite,
// bounds from --bw / --bf16 / --int8 (`mlaops bench` runs every operator with the limits measured
// in the same run). Usage: bench_mla_preprocess [--quick | --tiny] [--reps N] [--filter TEXT] [--no-peers]
//                                   [--bw GBs] [--bf16 GFLOPs] [--int8 GOPs]
#include "bench/suite.h"

int main(int argc, char** argv) { return bench::run_front(argc, argv, "bench_mla_preprocess", bench::mla_preprocess_cases); }
