// `mlaops check` (golden mode): builds one case of an operator with deterministic random data,
// runs the fast path (the operator's C++ API) and the float64 reference on separate copies, and
// compares every output with the operator tests' rules (tests/ops/compare.h and the harnesses).
// --from-files DIR compares outputs another implementation saved as .npy (e.g. an NPU run)
// instead of running the fast path; --save DIR writes the case's inputs and the reference
// outputs (and case.json) so that such a run can be set up with the same data. docs/cli.md.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/element_access.h"
#include "mlaops/fused_infer_attention_score.h"
#include "mlaops/mla_prolog.h"
#include "mlaops/runtime.h"
#include "mlaops/status.h"
#include "reference/fused_infer_attention_score_v4_ref.h"
#include "reference/mla_prolog_ref.h"
#include "tests/ops/compare.h"
#include "tests/reference/fia_test_data.h"
#include "tests/reference/mla_prolog_test_data.h"
#include "tools/commands.h"
#include "tools/npy.h"

namespace mlaops::tools {
namespace {

// ---------------------------------------------------------------------------------------------
// Flags
// ---------------------------------------------------------------------------------------------

enum class Kind { kInt, kNum, kStr, kBool, kList };

struct Flag {
  const char* op;  // "" = every op
  const char* name;
  Kind kind;
  const char* def;  // "" = unset by default
  const char* help;
};

constexpr const char* kProlog = "mla_prolog_v2";
constexpr const char* kFia = "fia_v4";

const Flag kFlags[] = {
    {"", "seed", Kind::kInt, "1", "seed of the deterministic random data"},
    // MlaPrologV2WeightNz
    {kProlog, "scenario", Kind::kStr, "no_quant", "no_quant | partial | partial_kvq | full | full_kvq"},
    {kProlog, "tokens", Kind::kInt, "", "T: token layout tokenX [T, He] (instead of --batch/--seq)"},
    {kProlog, "batch", Kind::kInt, "2", "B: tokenX [B, S, He]"},
    {kProlog, "seq", Kind::kInt, "1", "S"},
    {kProlog, "heads", Kind::kInt, "8", "N query heads"},
    {kProlog, "hidden", Kind::kInt, "7168", "He hidden size"},
    {kProlog, "q-lora", Kind::kInt, "1536", "Hcq q LoRA rank"},
    {kProlog, "kv-lora", Kind::kInt, "512", "Hckv kv LoRA rank"},
    {kProlog, "dim", Kind::kInt, "128", "D q nope head dim"},
    {kProlog, "rope-dim", Kind::kInt, "64", "Dr rope dim (even)"},
    {kProlog, "cache-mode", Kind::kStr, "PA_BSND", "PA_BSND | PA_NZ"},
    {kProlog, "block-size", Kind::kInt, "128", "cache BlockSize"},
    {kProlog, "block-num", Kind::kInt, "", "cache BlockNum (default ceil(T / BlockSize) + 1)"},
    {kProlog, "weight-form", Kind::kStr, "nz", "nz (4-D FRACTAL_NZ storage) | nz2d (2-D NZ view) | nd (bf16 only)"},
    {kProlog, "smooth", Kind::kBool, "false", "pass smoothScalesCq (partial / full quant)"},
    // FusedInferAttentionScoreV4
    {kFia, "layout", Kind::kStr, "BSND", "inputLayout: BSH BSND BNSD TND NTD BSH_BNSD BSND_BNSD BNSD_BSND NTD_TND TND_NTD BSH_NBSD BSND_NBSD BNSD_NBSD"},
    {kFia, "batch", Kind::kInt, "2", "B"},
    {kFia, "heads", Kind::kInt, "16", "numHeads N"},
    {kFia, "kv-heads", Kind::kInt, "1", "numKeyValueHeads KV_N"},
    {kFia, "q-len", Kind::kList, "1", "query length Q_S, or a comma list per batch (actualSeqLengths)"},
    {kFia, "kv-len", Kind::kList, "256", "KV length KV_S, or a comma list per batch (actualSeqLengthsKv)"},
    {kFia, "dim", Kind::kInt, "512", "query / key head dim D"},
    {kFia, "value-dim", Kind::kInt, "", "value head dim (default: --dim)"},
    {kFia, "rope-dim", Kind::kInt, "64", "queryRope / keyRope dim (0 = no rope split)"},
    {kFia, "dtype", Kind::kStr, "bf16", "bf16 | fp16"},
    {kFia, "sparse-mode", Kind::kInt, "0", "0..4 (1 uses a random mask; 2..4 the 2048x2048 template)"},
    {kFia, "mask", Kind::kBool, "false", "sparse mode 0: pass a random BOOL mask [B, Q_S, KV_S]"},
    {kFia, "pre-tokens", Kind::kInt, "2147483647", "preTokens"},
    {kFia, "next-tokens", Kind::kInt, "2147483647", "nextTokens"},
    {kFia, "scale", Kind::kNum, "", "scaleValue (default 1/sqrt(dim + rope-dim))"},
    {kFia, "block-size", Kind::kInt, "0", "paged KV block size (0 = contiguous KV)"},
    {kFia, "kv-format", Kind::kStr, "bnbsh", "paged cache: bnbsh [nb, bs, KV_N*D] | bnnbsd [nb, KV_N, bs, D] | nz"},
    {kFia, "lse", Kind::kBool, "false", "softmaxLseFlag: also compare softmaxLse"},
};

const Flag* find_flag(const std::string& op, const std::string& name) {
  for (const Flag& f : kFlags)
    if (name == f.name && (f.op[0] == '\0' || op == f.op)) return &f;
  return nullptr;
}
bool any_flag(const std::string& name) {
  for (const Flag& f : kFlags)
    if (name == f.name) return true;
  return false;
}
bool is_bool_flag(const std::string& name) {
  for (const Flag& f : kFlags)
    if (name == f.name && f.kind == Kind::kBool) return true;
  return false;
}

std::string usage() {
  std::ostringstream s;
  s << "usage: mlaops check <op> [case flags] [--seed N] [--from-files DIR] [--save DIR] [--json FILE]\n"
       "\n"
       "Golden mode: builds a case of <op> with deterministic random data (--seed), runs the fast path\n"
       "(the C++ API) and the float64 reference on separate copies, and prints per output tensor the\n"
       "shape, dtype, max abs / max rel / mean rel error, cosine similarity, the worst element and\n"
       "PASS/FAIL by the operator tests' rule. Exit status: 0 all pass, 1 a check failed, 2 bad\n"
       "arguments or files.\n"
       "\n"
       "ops: mla_prolog_v2 (MlaPrologV2WeightNz), fia_v4 (FusedInferAttentionScoreV4)\n"
       "\n"
       "options:\n"
       "  --from-files DIR  compare the outputs saved in DIR (<aclnn name>.npy; in/out caches as\n"
       "                    <name>.out.npy) with the reference instead of running the fast path;\n"
       "                    inputs present in DIR (<aclnn name>.npy) replace the generated ones\n"
       "  --save DIR        write the inputs, the reference outputs and case.json into DIR\n"
       "  --json FILE       read the op and the flags from a flat JSON object, e.g.\n"
       "                    {\"op\": \"fia_v4\", \"batch\": 2, \"kv-len\": \"5,7\", \"lse\": true};\n"
       "                    flags on the command line override it\n"
       "  --help            this text\n"
       "Flags take '--name value' or '--name=value'; boolean flags also '--name' alone (= true).\n";
  const char* last = nullptr;
  for (const Flag& f : kFlags) {
    if (last == nullptr || std::strcmp(last, f.op) != 0) {
      s << "\n" << (f.op[0] ? f.op : "every op") << ":\n";
      last = f.op;
    }
    std::string left = std::string("  --") + f.name;
    if (f.kind != Kind::kBool) left += f.kind == Kind::kStr ? " S" : f.kind == Kind::kList ? " L" : " N";
    s << left << std::string(left.size() < 20 ? 20 - left.size() : 1, ' ') << f.help;
    if (f.def[0]) s << " [" << f.def << "]";
    s << "\n";
  }
  return s.str();
}

// Thrown for bad arguments / files (exit 2).
struct UsageError {
  std::string msg;
};
[[noreturn]] void bad(const std::string& msg) { throw UsageError{msg}; }

// ---------------------------------------------------------------------------------------------
// A strict parser of flat JSON objects: {"key": "string" | number | true | false, ...}
// ---------------------------------------------------------------------------------------------

class FlatJson {
 public:
  explicit FlatJson(std::string text) : s_(std::move(text)) {}

