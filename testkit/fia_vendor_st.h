// The vendor's FusedInferAttentionScoreV4 system-test list (tests/ops/fia/data/
// fia_vendor_st_cases.txt): its own small line parser (no std::regex), and the materialisation
// of one case — deterministic data for every tensor, FiaParams pointing at it — as a vendor
// program would build the call (docs/testing.md, "Vendor system tests").
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/numeric.h"
#include "testkit/fia_test_data.h"

namespace mlaops::vendor_st {

using fia_test::HostTensor;

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

struct TensorSpec {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

struct StCase {
  int id = -1;
  std::string err;  // expected error ("None": success)
  std::string acc;  // "default" or "cvdouble(a,b,c)"
  std::vector<TensorSpec> tensors;
  std::map<std::string, std::vector<int64_t>> arrays;
  std::map<std::string, std::string> attrs;
  std::string line;  // the source line

  const TensorSpec* tensor(const std::string& n) const {
    for (const TensorSpec& t : tensors)
      if (t.name == n) return &t;
    return nullptr;
  }
  const std::vector<int64_t>* array(const std::string& n) const {
    auto it = arrays.find(n);
    return it == arrays.end() ? nullptr : &it->second;
  }
  std::string attr(const std::string& n, const std::string& dflt = "") const {
    auto it = attrs.find(n);
    return it == attrs.end() ? dflt : it->second;
  }
  int64_t attr_int(const std::string& n, int64_t dflt) const {
    auto it = attrs.find(n);
    return it == attrs.end() ? dflt : std::strtoll(it->second.c_str(), nullptr, 10);
  }
  bool cvdouble() const { return acc.rfind("cvdouble", 0) == 0; }
};
// gtest prints a parameter through this.
inline void PrintTo(const StCase& c, std::ostream* os) { *os << "#" << c.id; }

inline std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r' || s[a] == '\n')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) --b;
  return s.substr(a, b - a);
}

inline std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> r;
  size_t p = 0;
  for (;;) {
    const size_t q = s.find(sep, p);
    r.push_back(s.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + sep.size();
  }
  return r;
}

inline DType dtype_of(const std::string& s) {
  static const std::pair<const char*, DType> kNames[] = {
      {"fp16", DType::kFloat16}, {"bf16", DType::kBFloat16}, {"fp32", DType::kFloat32}, {"int8", DType::kInt8},
      {"int32", DType::kInt32},  {"int64", DType::kInt64},   {"bool", DType::kBool},    {"uint8", DType::kUInt8}};
  for (const auto& n : kNames)
    if (s == n.first) return n.second;
  return DType::kUndefined;
}

// "[a, b, c]" -> {a, b, c}; "[v0, .., v5, ... (K values)]" -> K values: the shown ones, then,
// when they form an arithmetic progression, its continuation, else the shown ones repeated.
// False on a malformed list.
inline bool parse_int_list(const std::string& text, std::vector<int64_t>* out) {
  const std::string s = trim(text);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
  out->clear();
  int64_t total = -1;
  for (const std::string& raw : split(s.substr(1, s.size() - 2), ",")) {
    const std::string v = trim(raw);
    if (v.empty()) continue;
    if (v.rfind("...", 0) == 0) {
      const size_t open = v.find('(');
      if (open == std::string::npos) return false;
      total = std::strtoll(v.c_str() + open + 1, nullptr, 10);
      continue;
    }
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0') return false;
    out->push_back(x);
  }
  if (total >= 0) {
    const size_t shown = out->size();
    if (shown == 0 || static_cast<int64_t>(shown) > total) return false;
    bool progression = shown >= 2;
    for (size_t i = 2; i < shown; ++i) progression = progression && (*out)[i] - (*out)[i - 1] == (*out)[1] - (*out)[0];
    const int64_t step = shown >= 2 ? (*out)[1] - (*out)[0] : 0;
    for (size_t i = shown; static_cast<int64_t>(i) < total; ++i)
      out->push_back(progression ? out->back() + step : (*out)[i % shown]);
  }
  return true;
}

// One case line; false (with *why) when it is malformed.
inline bool parse_case_line(const std::string& line, StCase* c, std::string* why) {
  c->line = line;
  const size_t bar = line.find(" | ");
  if (line.empty() || line[0] != '#' || bar == std::string::npos) {
    *why = "no '#id ... | items'";
    return false;
  }
  const std::vector<std::string> head = split(trim(line.substr(1, bar - 1)), " ");
  if (head.size() < 3) {
    *why = "head needs id, err=, acc=";
    return false;
  }
  c->id = static_cast<int>(std::strtol(head[0].c_str(), nullptr, 10));
  for (size_t i = 1; i < head.size(); ++i) {
    if (head[i].rfind("err=", 0) == 0) c->err = head[i].substr(4);
    if (head[i].rfind("acc=", 0) == 0) {
      c->acc = head[i].substr(4);
      if (c->acc.size() >= 2 && c->acc.front() == '"') c->acc = c->acc.substr(1, c->acc.size() - 2);
    }
  }
  for (const std::string& raw : split(line.substr(bar + 3), " ; ")) {
    const std::string item = trim(raw);
    if (item.empty()) continue;
    const size_t colon = item.find(':'), eq = item.find('=');
    if (colon != std::string::npos && (eq == std::string::npos || colon < eq)) {
      TensorSpec t;
      t.name = item.substr(0, colon);
      const size_t open = item.find('[', colon);
      if (open == std::string::npos) {
        *why = "tensor without shape: " + item;
        return false;
      }
      t.dtype = dtype_of(item.substr(colon + 1, open - colon - 1));
      if (t.dtype == DType::kUndefined || !parse_int_list(item.substr(open), &t.dims)) {
        *why = "bad tensor: " + item;
        return false;
      }
      c->tensors.push_back(t);
    } else if (eq != std::string::npos) {
      const std::string name = item.substr(0, eq), value = trim(item.substr(eq + 1));
      if (!value.empty() && value[0] == '[') {
        std::vector<int64_t> v;
        if (!parse_int_list(value, &v)) {
          *why = "bad int list: " + item;
          return false;
        }
        c->arrays[name] = v;
      } else {
        c->attrs[name] = value;
      }
    } else {
      *why = "unknown item: " + item;
      return false;
    }
  }
  if (c->tensor("query") == nullptr || c->tensor("key") == nullptr || c->tensor("value") == nullptr ||
      c->tensor("attentionOut") == nullptr) {
    *why = "query, key, value and attentionOut are required";
    return false;
  }
  return true;
}

// Every case of the file; aborts with a message on a malformed line (the table is part of the repo).
inline std::vector<StCase> load_cases(const char* path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "cannot open %s\n", path);
    std::abort();
  }
  std::vector<StCase> r;
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() < 2 || line[0] != '#' || line[1] < '0' || line[1] > '9') continue;
    StCase c;
    std::string why;
    if (!parse_case_line(line, &c, &why)) {
      std::fprintf(stderr, "%s: malformed case line (%s): %s\n", path, why.c_str(), line.c_str());
      std::abort();
    }
    r.push_back(std::move(c));
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Deterministic data
// ---------------------------------------------------------------------------------------------

