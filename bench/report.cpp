// Reports of the benchmark suite (suite.h): the table rows, the target summary, the JSON
// file and the PNG roofline plot.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "bench/png.h"
#include "bench/suite.h"

namespace bench {
namespace {

double work(const Row& r) { return r.flops_bf16 + r.ops_int8; }
double pct(const Row& r) { return r.best_us > 0 ? 100.0 * r.bound_us / r.best_us : 0.0; }

std::string fmt(const char* f, double v) {
  char b[160];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += fmt("\\u%04x", static_cast<double>(static_cast<int>(c)));
    else o += c;
  }
  return o;
}

// "%.3f" that stays valid JSON for inf / nan.
std::string num(double v) { return std::isfinite(v) ? fmt("%.3f", v) : "null"; }

}  // namespace

void print_row_header() {
  std::printf("%-46s %3s %11s %11s %8s %9s %11s %4s %7s %7s  %s\n", "case", "thr", "best us", "median us", "GB/s",
              "GFLOP/s", "bound us", "", "%bound", "target", "peer best us (peer / ours)");
}

void print_row(const Row& r) {
  if (!r.error.empty()) {
    std::printf("%-46s %3d  error: %s\n", r.label.c_str(), r.threads, r.error.c_str());
    return;
  }
  std::string target = r.target_pct > 0 ? fmt(">=%.0f%%", r.target_pct) : "";
  std::string peer;
  for (const PeerTime& p : r.peers) {
    if (!peer.empty()) peer += "; ";
    peer += p.best_us > 0 ? p.name + " " + fmt("%.1f", p.best_us) + fmt(" (%.2fx)", p.best_us / r.best_us) +
                                (p.work > 0 ? fmt(" %.0f G/s", p.work / p.best_us * 1e-3) : "")
                          : p.name + ": " + p.note;
  }
  std::printf("%-46s %3d %11.1f %11.1f %8.1f %9.1f %11.1f %4s %6.1f%% %7s  %s\n", r.label.c_str(), r.threads,
              r.best_us, r.median_us, r.bytes / r.best_us * 1e-3, work(r) / r.best_us * 1e-3, r.bound_us,
              r.mem_bound ? "mem" : "cmp", pct(r), target.c_str(), peer.c_str());
  std::fflush(stdout);
}