  // key -> value text (numbers as written, bools as true/false, strings unescaped).
  std::vector<std::pair<std::string, std::string>> parse() {
    std::vector<std::pair<std::string, std::string>> out;
    ws();
    expect('{', "a JSON object ('{')");
    ws();
    if (eat('}')) return finish(out);
    for (;;) {
      ws();
      if (!peek('"')) fail("a string key");
      const std::string key = str();
      for (auto& kv : out)
        if (kv.first == key) fail_msg("duplicate key \"" + key + "\"");
      ws();
      expect(':', "':'");
      ws();
      out.emplace_back(key, value(key));
      ws();
      if (eat(',')) continue;
      expect('}', "',' or '}'");
      return finish(out);
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> finish(std::vector<std::pair<std::string, std::string>>& out) {
    ws();
    if (i_ != s_.size()) fail_msg("unexpected text after the object at offset " + std::to_string(i_));
    return out;
  }
  [[noreturn]] void fail(const std::string& what) {
    fail_msg(what + " expected at offset " + std::to_string(i_));
  }
  [[noreturn]] void fail_msg(const std::string& msg) { bad(msg); }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  void expect(char c, const char* what) {
    if (!eat(c)) fail(what);
  }
  std::string str() {
    ++i_;  // opening quote
    std::string r;
    for (;;) {
      if (i_ >= s_.size()) fail_msg("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return r;
      if (static_cast<unsigned char>(c) < 0x20) fail_msg("control character in a string");
      if (c != '\\') {
        r.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) fail_msg("unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case '"': r.push_back('"'); break;
        case '\\': r.push_back('\\'); break;
        case '/': r.push_back('/'); break;
        case 'n': r.push_back('\n'); break;
        case 't': r.push_back('\t'); break;
        case 'r': r.push_back('\r'); break;
        case 'b': r.push_back('\b'); break;
        case 'f': r.push_back('\f'); break;
        case 'u': {
          if (s_.size() - i_ < 4) fail_msg("bad \\u escape");
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            v = v * 16 + static_cast<unsigned>(h >= '0' && h <= '9'   ? h - '0'
                                               : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                               : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                      : (fail_msg("bad \\u escape"), 0));
          }
          if (v == 0 || v >= 0x80) fail_msg("only ASCII \\u escapes are accepted");
          r.push_back(static_cast<char>(v));
          break;
        }
        default: fail_msg(std::string("bad escape \\") + e);
      }
    }
  }
  std::string value(const std::string& key) {
    if (peek('"')) return str();
    if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      return "true";
    }
    if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      return "false";
    }
    const size_t start = i_;
    eat('-');
    if (eat('0')) {
    } else if (i_ < s_.size() && s_[i_] >= '1' && s_[i_] <= '9') {
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    } else {
      i_ = start;
      fail_msg("the value of \"" + key + "\" must be a string, a number or a boolean (no null, arrays or objects)");
    }
    if (eat('.')) {
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("a digit");
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("a digit");
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    return s_.substr(start, i_ - start);
  }

  std::string s_;
  size_t i_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Resolved options
// ---------------------------------------------------------------------------------------------

struct Options {
  std::string op;
  std::map<std::string, std::string> given;  // flags set by the user (JSON, then command line)
  std::string from_dir, save_dir;

  bool has(const std::string& name) const { return given.count(name) != 0; }
  std::string raw(const std::string& name) const {
    auto it = given.find(name);
    if (it != given.end()) return it->second;
    const Flag* f = find_flag(op, name);
    return f ? f->def : "";
  }
  bool set(const std::string& name) const { return !raw(name).empty(); }
  int64_t i64(const std::string& name, int64_t lo, int64_t hi = INT64_MAX) const {
    const std::string v = raw(name);
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE)
      bad("--" + name + ": '" + v + "' is not an integer");
    if (x < lo || x > hi)
      bad("--" + name + ": " + v + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  double num(const std::string& name) const {
    const std::string v = raw(name);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x)) bad("--" + name + ": '" + v + "' is not a finite number");
    return x;
  }
  bool flag(const std::string& name) const {
    const std::string v = raw(name);
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    bad("--" + name + ": '" + v + "' is not true or false");
  }
  std::vector<int64_t> list(const std::string& name, int64_t lo) const {
    const std::string v = raw(name);
    std::vector<int64_t> r;
    size_t pos = 0;
    for (;;) {
      const size_t comma = v.find(',', pos);
      const std::string item = v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || errno == ERANGE || x < lo)
        bad("--" + name + ": '" + v + "' is not an integer >= " + std::to_string(lo) + " or a comma list of them");
      r.push_back(x);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    return r;
  }
  std::string choice(const std::string& name, std::initializer_list<const char*> allowed) const {
    const std::string v = raw(name);
    std::string list;
    for (const char* a : allowed) {
      if (v == a) return v;
      if (!list.empty()) list += " | ";
      list += a;
    }
    bad("--" + name + ": '" + v + "' is not one of " + list);
  }
};

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path + ": cannot open");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

Options parse_args(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string> cli;
  std::string json_path;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) != 0) {
      if (!o.op.empty()) bad("unexpected argument '" + a + "' (the op is already '" + o.op + "')");
      o.op = a;
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    const size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const bool control = name == "from-files" || name == "save" || name == "json";
    if (!control && !any_flag(name)) bad("unknown option '--" + name + "'");
    if (!has_value) {
      if (is_bool_flag(name)) {
        value = "true";
      } else {
        if (i + 1 >= argc) bad("option '--" + name + "' needs a value");
        value = argv[++i];
      }
    }
    if (control && value.empty()) bad("option '--" + name + "' needs a non-empty value");
    if (name == "from-files") {
      o.from_dir = value;
    } else if (name == "save") {
      o.save_dir = value;
    } else if (name == "json") {
      json_path = value;
    } else {
      cli[name] = value;
    }
  }
  if (!json_path.empty()) {
    std::vector<std::pair<std::string, std::string>> kv;
    std::string text = read_text(json_path);
    try {
      kv = FlatJson(std::move(text)).parse();
    } catch (const UsageError& e) {
      bad(json_path + ": " + e.msg);
    }
    for (auto& [k, v] : kv) {
      if (k == "op") {
        if (o.op.empty()) o.op = v;
        continue;
      }
      if (!any_flag(k)) bad(json_path + ": unknown key \"" + k + "\"");
      if (!cli.count(k)) o.given[k] = v;
    }
  }
  for (auto& [k, v] : cli) o.given[k] = v;
  if (!o.from_dir.empty() && !std::filesystem::is_directory(o.from_dir))
    bad("--from-files: '" + o.from_dir + "' is not a directory");
  if (o.op.empty()) bad("no op given (mla_prolog_v2 or fia_v4)");
  if (o.op != kProlog && o.op != kFia) bad("unknown op '" + o.op + "' (mla_prolog_v2 or fia_v4)");
  for (auto& kv : o.given)
    if (!find_flag(o.op, kv.first)) bad("option '--" + kv.first + "' does not apply to " + o.op);
  return o;
}

