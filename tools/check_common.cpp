// `mlaops check`: the flags table, the option parser with its flat JSON reader, the .npy
// helpers, and the per-output comparison and report (tools/check_common.h).
#include "tools/check_common.h"

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
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/element_access.h"
#include "mlaops/runtime.h"
#include "tools/npy.h"

namespace mlaops::tools::check {

void bad(const std::string& msg) { throw UsageError{msg}; }

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
    {kProlog, "cache-mode", Kind::kStr, "PA_BSND",
     "PA_BSND | PA_NZ | V3's PA_BLK_BSND | PA_BLK_NZ | BSND (--batch) | TND (--tokens)"},
    {kProlog, "block-size", Kind::kInt, "128", "cache BlockSize"},
    {kProlog, "block-num", Kind::kInt, "", "cache BlockNum (default ceil(T / BlockSize) + 1; PA_BLK: the batches' blocks + 1)"},
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
    {kFia, "pse", Kind::kStr, "none", "pseShift: none | random [B, N, ...] | broadcast [1, N, ...] | alibi (the ALiBi full bias)"},
    {kFia, "sink", Kind::kBool, "false", "learnableSink: a random logit per query head [N]"},
    // MlaPreprocess
    {kPreprocess, "tokens", Kind::kInt, "4", "T tokens: input [T, He]"},
    {kPreprocess, "heads", Kind::kInt, "32", "N heads"},
    {kPreprocess, "hidden", Kind::kInt, "7168", "He hidden size"},
    {kPreprocess, "q-lora", Kind::kInt, "1536", "Hcq (gamma1; wdqDim)"},
    {kPreprocess, "kv-lora", Kind::kInt, "512", "Hckv (gamma2; the kv cache row)"},
    {kPreprocess, "dim", Kind::kInt, "128", "D q nope head dim"},
    {kPreprocess, "rope-dim", Kind::kInt, "64", "Dr rope dim (even)"},
    {kPreprocess, "dtype", Kind::kStr, "bf16", "bf16 | fp16 (the input dtype)"},
    {kPreprocess, "cache-mode", Kind::kStr, "0", "cacheMode 0..3 or kvcache | krope_ctkv | int8_nzcache | nzcache"},
    {kPreprocess, "quant-mode", Kind::kStr, "0", "quantMode 0 (per-tensor asymm) | 1 (per-token symm)"},
    {kPreprocess, "wuk-format", Kind::kStr, "nd", "nd [N, D, Hckv] | nz (per head [N, Hckv/16, D, 16])"},
    {kPreprocess, "weight-form", Kind::kStr, "nz", "wdqkv / wuq: nz [C1, R1, 16, c0] | nz_atb [1, C1, R1*16, c0] | nz2d"},
    {kPreprocess, "block-size", Kind::kInt, "128", "cache BlockSize"},
    {kPreprocess, "block-num", Kind::kInt, "", "cache BlockNum (default ceil(T / BlockSize) + 1; PA_BLK: the batches' blocks + 1)"},
    {kPreprocess, "bf16-weights", Kind::kBool, "false", "weights in the input dtype, doRmsNorm = false (unquantized path)"},
    {kPreprocess, "epsilon", Kind::kNum, "1e-6", "epsilon of the three RmsNorms (the vendor test's)"},
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

}  // namespace