std::vector<std::string> target_summary(const Report& rep) {
  std::vector<std::string> out;
  for (const Row& r : rep.rows) {
    if (!r.error.empty()) {
      if (r.target_pct > 0 || r.target_peer_ratio > 0 || r.target_pair_ratio > 0)
        out.push_back(r.id + ": not measured (" + r.error + ")");
      continue;
    }
    if (r.target_pct > 0) {
      const bool met = pct(r) >= r.target_pct;
      const std::string bracket =
          r.dram_before > 0 ? fmt(" of DRAM %.1f GB/s", std::max(r.dram_before, r.dram_after) / 1e9) +
                                  fmt(", the faster of the probes right before (%.1f)", r.dram_before / 1e9) +
                                  fmt(" and after (%.1f) it", r.dram_after / 1e9)
                            : "";
      out.push_back(r.id + ": " + fmt("%.1f %% of the ", pct(r)) + (r.mem_bound ? "memory" : "compute") + " bound" +
                    bracket + fmt(" (target >= %.0f %%): ", r.target_pct) + (met ? "met" : "MISSED"));
    }
    if (r.target_peer_ratio > 0 || r.target_pair_ratio > 0) {
      const PeerTime* p = r.peers.empty() ? nullptr : &r.peers.front();
      if (p == nullptr || p->best_us <= 0) {
        out.push_back(r.id + ": peer not measured (" + (p ? p->note : std::string("peers off")) + ")");
        continue;
      }
      if (r.target_peer_ratio > 0) {
        const double ratio = p->best_us / r.best_us;
        out.push_back(r.id + ": " + p->name + fmt(" / ours = %.2f", ratio) +
                      fmt(" (target >= %.2f): ", r.target_peer_ratio) + (ratio >= r.target_peer_ratio ? "met" : "MISSED"));
      }
      if (r.target_pair_ratio > 0)
        out.push_back(r.id + ": " + p->name + fmt(" / ours = %.2f", p->pair_ratio) +
                      fmt(" as the median of %.0f alternated pairs", static_cast<double>(p->pairs)) +
                      fmt(" (target >= %.2f): ", r.target_pair_ratio) +
                      (p->pair_ratio >= r.target_pair_ratio ? "met" : "MISSED"));
    }
  }
  // 1 -> N thread scaling of the compute-bound cases measured both ways
  const std::string suffix = ".t" + std::to_string(rep.threads);
  for (const Row& one : rep.rows) {
    if (one.threads != 1 || rep.threads == 1 || !one.error.empty() || one.id.size() < 3) continue;
    const std::string base = one.id.substr(0, one.id.size() - 3);
    for (const Row& many : rep.rows) {
      if (many.id != base + suffix || !many.error.empty()) continue;
      const double s = one.best_us / many.best_us;
      out.push_back(base + fmt(": 1 -> %.0f threads ", rep.threads) + fmt("%.2fx", s) +
                    (many.mem_bound ? " (memory-bound; no target)" : std::string(" (target >= 1.70x): ") +
                                                                          (s >= 1.7 ? "met" : "MISSED")));
    }
  }
  // a case faster than its bound: the limits were measured in a noisier moment than the case
  for (const Row& r : rep.rows)
    if (r.error.empty() && pct(r) > 100.0)
      out.push_back(r.id + fmt(": note: %.0f %% of its bound", pct(r)) +
                    ", above 100 %: the limits probe ran in a noisier moment; rerun on a quiet machine");
  // a peer faster than the measured compute rates allow would mean the probe under-reports them
  for (const Row& r : rep.rows)
    for (const PeerTime& p : r.peers) {
      if (p.work <= 0 || p.best_us <= 0) continue;
      const Limits& l = r.threads == 1 ? rep.lim1 : rep.lim2;
      const double need_us = ((p.work - p.work_int8) / l.bf16 + p.work_int8 / l.int8) * 1e6;
      if (p.best_us >= need_us) continue;
      const std::string ran = r.id + ": note: " + p.name + fmt(" ran at %.0f G/s, ", p.work / p.best_us * 1e-3);
      if (p.work_int8 <= 0 || p.work_int8 >= p.work)
        out.push_back(ran + "above the measured " + (p.work_int8 <= 0 ? "bf16" : "int8") +
                      fmt(" limit %.0f: the probe under-reports that limit", (p.work_int8 <= 0 ? l.bf16 : l.int8) / 1e9));
      else
        out.push_back(ran + fmt("faster than the measured bf16 %.0f", l.bf16 / 1e9) + fmt(" / int8 %.0f", l.int8 / 1e9) +
                      " limits allow: the probe under-reports them");
    }
  // INT8 KV against BF16 KV (GQA decode): >= 1.7x faster
  for (const Row& i8 : rep.rows) {
    const size_t at = i8.id.find(".int8kv.");
    if (at == std::string::npos || !i8.error.empty()) continue;
    std::string bf = i8.id;
    bf.replace(at, 8, ".bf16.");
    for (const Row& b : rep.rows)
      if (b.id == bf && b.error.empty()) {
        const double s = b.best_us / i8.best_us;
        out.push_back(i8.id + fmt(": INT8 KV %.2fx faster than BF16 KV (target >= 1.70x): ", s) +
                      (s >= 1.7 ? "met" : "MISSED"));
      }
  }
  // Post-quant INT8 output against the plain BF16 output (GQA decode): what the epilogue costs
  for (const Row& q8 : rep.rows) {
    const size_t at = q8.id.find(".postquant.");
    if (at == std::string::npos || !q8.error.empty()) continue;
    std::string bf = q8.id;
    bf.replace(at, 11, ".bf16.");
    for (const Row& b : rep.rows)
      if (b.id == bf && b.error.empty())
        out.push_back(q8.id + fmt(": post-quant INT8 output takes %.2fx the time of the BF16 output", q8.best_us / b.best_us));
  }
  // INT8 full quantisation against the BF16 prefill of the same shape (GQA prefill)
  for (const Row& fq : rep.rows) {
    const size_t at = fq.id.find(".int8fq.");
    if (at == std::string::npos || !fq.error.empty()) continue;
    std::string bf = fq.id;
    bf.replace(at, 8, ".bf16.");
    for (const Row& b : rep.rows)
      if (b.id == bf && b.error.empty())
        out.push_back(fq.id + fmt(": INT8 full quantisation is %.2fx faster than BF16", b.best_us / fq.best_us));
  }
  return out;
}