// case.json: the op, the seed and every case flag with a value.
void write_case_json(const Options& o, const std::string& path, const std::vector<std::string>& skip) {
  std::ostringstream s;
  s << "{\n  \"op\": \"" << o.op << "\"";
  for (const Flag& f : kFlags) {
    if (f.op[0] && o.op != f.op) continue;
    if (std::find(skip.begin(), skip.end(), f.name) != skip.end() || !o.set(f.name)) continue;
    s << ",\n  \"" << f.name << "\": ";
    const std::string v = o.raw(f.name);
    if (f.kind == Kind::kInt || f.kind == Kind::kNum) {
      s << v;
    } else if (f.kind == Kind::kBool) {
      s << (o.flag(f.name) ? "true" : "false");
    } else {
      s << '"';
      for (char c : v) {
        if (c == '"' || c == '\\') s << '\\';
        s << c;
      }
      s << '"';
    }
  }
  s << "\n}\n";
  std::ofstream f(path, std::ios::trunc);
  f << s.str();
  f.close();
  if (!f) bad(path + ": cannot write");
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

std::string shape_str(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(t.dims[i]);
  }
  return s + "]";
}
// A 2-D FRACTAL_NZ view with 4-D storage dims is stored (and saved) as its 4-D storage.
TensorView storage_view(const TensorView& v) {
  if (v.format == Format::kFractalNZ && v.rank == 2 && v.storage_rank == 4)
    return make_view(v.data, v.dtype, v.storage_dims, 4, v.format);
  return v;
}
bool same_dims(const TensorView& a, const TensorView& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}
bool is_float(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 || t == DType::kFloat64;
}
std::string file_in(const std::string& dir, const std::string& name) { return (std::filesystem::path(dir) / (name + ".npy")).string(); }