// splitmix64: fast and good enough for test data (the large decode cases hold ~10^9 elements).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E5Bull) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53; }
  int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

// Uniform values in [lo, hi) rounded to t's dtype (integers for integer dtypes), written raw.
inline void fill_uniform(HostTensor& t, uint64_t seed, double lo, double hi) {
  Rng g(seed);
  const int64_t n = t.numel();
  switch (t.dtype) {
    case DType::kFloat16: {
      auto* p = static_cast<uint16_t*>(t.data());
      if (lo == -1.0 && hi == 1.0) {
        // k / 2048 for k in [-2048, 2048): exact in FP16; from a table, 5 values per draw (the
        // large decode cases hold up to 1.3e9 elements).
        static const std::vector<uint16_t> grid = [] {
          std::vector<uint16_t> r(4096);
          for (int k = 0; k < 4096; ++k) r[static_cast<size_t>(k)] = float_to_fp16(static_cast<float>(k - 2048) / 2048.0f);
          return r;
        }();
        for (int64_t i = 0; i < n;) {
          uint64_t x = g.next();
          for (int k = 0; k < 5 && i < n; ++k, ++i, x >>= 12) p[i] = grid[static_cast<size_t>(x & 4095)];
        }
        break;
      }
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_fp16(static_cast<float>(g.uniform(lo, hi)));
      break;
    }
    case DType::kBFloat16: {
      auto* p = static_cast<uint16_t*>(t.data());
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_bf16(static_cast<float>(g.uniform(lo, hi)));
      break;
    }
    case DType::kFloat32: {
      auto* p = static_cast<float*>(t.data());
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(g.uniform(lo, hi));
      break;
    }
    case DType::kInt8: {
      auto* p = static_cast<int8_t*>(t.data());
      if (lo == -127 && hi == 127) {  // 8 values per draw, (byte mod 255) - 127
        for (int64_t i = 0; i < n;) {
          uint64_t x = g.next();
          for (int k = 0; k < 8 && i < n; ++k, ++i, x >>= 8) p[i] = static_cast<int8_t>(static_cast<int>(x & 255) % 255 - 127);
        }
        break;
      }
      for (int64_t i = 0; i < n; ++i)
        p[i] = static_cast<int8_t>(g.integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
      break;
    }
    default:
      for (int64_t i = 0; i < n; ++i) t.set_flat(i, static_cast<double>(g.integer(static_cast<int64_t>(lo), static_cast<int64_t>(hi))));
  }
}

// ---------------------------------------------------------------------------------------------
// One materialised case
// ---------------------------------------------------------------------------------------------

// Owned tensors and the FiaParams of the call (not copyable: params point into it).
struct StData {
  std::map<std::string, HostTensor> t;       // by the case's tensor name
  std::map<std::string, TensorView> views;   // views of t for the optional pointers
  std::vector<int64_t> asl, asl_kv, prefix_len;
  FiaParams p;

  StData() = default;
  StData(const StData&) = delete;
  StData& operator=(const StData&) = delete;

  const TensorView* opt(const std::string& name) {
    auto it = t.find(name);
    if (it == t.end()) return nullptr;
    views[name] = it->second.view();
    return &views[name];
  }
};

inline uint64_t seed_of(int case_id, const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : name) h = (h ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  return h ^ (static_cast<uint64_t>(case_id) << 32);
}

// Byte value every output is filled with before the call (the canary for rejected calls).
inline constexpr uint8_t kCanary = 0x5A;

// Data for every tensor of c and FiaParams for the call.
//  * query / key / value / rope / prefix / pse: U[-1, 1) in their dtype; INT8 K/V and prefix:
//    integers in [-127, 127]; INT8 query: [-127, 127]; INT32 K/V/prefix (INT4 packed 8 per word,
//    none in today's list): random words, i.e. random nibbles in [-8, 7].
//  * antiquant scales U[0.5, 1.5) / 127 (INT8 values dequantise to about [-1.5, 1.5]); offsets
//    U[-3, 3); post-quant scale U[40, 120), offset U[-8, 8); full-quant scales U[0.5, 1.5) / 127.
//  * learnableSink U[-1, 3).
//  * masks: sparse 2/3/4 with a 2048 x 2048 mask: the template (strict upper triangle); every
//    other mask (sparse 0/1; the [B, KV_S] masks of decode cases 22-24, whose sparse mode the
//    decode rule ignores) random: each position masked with probability 1/4, column 0 never, so
//    no row is fully masked.
//  * block table: a scattered permutation of the pool's blocks, entries not needed -1. With a
//    table of dtype fp16 in the list the key / value / keyRope shapes are read as the dense
//    logical ones (the data file's header): the pool then holds B * table width blocks of
//    blockSize (BnBsH for rank 3, BnNBsD for rank 4).
//  * padding sizes: 0.
//  * fill_inputs false: inputs stay zero (a case the operator is expected to reject).
inline std::unique_ptr<StData> materialise(const StCase& c, bool fill_inputs = true) {
  auto d = std::make_unique<StData>();
  FiaParams& p = d->p;
  const int64_t block_size = c.attr_int("blockSize", 0);
  const TensorSpec* bt = c.tensor("bt");
  const bool dense_paged = bt != nullptr && bt->dtype != DType::kInt32;
  int64_t pool_blocks = 0;
  for (const TensorSpec& s : c.tensors) {
    TensorSpec spec = s;
    const bool kv_like = s.name == "key" || s.name == "value" || s.name == "kRope";
    if (dense_paged && kv_like) {
      // [B, KV_S, H] -> [B * width, blockSize, H]; [B, KV_N, KV_S, D] -> [B * width, KV_N, blockSize, D]
      pool_blocks = bt->dims[0] * bt->dims[1];
      if (s.dims.size() == 3) spec.dims = {pool_blocks, block_size, s.dims[2]};
      else spec.dims = {pool_blocks, s.dims[1], block_size, s.dims[3]};
    }
    if (s.name == "bt") spec.dtype = DType::kInt32;
    HostTensor h(spec.dtype, spec.dims);
    const uint64_t seed = seed_of(c.id, s.name);
    const std::string& n = s.name;
    if (n == "attentionOut" || n == "softmaxLse") {
      std::memset(h.data(), kCanary, h.storage.size() * sizeof(uint64_t));
    } else if (!fill_inputs && n != "bt") {
      // zeros
    } else if (n == "qs1") {  // INT8 full quant: P = e * quantScale1 spans the INT8 range
      fill_uniform(h, seed, 60.0, 127.0);
    } else if (n == "deq2") {  // ... and P . V * deqScale2 ~ v / 127
      fill_uniform(h, seed, 0.5 / (127.0 * 127.0), 1.5 / (127.0 * 127.0));
    } else if (n == "kScale" || n == "vScale" || n == "aqScale" || n == "deq1" || n == "dqQ") {
      fill_uniform(h, seed, 0.5 / 127, 1.5 / 127);
    } else if (n == "kOff" || n == "vOff" || n == "aqOff") {
      fill_uniform(h, seed, -3.0, 3.0);
    } else if (n == "qs2") {
      fill_uniform(h, seed, 40.0, 120.0);
    } else if (n == "qo2") {
      fill_uniform(h, seed, -8.0, 8.0);
    } else if (n == "sink") {
      fill_uniform(h, seed, -1.0, 3.0);
    } else if (n == "qPad" || n == "kvPad") {
      h.fill(0.0);
    } else if (n == "mask") {
      const int64_t cols = spec.dims.back();
      const int64_t rows = spec.dims.size() >= 2 ? spec.dims[spec.dims.size() - 2] : 1;
      // sparse 2/3/4 with the 2048 x 2048 shape: the template; any other mask (sparse 0/1, or the
      // [B, KV_S] mask of a decode case, where the sparse mode is ignored): random.
      const bool templ = c.attr_int("sparseMode", 0) >= 2 && rows == 2048 && cols == 2048;
      auto* m = static_cast<uint8_t*>(h.data());
      Rng g(seed);
      for (int64_t i = 0, e = h.numel(); i < e; ++i) {
        const int64_t col = i % cols, row = (i / cols) % rows;
        if (templ) m[i] = col > row ? 1 : 0;
        else m[i] = col != 0 && g.next() % 4 == 0 ? 1 : 0;
      }
    } else if (n == "bt") {
      continue;  // below, once the pool size is known
    } else if (h.dtype == DType::kInt8) {
      fill_uniform(h, seed, -127, 127);
    } else if (h.dtype == DType::kInt32) {  // INT4 K / V / prefix: 8 random nibbles per word
      Rng g(seed);
      auto* w = static_cast<uint32_t*>(h.data());
      for (int64_t i = 0, e = h.numel(); i < e; ++i) w[i] = static_cast<uint32_t>(g.next());
    } else {
      fill_uniform(h, seed, -1.0, 1.0);
    }
    d->t.emplace(n, std::move(h));
  }
  if (const auto* a = c.array("asl")) d->asl = *a;
  if (const auto* a = c.array("aslKv")) d->asl_kv = *a;
  if (const auto* a = c.array("prefixLen")) d->prefix_len = *a;
  if (bt != nullptr) {
    // Scattered ids: a permutation of the pool's blocks handed out in order to the needed entries.
    const int64_t B = bt->dims[0], width = bt->dims[1];
    const int64_t nb = dense_paged ? pool_blocks : c.tensor("key")->dims[0];
    std::vector<int32_t> ids(static_cast<size_t>(nb));
    std::iota(ids.begin(), ids.end(), 0);
    Rng g(seed_of(c.id, "bt"));
    for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[static_cast<size_t>(g.next() % i)]);
    HostTensor h(DType::kInt32, {B, width});
    auto* tab = static_cast<int32_t*>(h.data());
    size_t next = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = d->asl_kv.empty() ? width * block_size
                                            : d->asl_kv[std::min<size_t>(static_cast<size_t>(b), d->asl_kv.size() - 1)];
      const int64_t need = dense_paged ? width : (len + block_size - 1) / block_size;
      for (int64_t k = 0; k < width; ++k) tab[b * width + k] = k < need && next < ids.size() ? ids[next++] : -1;
    }
    d->t.emplace("bt", std::move(h));
  }

  p.query = d->t.at("query").view();
  p.key = {d->t.at("key").view()};
  p.value = {d->t.at("value").view()};
  p.attention_out = d->t.at("attentionOut").view();
  p.pse_shift = d->opt("pse");
  p.atten_mask = d->opt("mask");
  p.deq_scale1 = d->opt("deq1");
  p.quant_scale1 = d->opt("qs1");
  p.deq_scale2 = d->opt("deq2");
  p.quant_scale2 = d->opt("qs2");
  p.quant_offset2 = d->opt("qo2");
  p.antiquant_scale = d->opt("aqScale");
  p.antiquant_offset = d->opt("aqOff");
  p.block_table = d->opt("bt");
  p.query_padding_size = d->opt("qPad");
  p.kv_padding_size = d->opt("kvPad");
  p.key_antiquant_scale = d->opt("kScale");
  p.key_antiquant_offset = d->opt("kOff");
  p.value_antiquant_scale = d->opt("vScale");
  p.value_antiquant_offset = d->opt("vOff");
  p.key_shared_prefix = d->opt("kPrefix");
  p.value_shared_prefix = d->opt("vPrefix");
  p.query_rope = d->opt("qRope");
  p.key_rope = d->opt("kRope");
  p.dequant_scale_query = d->opt("dqQ");
  p.learnable_sink = d->opt("sink");
  p.softmax_lse = d->opt("softmaxLse");
  if (c.array("asl")) p.actual_seq_lengths = &d->asl;
  if (c.array("aslKv")) p.actual_seq_lengths_kv = &d->asl_kv;
  if (c.array("prefixLen")) p.actual_shared_prefix_len = &d->prefix_len;
  p.num_heads = c.attr_int("numHeads", 1);
  p.scale_value = std::strtod(c.attr("scaleValue", "1.0").c_str(), nullptr);
  p.pre_tokens = c.attr_int("preTokens", 2147483647);
  p.next_tokens = c.attr_int("nextTokens", 2147483647);
  p.input_layout = c.attr("inputLayout", "BSH");
  p.num_key_value_heads = c.attr_int("numKeyValueHeads", 0);
  p.sparse_mode = c.attr_int("sparseMode", 0);
  p.inner_precise = c.attr_int("innerPrecise", 0);
  p.block_size = block_size;
  p.antiquant_mode = c.attr_int("antiquantMode", 0);
  p.softmax_lse_flag = c.attr("softmaxLseFlag", "False") == "True";
  p.key_antiquant_mode = c.attr_int("keyAntiquantMode", 0);
  p.value_antiquant_mode = c.attr_int("valueAntiquantMode", 0);
  p.query_quant_mode = c.attr_int("queryQuantMode", 0);
  return d;
}

}  // namespace mlaops::vendor_st