bool write_json(const Report& rep, const std::string& path, std::string* error) {
  FILE* o = std::fopen(path.c_str(), "w");
  if (o == nullptr) {
    *error = "cannot write " + path;
    return false;
  }
  std::fprintf(o, "{\n  \"mlaops\": \"%s\", \"isa\": \"%s\", \"cpu\": \"%s\", \"date\": \"%s\",\n",
               json_escape(rep.version).c_str(), rep.isa.c_str(), json_escape(rep.cpu).c_str(), rep.date.c_str());
  std::fprintf(o, "  \"threads\": %d, \"reps\": %d, \"size\": \"%s\",\n", rep.threads, rep.reps, rep.size.c_str());
  std::fprintf(o, "  \"limits\": [\n");
  for (size_t i = 0; i < rep.probes.size(); ++i) {
    const Probe& p = rep.probes[i];
    std::fprintf(o, "    {\"probe\": \"%s\", \"unit\": \"%s\", \"threads\": %d, \"best\": %s, \"median\": %s}%s\n",
                 p.name.c_str(), p.unit.c_str(), p.threads, num(p.best).c_str(), num(p.median).c_str(),
                 i + 1 < rep.probes.size() ? "," : "");
  }
  auto lim = [&](const Limits& l) {
    return "{\"dram_read_GBps\": " + num(l.bw / 1e9) + ", \"bf16_GFLOPs\": " + num(l.bf16 / 1e9) +
           ", \"int8_GOPs\": " + num(l.int8 / 1e9) + ", \"measured\": " + (l.measured ? "true" : "false") + "}";
  };
  std::fprintf(o, "  ],\n  \"bounds_1_thread\": %s,\n  \"bounds\": %s,\n  \"cases\": [\n", lim(rep.lim1).c_str(),
               lim(rep.lim2).c_str());
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const Row& r = rep.rows[i];
    std::fprintf(o, "    {\"id\": \"%s\", \"op\": \"%s\", \"label\": \"%s\", \"threads\": %d", r.id.c_str(), r.op.c_str(),
                 json_escape(r.label).c_str(), r.threads);
    if (!r.path.empty()) std::fprintf(o, ", \"path\": \"%s\"", json_escape(r.path).c_str());  // coverage rows
    if (!r.error.empty()) {
      std::fprintf(o, ", \"error\": \"%s\"}%s\n", json_escape(r.error).c_str(), i + 1 < rep.rows.size() ? "," : "");
      continue;
    }
    std::fprintf(o,
                 ", \"best_us\": %s, \"median_us\": %s, \"bytes\": %.0f, \"flops_bf16\": %.0f, \"ops_int8\": %.0f,"
                 " \"GBps\": %s, \"GFLOPs\": %s, \"bound_us\": %s, \"bound\": \"%s\", \"pct_of_bound\": %s",
                 num(r.best_us).c_str(), num(r.median_us).c_str(), r.bytes, r.flops_bf16, r.ops_int8,
                 num(r.bytes / r.best_us * 1e-3).c_str(), num(work(r) / r.best_us * 1e-3).c_str(),
                 num(r.bound_us).c_str(), r.mem_bound ? "memory" : "compute", num(pct(r)).c_str());
    if (r.target_pct > 0) std::fprintf(o, ", \"target_pct\": %s", num(r.target_pct).c_str());
    if (r.target_peer_ratio > 0) std::fprintf(o, ", \"target_peer_ratio\": %s", num(r.target_peer_ratio).c_str());
    if (r.target_pair_ratio > 0) std::fprintf(o, ", \"target_pair_ratio\": %s", num(r.target_pair_ratio).c_str());
    if (r.dram_before > 0)
      std::fprintf(o, ", \"dram_before_GBps\": %s, \"dram_after_GBps\": %s", num(r.dram_before / 1e9).c_str(),
                   num(r.dram_after / 1e9).c_str());
    std::fprintf(o, ", \"peers\": [");
    for (size_t k = 0; k < r.peers.size(); ++k) {
      const PeerTime& p = r.peers[k];
      std::fprintf(o,
                   "%s{\"name\": \"%s\", \"best_us\": %s, \"median_us\": %s, \"work\": %.0f, \"pair_ratio\": %s, "
                   "\"pairs\": %d, \"note\": \"%s\"}",
                   k ? ", " : "", json_escape(p.name).c_str(), p.best_us > 0 ? num(p.best_us).c_str() : "null",
                   p.best_us > 0 ? num(p.median_us).c_str() : "null", p.work,
                   p.pairs > 0 ? num(p.pair_ratio).c_str() : "null", p.pairs, json_escape(p.note).c_str());
    }
    std::fprintf(o, "]}%s\n", i + 1 < rep.rows.size() ? "," : "");
  }
  std::fprintf(o, "  ],\n  \"targets\": [\n");
  const std::vector<std::string> t = target_summary(rep);
  for (size_t i = 0; i < t.size(); ++i)
    std::fprintf(o, "    \"%s\"%s\n", json_escape(t[i]).c_str(), i + 1 < t.size() ? "," : "");
  std::fprintf(o, "  ]\n}\n");
  const bool ok = std::fclose(o) == 0;
  if (!ok) *error = "cannot write " + path;
  return ok;
}

