// bench_fia: the FusedInferAttentionScoreV4 cases (bench/cases_fia.cpp) of the benchmark suite,
// bounds from --bw / --bf16 / --int8 (`mlaops bench` runs every operator with the limits measured
// in the same run). Usage: bench_fia [--quick | --tiny] [--reps N] [--filter TEXT] [--no-peers]
//                                   [--bw GBs] [--bf16 GFLOPs] [--int8 GOPs]
#include "bench/suite.h"

int main(int argc, char** argv) { return bench::run_front(argc, argv, "bench_fia", bench::fia_cases); }