// Replaces a (dense) case input with DIR/<name>.npy when that file exists; its dtype and shape
// must be the case's. Returns true if it was read.
bool load_input(const std::string& dir, const std::string& name, const TensorView& dst) {
  const std::string path = file_in(dir, name);
  if (!std::filesystem::exists(path)) return false;
  NpyArray a;
  std::string e;
  if (!npy_read(path, &a, &e)) bad(e);
  if (a.view.dtype != dst.dtype || !same_dims(a.view, dst))
    bad(path + ": " + dtype_name(a.view.dtype) + " " + shape_str(a.view) + " does not match the case's " +
        dtype_name(dst.dtype) + " " + shape_str(dst) + " (check the flags)");
  if (a.nbytes()) std::memcpy(dst.data, a.bytes(), static_cast<size_t>(a.nbytes()));
  return true;
}
bool load_int_array(const std::string& dir, const std::string& name, std::vector<int64_t>* dst) {
  const std::string path = file_in(dir, name);
  if (!std::filesystem::exists(path)) return false;
  NpyArray a;
  std::string e;
  if (!npy_read(path, &a, &e)) bad(e);
  if (is_float(a.view.dtype) || a.view.rank != 1 || a.view.dims[0] != static_cast<int64_t>(dst->size()))
    bad(path + ": " + dtype_name(a.view.dtype) + " " + shape_str(a.view) + " is not an integer vector of " +
        std::to_string(dst->size()) + " values (check the flags)");
  for (size_t i = 0; i < dst->size(); ++i) (*dst)[i] = load_i64(a.view, static_cast<int64_t>(i));
  return true;
}
// An output saved by another implementation: the case's shape; the case's dtype or (for float
// outputs) any float dtype.
NpyArray load_output(const std::string& dir, const std::string& name, const TensorView& like) {
  const std::string path = file_in(dir, name);
  NpyArray a;
  std::string e;
  if (!npy_read(path, &a, &e)) bad(e + " (an output to compare)");
  const bool dtype_ok = a.view.dtype == like.dtype || (is_float(like.dtype) && is_float(a.view.dtype));
  if (!dtype_ok || !same_dims(a.view, like))
    bad(path + ": " + dtype_name(a.view.dtype) + " " + shape_str(a.view) + " does not match the output's " +
        dtype_name(like.dtype) + " " + shape_str(like));
  return a;
}
void save(const std::string& dir, const std::string& name, const TensorView& t) {
  std::string e;
  if (!npy_write(file_in(dir, name), t, &e)) bad(e);
}
void save_ints(const std::string& dir, const std::string& name, const std::vector<int64_t>& v) {
  std::vector<int64_t> copy = v;
  const int64_t n = static_cast<int64_t>(copy.size());
  save(dir, name, make_view(copy.data(), DType::kInt64, {n}));
}
void make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) bad(dir + ": cannot create the directory");
}

// ---------------------------------------------------------------------------------------------
// Comparison and report
// ---------------------------------------------------------------------------------------------

enum class Rule { kTolerance, kLse };

struct OutputCheck {
  std::string name;
  TensorView got, ref;
  testing::Tolerance tol;
  Rule rule = Rule::kTolerance;
  const TensorView* initial = nullptr;  // in/out tensors: the content before the call
  DType out_dtype = DType::kUndefined;  // the operator's dtype (undefined: ref.dtype)
};

std::string multi_index(const TensorView& t, int64_t linear) {
  std::vector<int64_t> idx(static_cast<size_t>(t.rank));
  for (int i = t.rank - 1; i >= 0; --i) {
    const int64_t d = t.dims[i] > 0 ? t.dims[i] : 1;
    idx[static_cast<size_t>(i)] = linear % d;
    linear /= d;
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(idx[i]);
  }
  return s + "]";
}

bool elem_equal(const TensorView& a, const TensorView& b, int64_t i) {
  const int64_t es = dtype_size(a.dtype);
  return std::memcmp(static_cast<const char*>(a.data) + linear_to_offset(a, i) * es,
                     static_cast<const char*>(b.data) + linear_to_offset(b, i) * es, static_cast<size_t>(es)) == 0;
}

// Prints one output's statistics and verdict; returns PASS.
bool report(const OutputCheck& c) {
  const bool integer = c.ref.dtype == DType::kInt8 || c.ref.dtype == DType::kInt32 || c.ref.dtype == DType::kInt64;
  const testing::Stats s = testing::compare(c.got, c.ref, c.tol);
  bool pass;
  int64_t bad_n = s.bad, worst = s.worst;
  if (c.rule == Rule::kLse) {
    // the FIA harness rule: +-inf / NaN positions equal exactly, else |d| <= 1e-4 |ref| + 1e-5
    bad_n = 0;
    worst = -1;
    double worst_excess = -1;
    for (int64_t i = 0; i < s.n; ++i) {
      const double x = load_f64(c.got, linear_to_offset(c.got, i)), y = load_f64(c.ref, linear_to_offset(c.ref, i));
      if (!std::isfinite(x) || !std::isfinite(y)) {
        if (!(x == y) && !(std::isnan(x) && std::isnan(y))) {
          ++bad_n;
          if (worst_excess < INFINITY) {  // the first non-finite mismatch is the worst
            worst = i;
            worst_excess = INFINITY;
          }
        }
        continue;
      }
      const double excess = std::fabs(x - y) - (1e-4 * std::fabs(y) + 1e-5);
      if (excess > 0) {
        ++bad_n;
        if (excess > worst_excess) {
          worst = i;
          worst_excess = excess;
        }
      }
    }
    pass = bad_n == 0;
  } else {
    pass = testing::within(s, c.tol, integer);
  }
  if (worst < 0) {  // nothing beyond the bound: show the largest absolute difference
    double m = -1;
    for (int64_t i = 0; i < s.n; ++i) {
      const double d = std::fabs(load_f64(c.got, linear_to_offset(c.got, i)) - load_f64(c.ref, linear_to_offset(c.ref, i)));
      const double key = std::isnan(d) ? INFINITY : d;
      if (key > m) {
        m = key;
        worst = i;
      }
    }
  }
  int64_t untouched = 0;
  if (c.initial != nullptr && c.got.dtype == c.ref.dtype) {
    for (int64_t i = 0; i < s.n; ++i) untouched += elem_equal(c.got, *c.initial, i) != elem_equal(c.ref, *c.initial, i);
    pass = pass && untouched == 0;
  }
  const DType out_dtype = c.out_dtype == DType::kUndefined ? c.ref.dtype : c.out_dtype;
  std::printf("%-30s %-22s %-8s %s\n", c.name.c_str(), shape_str(c.ref).c_str(), dtype_name(out_dtype),
              pass ? "PASS" : "FAIL");
  std::printf("    max_abs %.3e  max_rel %.3e  mean_rel %.3e  cosine %.7f  beyond bound %lld of %lld\n", s.max_abs,
              s.max_rel, s.mean_rel, s.cosine, static_cast<long long>(bad_n), static_cast<long long>(s.n));
  if (worst >= 0 && (s.max_abs > 0 || bad_n > 0)) {
    std::printf("    worst %s: got %.9g ref %.9g\n", multi_index(c.ref, worst).c_str(),
                load_f64(c.got, linear_to_offset(c.got, worst)), load_f64(c.ref, linear_to_offset(c.ref, worst)));
  } else if (s.n > 0) {
    std::printf("    worst: none (every element equals the reference)\n");
  }
  if (c.ref.dtype != out_dtype)
    std::printf("    reference kept in %s (not rounded to %s)\n", dtype_name(c.ref.dtype), dtype_name(out_dtype));
  if (c.got.dtype != out_dtype) std::printf("    file dtype %s, compared as values\n", dtype_name(c.got.dtype));
  if (untouched) std::printf("    %lld elements written by one side and left untouched by the other\n", static_cast<long long>(untouched));
  if (c.rule == Rule::kLse) {
    std::printf("    rule: |got - ref| <= 1e-4*|ref| + 1e-5, +-inf positions equal\n");
  } else if (integer) {
    std::printf("    rule: |got - ref| <= %lld, at most %.2g%% of the elements differ\n",
                static_cast<long long>(c.tol.int_max_diff), 100 * c.tol.int_max_off_frac);
  } else {
    std::printf("    rule: |got - ref| <= %.3g*|ref| + %.3g*rms(ref)%s, mean_rel <= %.3g, cosine >= %.6g\n", c.tol.rtol,
                c.tol.atol_rms,
                c.tol.max_bad_frac > 0 ? " (up to 0.1% of elements within cap)" : "", c.tol.max_mean_rel,
                c.tol.min_cosine);
  }
  return pass;
}