bool write_roofline_png(const Report& rep, const std::string& path, std::string* error) {
  const int W = 1280, H = 820, x0 = 80, x1 = 860, y0 = 60, y1 = 760;
  const double lx0 = -1, lx1 = 3, ly0 = 0, ly1 = 3.3;  // log10 axes: 0.1..1000 FLOP/B, 1..2000 GFLOP/s
  const Rgb white{255, 255, 255}, black{0, 0, 0}, grey{200, 200, 200}, dark{90, 90, 90};
  const Rgb op_colour[3] = {{200, 40, 40}, {30, 100, 200}, {20, 150, 60}};  // fia, mla_prolog, mla_preprocess
  Canvas c(W, H, white);
  auto X = [&](double v) { return x0 + static_cast<int>((std::log10(v) - lx0) / (lx1 - lx0) * (x1 - x0)); };
  auto Y = [&](double v) { return y1 - static_cast<int>((std::log10(v) - ly0) / (ly1 - ly0) * (y1 - y0)); };
  for (double d = 0.1; d <= 1000.0 * 1.01; d *= 10) {
    c.dashed_line(X(d), y0, X(d), y1, grey);
    const std::string s = d < 1 ? "0.1" : fmt("%.0f", d);
    c.text(X(d) - Canvas::text_width(s) / 2, y1 + 8, s, black);
  }
  for (double g = 1; g <= 1000.0 * 1.01; g *= 10) {
    c.dashed_line(x0, Y(g), x1, Y(g), grey);
    const std::string s = fmt("%.0f", g);
    c.text(x0 - 8 - Canvas::text_width(s), Y(g) - 3, s, black);
  }
  c.rect(x0, y0, x1, y1, black);
  c.text(x0 + 200, y1 + 28, "ARITHMETIC INTENSITY (FLOP / BYTE)", black);
  c.text_up(20, y1 - 200, "GFLOP/S (INT8: GOP/S)", black);
  const std::string title = "MLAOPS " + rep.version + " ROOFLINE, " + std::to_string(rep.threads) +
                            " THREADS, LIMITS MEASURED IN THIS RUN (" + rep.date + ")";
  c.text(x0, 20, title, black, 2);
  // roofs: the DRAM slope up to the rate of every compute unit the probe measured (bf16 dot,
  // int8 dot, fp32 FMA)
  const Limits& l = rep.lim2;
  struct Roof {
    double peak;
    const char* label;
    Rgb colour;
  };
  const Roof roofs[3] = {{l.bf16, "BF16 %.0f GFLOP/S", Rgb{0, 0, 0}},
                         {l.int8, "INT8 %.0f GOP/S", dark},
                         {l.fp32, "FP32 FMA %.0f GFLOP/S", Rgb{150, 110, 0}}};
  for (const Roof& r : roofs) {
    if (r.peak <= 0) continue;
    const double peak = r.peak / 1e9, bw = l.bw / 1e9;
    const double knee = peak / bw;
    c.line(X(std::pow(10.0, lx0)), Y(std::max(bw * std::pow(10.0, lx0), 1.0)), X(knee), Y(peak), r.colour, 2);
    c.line(X(knee), Y(peak), x1, Y(peak), r.colour, 2);
    c.text(x1 - 210, Y(peak) - 12, fmt(r.label, peak), r.colour);
  }
  c.text(X(0.15), Y(l.bw / 1e9 * 0.15) - 24, fmt("DRAM %.1f GB/S", l.bw / 1e9), black);
  // the cases at the run's thread count, numbered; the legend on the right
  int n = 0, ly = y0;
  c.text(x1 + 20, ly, "CASE (% OF ITS BOUND)", black);
  ly += 14;
  for (const Row& r : rep.rows) {
    if (!r.error.empty() || r.threads != rep.threads || r.bytes <= 0 || r.best_us <= 0) continue;
    ++n;
    const int oi = r.op == "fia" ? 0 : r.op == "mla_prolog" ? 1 : 2;
    const double ai = work(r) / r.bytes, gf = work(r) / r.best_us * 1e-3;
    const int px = X(std::clamp(ai, 0.11, 990.0)), py = Y(std::clamp(gf, 1.01, 1990.0));
    c.dot(px, py, 4, op_colour[oi]);
    c.text(px + 6, py - 10, std::to_string(n), op_colour[oi]);
    if (ly < H - 12) {
      c.text(x1 + 20, ly, std::to_string(n) + " " + r.label + fmt(" (%.0f%%)", pct(r)), op_colour[oi]);
      ly += 11;
    }
  }
  const std::vector<uint8_t> bytes = c.png();
  if (bytes.empty()) {
    *error = "cannot encode the roofline plot (libpng)";
    return false;
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    if (f) std::fclose(f);
    *error = "cannot write " + path;
    return false;
  }
  if (std::fclose(f) != 0) {
    *error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace bench