std::string usage() {
  std::ostringstream s;
  s << "usage: mlaops check <op> [case flags] [--seed N] [--from-files DIR] [--save DIR] [--json FILE] [--explain]\n"
       "\n"
       "Golden mode: builds a case of <op> with deterministic random data (--seed), runs the fast path\n"
       "(the C++ API) and the float64 reference on separate copies, and prints per output tensor the\n"
       "shape, dtype, max abs / max rel / mean rel error, cosine similarity, the worst element and\n"
       "PASS/FAIL by the operator tests' rule. Exit status: 0 all pass, 1 a check failed, 2 bad\n"
       "arguments or files.\n"
       "\n"
       "ops: mla_prolog_v2 (MlaPrologV2WeightNz), fia_v4 (FusedInferAttentionScoreV4),\n"
       "     mla_preprocess (MlaPreprocess)\n"
       "\n"
       "options:\n"
       "  --from-files DIR  compare the outputs saved in DIR (<aclnn name>.npy; in/out caches as\n"
       "                    <name>.out.npy) with the reference instead of running the fast path;\n"
       "                    inputs present in DIR (<aclnn name>.npy) replace the generated ones\n"
       "  --save DIR        write the inputs, the reference outputs and case.json into DIR\n"
       "  --explain         print the fast path's plan: the ISA level and the kernel of each kind of\n"
       "                    work (and why the other rows were skipped), the work split, the workspace\n"
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

namespace {

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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Resolved options
// ---------------------------------------------------------------------------------------------

std::string Options::raw(const std::string& name) const {
  auto it = given.find(name);
  if (it != given.end()) return it->second;
  const Flag* f = find_flag(op, name);
  return f ? f->def : "";
}
int64_t Options::i64(const std::string& name, int64_t lo, int64_t hi) const {
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
double Options::num(const std::string& name) const {
  const std::string v = raw(name);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x)) bad("--" + name + ": '" + v + "' is not a finite number");
  return x;
}
bool Options::flag(const std::string& name) const {
  const std::string v = raw(name);
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  bad("--" + name + ": '" + v + "' is not true or false");
}
std::vector<int64_t> Options::list(const std::string& name, int64_t lo) const {
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
std::string Options::choice(const std::string& name, std::initializer_list<const char*> allowed) const {
  const std::string v = raw(name);
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    if (!list.empty()) list += " | ";
    list += a;
  }
  bad("--" + name + ": '" + v + "' is not one of " + list);
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path + ": cannot open");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

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
    if (name == "explain") {  // a control flag without a value
      if (has_value && value != "true" && value != "false") bad("--explain: '" + value + "' is not true or false");
      o.explain = !has_value || value == "true";
      continue;
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
  if (o.op.empty()) bad("no op given (mla_prolog_v2, fia_v4 or mla_preprocess)");
  if (o.op != kProlog && o.op != kFia && o.op != kPreprocess)
    bad("unknown op '" + o.op + "' (mla_prolog_v2, fia_v4 or mla_preprocess)");
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
TensorView storage_view(const TensorView& v) {
  if (v.format == Format::kFractalNZ && v.rank == 2 && v.storage_rank == 4)
    return make_view(v.data, v.dtype, v.storage_dims, 4, v.format);
  return v;
}

namespace {

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

}  // namespace

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

namespace {

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
  } else if (c.rule == Rule::kVendor) {
    // the MlaPreprocess harness (the vendor's rule, docs/ops/mla_preprocess.md): both NaN = equal; float: |d| <= max(0.003 |ref|,
    // 0.003) for all but 0.1 % of the elements; int8: |d| <= 1 everywhere
    bad_n = 0;
    worst = -1;
    double worst_excess = -1;
    for (int64_t i = 0; i < s.n; ++i) {
      const double x = load_f64(c.got, linear_to_offset(c.got, i)), y = load_f64(c.ref, linear_to_offset(c.ref, i));
      if (std::isnan(x) && std::isnan(y)) continue;
      const double d = std::fabs(x - y), bound = integer ? 1.0 : std::max(0.003 * std::fabs(y), 0.003);
      if (!(d <= bound)) {
        ++bad_n;
        const double excess = std::isnan(d) ? INFINITY : d - bound;
        if (excess > worst_excess) {
          worst = i;
          worst_excess = excess;
        }
      }
    }
    pass = integer ? bad_n == 0 : static_cast<double>(bad_n) <= 0.001 * static_cast<double>(s.n);
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
  } else if (c.rule == Rule::kVendor) {
    std::printf(integer ? "    rule: |got - ref| <= 1 everywhere (vendor)\n"
                        : "    rule: at most 0.1%% of the elements beyond max(0.003*|ref|, 0.003) (vendor)\n");
  } else if (integer) {
    std::printf("    rule: |got - ref| <= %lld, at most %.2g%% of the elements differ\n",
                static_cast<long long>(c.tol.int_max_diff), 100 * c.tol.int_max_off_frac);
  } else {
    char cascade[96] = "";
    if (c.tol.max_bad_frac > 0)
      std::snprintf(cascade, sizeof cascade, " but %.3g%% of the elements, each within %.3g*rms(ref)",
                    100 * c.tol.max_bad_frac, c.tol.cap_rms);
    std::printf("    rule: |got - ref| <= %.3g*|ref| + %.3g*rms(ref) for all%s; mean_rel <= %.3g, cosine >= %.6g\n",
                c.tol.rtol, c.tol.atol_rms, cascade, c.tol.max_mean_rel, c.tol.min_cosine);
  }
  return pass;
}

}  // namespace

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

void explain_plan(const Options& o, Status planned, const OpPlan& plan) {
  if (!o.explain) return;
  if (planned == kSuccess)
    std::printf("plan:\n%s", plan.explain().c_str());
  else
    std::printf("plan: none, the fast path rejects this case: %s\n", last_error_message());
}

}  // namespace mlaops::tools::check