int finish(const std::vector<OutputCheck>& checks) {
  int failed = 0;
  for (const OutputCheck& c : checks) failed += report(c) ? 0 : 1;
  if (failed) {
    std::printf("result: FAIL (%d of %zu outputs)\n", failed, checks.size());
    return 1;
  }
  std::printf("result: PASS (%zu outputs)\n", checks.size());
  return 0;
}

void print_fast_path_line(const Options& o, const char* api) {
  if (o.from_dir.empty()) {
    std::printf("compared: %s (isa %s, %d threads) vs the float64 reference\n", api, isa_name(active_isa()),
                num_threads());
  } else {
    std::printf("compared: the outputs in %s vs the float64 reference\n", o.from_dir.c_str());
  }
}

// ---------------------------------------------------------------------------------------------
// mla_prolog_v2
// ---------------------------------------------------------------------------------------------

int check_mla_prolog(const Options& o) {
  using testdata::HostTensor;
  testdata::MlaPrologCaseConfig cfg;
  const std::string sc = o.choice("scenario", {"no_quant", "partial", "partial_kvq", "full", "full_kvq"});
  cfg.scenario = sc == "no_quant"      ? MlaPrologScenario::kNoQuant
                 : sc == "partial"     ? MlaPrologScenario::kPartialQuantKvNoQuant
                 : sc == "partial_kvq" ? MlaPrologScenario::kPartialQuantKvQuant
                 : sc == "full"        ? MlaPrologScenario::kFullQuantKvNoQuant
                                       : MlaPrologScenario::kFullQuantKvQuant;
  if (o.has("tokens")) {
    if (o.has("batch") || o.has("seq")) bad("--tokens excludes --batch / --seq");
    cfg.bsh = false;
    cfg.B = o.i64("tokens", 1, 1 << 20);
    cfg.S = 1;
  } else {
    cfg.bsh = true;
    cfg.B = o.i64("batch", 1, 65536);
    cfg.S = o.i64("seq", 1, 1 << 20);
    if (cfg.B * cfg.S > (1 << 20)) bad("--batch * --seq exceeds 1048576 tokens");
  }
  cfg.N = o.i64("heads", 1, 1024);
  cfg.He = o.i64("hidden", 1, 65536);
  cfg.Hcq = o.i64("q-lora", 1, 65536);
  cfg.Hckv = o.i64("kv-lora", 1, 65536);
  cfg.D = o.i64("dim", 1, 65536);
  cfg.Dr = o.i64("rope-dim", 2, 65536);
  if (cfg.Dr % 2) bad("--rope-dim must be even");
  cfg.cache_mode = o.choice("cache-mode", {"PA_BSND", "PA_NZ"}) == "PA_NZ" ? MlaPrologCacheMode::kPaNz
                                                                           : MlaPrologCacheMode::kPaBsnd;
  cfg.block_size = o.i64("block-size", 1, 1 << 20);
  cfg.block_num = o.set("block-num") ? o.i64("block-num", 0, 1 << 20) : (cfg.T() + cfg.block_size - 1) / cfg.block_size + 1;
  const std::string wf = o.choice("weight-form", {"nz", "nz2d", "nd"});
  cfg.weight_form = wf == "nz" ? testdata::WeightForm::kNz4d : wf == "nz2d" ? testdata::WeightForm::kNz2d : testdata::WeightForm::kNd;
  if (cfg.weight_form == testdata::WeightForm::kNd && cfg.scenario != MlaPrologScenario::kNoQuant)
    bad("--weight-form nd: int8 weights must be FRACTAL_NZ (use nz or nz2d)");
  cfg.smooth = o.flag("smooth");
  cfg.seed = static_cast<uint64_t>(o.i64("seed", 0));

  testdata::MlaPrologCase c = testdata::make_mla_prolog_case(cfg);
  const bool full_kvq = cfg.scenario == MlaPrologScenario::kFullQuantKvQuant;

  // inputs in aclnn prototype order (absent optional ones are skipped)
  const std::pair<const char*, const HostTensor*> inputs[] = {
      {"tokenX", &c.token_x},
      {"weightDq", &c.weight_dq},
      {"weightUqQr", &c.weight_uq_qr},
      {"weightUk", &c.weight_uk},
      {"weightDkvKr", &c.weight_dkv_kr},
      {"rmsnormGammaCq", &c.rmsnorm_gamma_cq},
      {"rmsnormGammaCkv", &c.rmsnorm_gamma_ckv},
      {"ropeSin", &c.rope_sin},
      {"ropeCos", &c.rope_cos},
      {"cacheIndex", &c.cache_index},
      {"kvCacheRef", &c.kv_cache},
      {"krCacheRef", &c.kr_cache},
      {"dequantScaleXOptional", &c.dequant_scale_x},
      {"dequantScaleWDqOptional", &c.dequant_scale_w_dq},
      {"dequantScaleWUqQrOptional", &c.dequant_scale_w_uq_qr},
      {"dequantScaleWDkvKrOptional", &c.dequant_scale_w_dkv_kr},
      {"quantScaleCkvOptional", &c.quant_scale_ckv},
      {"quantScaleCkrOptional", &c.quant_scale_ckr},
      {"smoothScalesCqOptional", &c.smooth_scales_cq},
  };
  int from_inputs = 0;
  if (!o.from_dir.empty())
    for (auto& [name, h] : inputs)
      if (h->present()) from_inputs += load_input(o.from_dir, name, storage_view(h->view));

  std::printf("mlaops check mla_prolog_v2: %s %s He=%lld Hcq=%lld N=%lld D=%lld Dr=%lld Hckv=%lld blocks=%lldx%lld %s "
              "weights=%s seed=%llu\n",
              mla_prolog_scenario_name(cfg.scenario),
              (cfg.bsh ? "B=" + std::to_string(cfg.B) + " S=" + std::to_string(cfg.S) : "T=" + std::to_string(cfg.B)).c_str(),
              static_cast<long long>(cfg.He), static_cast<long long>(cfg.Hcq), static_cast<long long>(cfg.N),
              static_cast<long long>(cfg.D), static_cast<long long>(cfg.Dr), static_cast<long long>(cfg.Hckv),
              static_cast<long long>(cfg.block_num), static_cast<long long>(cfg.block_size),
              mla_prolog_cache_mode_name(cfg.cache_mode), wf.c_str(), static_cast<unsigned long long>(cfg.seed));
  if (!o.from_dir.empty()) std::printf("inputs: %d read from %s, the rest generated\n", from_inputs, o.from_dir.c_str());

  // the reference on its own copies of the in/out tensors
  const HostTensor kv0 = c.kv_cache.clone(), kr0 = c.kr_cache.clone();
  HostTensor r_kv = c.kv_cache.clone(), r_kr = c.kr_cache.clone(), r_q = c.query_out.clone(),
             r_qr = c.query_rope_out.clone(), r_dqs = c.dequant_scale_q_nope_out.clone();
  MlaPrologParams rp = c.params();
  rp.kv_cache = r_kv.view;
  rp.kr_cache = r_kr.view;
  rp.query_out = r_q.view;
  rp.query_rope_out = r_qr.view;
  if (r_dqs.present()) rp.dequant_scale_q_nope_out = &r_dqs.view;
  if (mla_prolog_ref(rp) != kSuccess) bad(std::string("the reference rejects this case: ") + last_error_message());

  if (!o.save_dir.empty()) {
    make_dir(o.save_dir);
    for (auto& [name, h] : inputs)
      if (h->present()) save(o.save_dir, name, h == &c.kv_cache ? kv0.view : h == &c.kr_cache ? kr0.view : storage_view(h->view));
    save(o.save_dir, "queryOut", r_q.view);
    save(o.save_dir, "queryRopeOut", r_qr.view);
    if (full_kvq) save(o.save_dir, "dequantScaleQNopeOutOptional", r_dqs.view);
    save(o.save_dir, "kvCacheRef.out", r_kv.view);
    save(o.save_dir, "krCacheRef.out", r_kr.view);
    write_case_json(o, (std::filesystem::path(o.save_dir) / "case.json").string(),
                    o.has("tokens") ? std::vector<std::string>{"batch", "seq"} : std::vector<std::string>{});
    std::printf("saved: inputs, reference outputs and case.json in %s\n", o.save_dir.c_str());
  }

  // the implementation under test
  NpyArray f_q, f_qr, f_dqs, f_kv, f_kr;
  TensorView g_q = c.query_out.view, g_qr = c.query_rope_out.view, g_dqs = c.dequant_scale_q_nope_out.view,
             g_kv = c.kv_cache.view, g_kr = c.kr_cache.view;
  if (!o.from_dir.empty()) {
    f_q = load_output(o.from_dir, "queryOut", r_q.view);
    f_qr = load_output(o.from_dir, "queryRopeOut", r_qr.view);
    f_kv = load_output(o.from_dir, "kvCacheRef.out", r_kv.view);
    f_kr = load_output(o.from_dir, "krCacheRef.out", r_kr.view);
    g_q = f_q.view, g_qr = f_qr.view, g_kv = f_kv.view, g_kr = f_kr.view;
    if (full_kvq) {
      f_dqs = load_output(o.from_dir, "dequantScaleQNopeOutOptional", r_dqs.view);
      g_dqs = f_dqs.view;
    }
  } else {
    const MlaPrologParams p = c.params();
    uint64_t bytes = 0;
    Status s = mla_prolog_workspace_size(p, &bytes);
    std::vector<uint8_t> ws(static_cast<size_t>(bytes) + 1);
    if (s == kSuccess) s = mla_prolog(p, ws.data(), bytes);
    if (s != kSuccess) {
      std::printf("fast path (mlaops::mla_prolog) failed: %s\nresult: FAIL\n", last_error_message());
      return 1;
    }
  }
  print_fast_path_line(o, "mlaops::mla_prolog");

  // the rules of tests/ops/mla_prolog/mla_prolog_harness.h
  const bool quant_q = cfg.scenario != MlaPrologScenario::kNoQuant;
  testing::Tolerance q_tol = testing::bf16_tolerance(quant_q ? 4 : 2);
  if (quant_q) {
    q_tol.max_bad_frac = 0.001;
    q_tol.cap_rms = 0.05;
  }
  std::vector<OutputCheck> checks;
  if (full_kvq) {
    checks.push_back({"queryOut", g_q, r_q.view, testing::int8_tolerance(0.02), Rule::kTolerance, nullptr});
    checks.push_back({"dequantScaleQNopeOutOptional", g_dqs, r_dqs.view, testing::fp32_tolerance(0.02),
                      Rule::kTolerance, nullptr});
  } else {
    checks.push_back({"queryOut", g_q, r_q.view, q_tol, Rule::kTolerance, nullptr});
  }
  checks.push_back({"queryRopeOut", g_qr, r_qr.view, q_tol, Rule::kTolerance, nullptr});
  auto cache_tol = [](const TensorView& v) {
    return v.dtype == DType::kInt8 ? testing::int8_tolerance(0.02) : testing::bf16_tolerance(2);
  };
  checks.push_back({"kvCacheRef (after)", g_kv, r_kv.view, cache_tol(r_kv.view), Rule::kTolerance, &kv0.view});
  checks.push_back({"krCacheRef (after)", g_kr, r_kr.view, cache_tol(r_kr.view), Rule::kTolerance, &kr0.view});
  return finish(checks);
}

// ---------------------------------------------------------------------------------------------
// fia_v4
// ---------------------------------------------------------------------------------------------

int check_fia(const Options& o) {
  using fia_test::HostTensor;
  const std::string layout = o.raw("layout");
  FiaLayout in_l, out_l;
  if (!parse_fia_layout(layout, &in_l, &out_l)) bad("--layout: '" + layout + "' is not an inputLayout of FIA V4");
  const bool packed = fia_layout_is_packed(in_l);
  const int64_t B = o.i64("batch", 1, 65536);
  const int64_t N = o.i64("heads", 1, 4096);
  const int64_t KVN = o.i64("kv-heads", 1, 4096);
  if (N % KVN) bad("--heads must be a multiple of --kv-heads");
  std::vector<int64_t> q_lens = o.list("q-len", 0), kv_lens = o.list("kv-len", 0);
  auto per_batch = [&](std::vector<int64_t>& v, const char* name) {
    if (v.size() == 1) v.assign(static_cast<size_t>(B), v[0]);
    if (static_cast<int64_t>(v.size()) != B)
      bad(std::string("--") + name + ": " + std::to_string(v.size()) + " values for --batch " + std::to_string(B));
  };
  const bool q_list = q_lens.size() > 1, kv_list = kv_lens.size() > 1;
  per_batch(q_lens, "q-len");
  per_batch(kv_lens, "kv-len");
  const int64_t Sq = std::max<int64_t>(1, *std::max_element(q_lens.begin(), q_lens.end()));
  const int64_t Skv = *std::max_element(kv_lens.begin(), kv_lens.end());
  const int64_t D = o.i64("dim", 1, 65536);
  const int64_t Dv = o.set("value-dim") ? o.i64("value-dim", 1, 65536) : D;
  const int64_t Dr = o.i64("rope-dim", 0, 65536);
  const std::string dts = o.choice("dtype", {"bf16", "fp16"});
  const DType dtype = dts == "bf16" ? DType::kBFloat16 : DType::kFloat16;
  const int64_t sparse = o.i64("sparse-mode", 0, 4);
  const bool want_mask = o.flag("mask");
  if (want_mask && sparse > 1) bad("--mask applies to sparse modes 0 and 1 (2..4 always get the 2048x2048 template)");
  const int64_t block_size = o.i64("block-size", 0, 1 << 20);
  const std::string kvf = o.choice("kv-format", {"bnbsh", "bnnbsd", "nz"});
  const bool lse = o.flag("lse");
  const uint64_t seed = static_cast<uint64_t>(o.i64("seed", 0, UINT32_MAX));
  const double scale = o.set("scale") ? o.num("scale") : 1.0 / std::sqrt(static_cast<double>(D + Dr));
  if (static_cast<double>(B) * static_cast<double>(KVN) * static_cast<double>(Skv) * static_cast<double>(D + Dv + Dr) > 2e9 ||
      static_cast<double>(B) * static_cast<double>(N) * static_cast<double>(Sq) * static_cast<double>(D + Dr) > 2e9)
    bad("the case is too large for a check (over 2e9 elements in one tensor)");

  fia_test::FiaCanonical canon =
      fia_test::make_canonical(dtype, B, N, KVN, Sq, Skv, D, Dv, Dr, static_cast<uint32_t>(seed));
  if (q_list || packed) canon.act_q = q_lens;
  if (kv_list || block_size > 0 || packed) canon.act_kv = kv_lens;

  fia_test::FiaRunConfig cfg;
  cfg.layout = layout;
  cfg.paged = block_size > 0;
  cfg.block_size = block_size > 0 ? block_size : 16;
  cfg.cache_rank = kvf == "bnbsh" ? 3 : kvf == "bnnbsd" ? 4 : 5;
  cfg.table_seed = static_cast<uint32_t>(seed * 13 + 5);
  cfg.lse = lse;
  cfg.scale = scale;
  cfg.sparse_mode = sparse;
  cfg.pre_tokens = o.i64("pre-tokens", INT32_MIN, INT64_MAX);
  cfg.next_tokens = o.i64("next-tokens", INT32_MIN, INT64_MAX);
  HostTensor mask;
  if (sparse >= 2) {
    mask = fia_test::template_mask_2048(DType::kBool, 2);
  } else if (sparse == 1 || want_mask) {
    std::mt19937 gen(static_cast<uint32_t>(seed * 31 + 7));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    mask = fia_test::make_mask3(DType::kBool, B, Sq, std::max<int64_t>(Skv, 1),
                                [&](int64_t, int64_t, int64_t) { return u(gen) < 0.3; });
  }
  if (mask.dtype != DType::kUndefined) cfg.mask = &mask;

  fia_test::FiaRunConfig ref_cfg = cfg;
  ref_cfg.out_dtype = DType::kFloat64;  // the harness compares with the unrounded float64 result
  std::unique_ptr<fia_test::FiaRun> ref = fia_test::build_fia_run(canon, ref_cfg);
  if (!ref) bad("--layout: cannot build the case");

  // inputs in aclnn prototype order
  struct In {
    const char* name;
    HostTensor* t;
    std::vector<int64_t>* ints;
    bool present;
  };
  auto inputs_of = [&](fia_test::FiaRun& r) {
    return std::vector<In>{
        {"query", &r.query, nullptr, true},
        {"key", &r.key, nullptr, true},
        {"value", &r.value, nullptr, true},
        {"attenMaskOptional", &r.mask, nullptr, r.params.atten_mask != nullptr},
        {"actualSeqLengthsOptional", nullptr, &r.asl_q, r.params.actual_seq_lengths != nullptr},
        {"actualSeqLengthsKvOptional", nullptr, &r.asl_kv, r.params.actual_seq_lengths_kv != nullptr},
        {"blockTableOptional", &r.block_table, nullptr, r.params.block_table != nullptr},
        {"queryRopeOptional", &r.query_rope, nullptr, r.params.query_rope != nullptr},
        {"keyRopeOptional", &r.key_rope, nullptr, r.params.key_rope != nullptr},
    };
  };
  int from_inputs = 0;
  if (!o.from_dir.empty())
    for (const In& in : inputs_of(*ref))
      if (in.present)
        from_inputs += in.t ? load_input(o.from_dir, in.name, in.t->view()) : load_int_array(o.from_dir, in.name, in.ints);

  std::string lens_txt = "Q_S=" + std::to_string(Sq) + " KV_S=" + std::to_string(Skv);
  if (!canon.act_q.empty() || !canon.act_kv.empty()) {
    auto join = [](const std::vector<int64_t>& v) {
      std::string s;
      for (int64_t x : v) {
        if (!s.empty()) s += ',';
        s += std::to_string(x);
      }
      return s;
    };
    lens_txt = "q-len " + join(q_lens) + " kv-len " + join(kv_lens);
  }
  std::printf("mlaops check fia_v4: %s %s B=%lld N=%lld KV_N=%lld %s D=%lld Dv=%lld rope=%lld sparse=%lld%s "
              "scale=%.6g %s lse=%s seed=%llu\n",
              layout.c_str(), dts.c_str(), static_cast<long long>(B), static_cast<long long>(N),
              static_cast<long long>(KVN), lens_txt.c_str(), static_cast<long long>(D), static_cast<long long>(Dv),
              static_cast<long long>(Dr), static_cast<long long>(sparse), cfg.mask ? " mask" : "", scale,
              cfg.paged ? ("paged " + kvf + " block " + std::to_string(block_size)).c_str() : "contiguous",
              lse ? "yes" : "no", static_cast<unsigned long long>(seed));
  if (!o.from_dir.empty()) std::printf("inputs: %d read from %s, the rest generated\n", from_inputs, o.from_dir.c_str());

  if (fused_infer_attention_score_v4_ref(ref->params) != kSuccess)
    bad(std::string("the reference rejects this case: ") + last_error_message());

  if (!o.save_dir.empty()) {
    make_dir(o.save_dir);
    for (const In& in : inputs_of(*ref)) {
      if (!in.present) continue;
      if (in.t) {
        save(o.save_dir, in.name, in.t->view());
      } else {
        save_ints(o.save_dir, in.name, *in.ints);
      }
    }
    save(o.save_dir, "attentionOut", ref->out.view());
    if (lse) save(o.save_dir, "softmaxLse", ref->lse.view());
    write_case_json(o, (std::filesystem::path(o.save_dir) / "case.json").string(), {});
    std::printf("saved: inputs, reference outputs (attentionOut as float64) and case.json in %s\n", o.save_dir.c_str());
  }

  // the implementation under test
  TensorView g_out, g_lse;
  NpyArray f_out, f_lse;
  std::unique_ptr<fia_test::FiaRun> fast;
  TensorView like_out = ref->out.view();
  like_out.dtype = dtype;
  if (!o.from_dir.empty()) {
    f_out = load_output(o.from_dir, "attentionOut", like_out);
    g_out = f_out.view;
    if (lse) {
      f_lse = load_output(o.from_dir, "softmaxLse", ref->lse.view());
      g_lse = f_lse.view;
    }
  } else {
    fast = fia_test::build_fia_run(canon, cfg);
    uint64_t bytes = 0;
    Status s = fused_infer_attention_score_v4_workspace_size(fast->params, &bytes);
    std::vector<uint64_t> ws(static_cast<size_t>(bytes / 8 + 1));
    if (s == kSuccess) s = fused_infer_attention_score_v4(fast->params, ws.data(), bytes);
    if (s != kSuccess) {
      std::printf("fast path (mlaops::fused_infer_attention_score_v4) failed: %s\nresult: FAIL\n",
                  last_error_message());
      return 1;
    }
    g_out = fast->out.view();
    if (lse) g_lse = fast->lse.view();
  }
  print_fast_path_line(o, "mlaops::fused_infer_attention_score_v4");

  // the rules of tests/ops/fia/fia_harness.h
  const testing::Tolerance out_tol = dtype == DType::kFloat16 ? testing::Tolerance{5e-3, 5e-3, 2e-3, 0.9999, 0, 0, 0, 0}
                                                              : testing::Tolerance{7.8e-3, 1e-2, 1.5e-2, 0.9995, 0, 0, 0, 0};
  std::vector<OutputCheck> checks;
  checks.push_back({"attentionOut", g_out, ref->out.view(), out_tol, Rule::kTolerance, nullptr, dtype});
  if (lse) checks.push_back({"softmaxLse", g_lse, ref->lse.view(), testing::fp32_tolerance(), Rule::kLse, nullptr});
  return finish(checks);
}

}  // namespace

int cmd_check(int argc, char** argv) {
  for (int i = 0; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
  try {
    const Options o = parse_args(argc, argv);
    return o.op == kProlog ? check_mla_prolog(o) : check_fia(o);
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mlaops check: %s\nRun 'mlaops check --help' for the options.\n", e.msg.c_str());
    return 2;
  }
}

}  // namespace mlaops::tools
