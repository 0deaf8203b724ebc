// .npy reading and writing (see tools/npy.h for the format rules and the bfloat16 convention).
#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "core/element_access.h"

namespace mlaops::tools {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

struct DescrEntry {
  const char* descr;
  DType dtype;
};
// The descr written for each dtype (first match) and the accepted spellings.
constexpr DescrEntry kDescrs[] = {
    {"<f8", DType::kFloat64}, {"<f4", DType::kFloat32}, {"<f2", DType::kFloat16}, {"|V2", DType::kBFloat16},
    {"<i8", DType::kInt64},   {"<i4", DType::kInt32},   {"<i2", DType::kInt16},   {"|i1", DType::kInt8},
    {"<u8", DType::kUInt64},  {"<u4", DType::kUInt32},  {"<u2", DType::kUInt16},  {"|u1", DType::kUInt8},
    {"|b1", DType::kBool},
    // accepted on read only
    {"<V2", DType::kBFloat16}, {"bfloat16", DType::kBFloat16}, {"<i1", DType::kInt8}, {"=i1", DType::kInt8},
    {"<u1", DType::kUInt8},    {"=u1", DType::kUInt8},         {"<b1", DType::kBool}, {"=b1", DType::kBool},
};

// A strict reader of the header dict: {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple>}
// in any key order, with Python literal syntax, optional trailing commas and whitespace.
class HeaderParser {
 public:
  HeaderParser(const char* p, size_t n) : p_(p), n_(n) {}

  bool parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape, std::string* error) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    ws();
    if (!eat('{')) return fail(error, "the header is not a dict ('{' expected)");
    ws();
    while (!peek('}')) {
      std::string key;
      if (!string_lit(&key)) return fail(error, "a quoted key expected in the header dict");
      ws();
      if (!eat(':')) return fail(error, "':' expected after key '" + key + "'");
      ws();
      if (key == "descr") {
        if (have_descr) return fail(error, "duplicate key 'descr'");
        have_descr = true;
        if (!string_lit(descr)) return fail(error, "'descr' must be a string (a list of fields is not supported)");
      } else if (key == "fortran_order") {
        if (have_fortran) return fail(error, "duplicate key 'fortran_order'");
        have_fortran = true;
        if (word("True")) {
          *fortran = true;
        } else if (word("False")) {
          *fortran = false;
        } else {
          return fail(error, "'fortran_order' must be True or False");
        }
      } else if (key == "shape") {
        if (have_shape) return fail(error, "duplicate key 'shape'");
        have_shape = true;
        if (!tuple(shape, error)) return false;
      } else {
        return fail(error, "unexpected key '" + key + "' in the header dict");
      }
      ws();
      if (eat(',')) {
        ws();
        continue;
      }
      if (!peek('}')) return fail(error, "',' or '}' expected in the header dict");
    }
    ++i_;  // '}'
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r' || p_[i_] == '\0')) ++i_;
    if (i_ != n_) return fail(error, "unexpected characters after the header dict");
    if (!have_descr || !have_fortran || !have_shape)
      return fail(error, std::string("the header lacks '") +
                             (!have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape") + "'");
    return true;
  }

 private:
  bool fail(std::string* error, const std::string& msg) {
    *error = msg;
    return false;
  }
  void ws() {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) ++i_;
  }
  bool peek(char c) const { return i_ < n_ && p_[i_] == c; }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  bool word(const char* w) {
    const size_t len = std::strlen(w);
    if (n_ - i_ < len || std::memcmp(p_ + i_, w, len) != 0) return false;
    i_ += len;
    return true;
  }
  bool string_lit(std::string* out) {
    if (i_ >= n_ || (p_[i_] != '\'' && p_[i_] != '"')) return false;
    const char q = p_[i_++];
    out->clear();
    while (i_ < n_ && p_[i_] != q) {
      if (p_[i_] == '\\' || p_[i_] == '\n') return false;  // no escapes in the keys and descrs we accept
      out->push_back(p_[i_++]);
    }
    if (i_ >= n_) return false;
    ++i_;
    return true;
  }
  bool tuple(std::vector<int64_t>* shape, std::string* error) {
    shape->clear();
    if (!eat('(')) return fail(error, "'shape' must be a tuple");
    ws();
    bool trailing_comma = false;
    while (!peek(')')) {
      if (i_ >= n_ || p_[i_] < '0' || p_[i_] > '9') return fail(error, "'shape' must hold non-negative integers");
      int64_t v = 0;
      while (i_ < n_ && p_[i_] >= '0' && p_[i_] <= '9') {
        const int digit = p_[i_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return fail(error, "a 'shape' value overflows int64");
        v = v * 10 + digit;
        ++i_;
      }
      if (i_ < n_ && p_[i_] == 'L') ++i_;  // Python 2 long literal
      shape->push_back(v);
      ws();
      trailing_comma = eat(',');
      ws();
      if (!trailing_comma && !peek(')')) return fail(error, "',' or ')' expected in 'shape'");
    }
    ++i_;
    if (shape->size() == 1 && !trailing_comma) return fail(error, "'shape' (n) is not a tuple; (n,) expected");
    return true;
  }

  const char* p_;
  size_t n_;
  size_t i_ = 0;
};

uint32_t read_le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string npy_descr(DType dtype) {
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == dtype) return e.descr;
  return {};
}

DType npy_dtype(const std::string& descr) {
  for (const DescrEntry& e : kDescrs)
    if (descr == e.descr) return e.dtype;
  return DType::kUndefined;
}

bool npy_parse(const uint8_t* data, size_t size, NpyArray* out, std::string* error) {
  if (size < 8 || std::memcmp(data, kMagic, 6) != 0) {
    *error = "not a .npy file (the magic string \\x93NUMPY is missing)";
    return false;
  }
  const int major = data[6];
  if (major < 1 || major > 3) {
    *error = "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(data[7]) +
             " (1.0, 2.0 and 3.0 are read)";
    return false;
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + static_cast<size_t>(len_bytes);
  if (size < prefix) {
    *error = "truncated header (the header length field is cut)";
    return false;
  }
  const size_t header_len = read_le(data + 8, len_bytes);
  if (header_len > size - prefix) {
    *error = "truncated header: it declares " + std::to_string(header_len) + " bytes, the file holds " +
             std::to_string(size - prefix) + " after the length field";
    return false;
  }
  const char* header = reinterpret_cast<const char*>(data + prefix);
  if (header_len == 0 || header[header_len - 1] != '\n') {
    *error = "malformed header (it must end with a newline)";
    return false;
  }
  std::string descr, perr;
  bool fortran = false;
  std::vector<int64_t> shape;
  HeaderParser parser(header, header_len);
  if (!parser.parse(&descr, &fortran, &shape, &perr)) {
    *error = "malformed header: " + perr;
    return false;
  }
  const DType dtype = npy_dtype(descr);
  if (dtype == DType::kUndefined) {
    *error = "unsupported dtype '" + descr + "'" +
             (!descr.empty() && descr[0] == '>' ? " (big-endian data is not supported)" : "") +
             "; supported: <f8 <f4 <f2 |V2 (bfloat16) <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1";
    return false;
  }
  if (fortran) {
    *error = "Fortran-order arrays are not supported (save with np.ascontiguousarray)";
    return false;
  }
  if (static_cast<int>(shape.size()) > kMaxRank) {
    *error = "rank " + std::to_string(shape.size()) + " exceeds the maximum " + std::to_string(kMaxRank);
    return false;
  }
  const int64_t es = dtype_size(dtype);
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / es / d) {
      *error = "the shape's byte size overflows int64";
      return false;
    }
    numel *= d;
  }
  const uint64_t nbytes = static_cast<uint64_t>(numel * es);
  const size_t offset = prefix + header_len;
  const uint64_t avail = size - offset;
  if (avail < nbytes) {
    *error = "truncated data: the shape needs " + std::to_string(nbytes) + " bytes, the file holds " +
             std::to_string(avail);
    return false;
  }
  if (avail > nbytes) {
    *error = std::to_string(avail - nbytes) + " unexpected bytes after the " + std::to_string(nbytes) + " data bytes";
    return false;
  }
  NpyArray a;
  a.storage.assign(static_cast<size_t>((nbytes + 7) / 8 + 1), 0);
  if (nbytes) std::memcpy(a.storage.data(), data + offset, static_cast<size_t>(nbytes));
  a.view.data = a.storage.data();
  a.view.dtype = dtype;
  a.view.rank = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int i = a.view.rank - 1; i >= 0; --i) {
    a.view.dims[i] = shape[static_cast<size_t>(i)];
    a.view.strides[i] = stride;
    stride *= shape[static_cast<size_t>(i)] > 0 ? shape[static_cast<size_t>(i)] : 1;
  }
  *out = std::move(a);
  return true;
}

bool npy_serialize(const TensorView& t, std::vector<uint8_t>* out, std::string* error) {
  const std::string descr = npy_descr(t.dtype);
  if (descr.empty()) {
    *error = std::string("dtype ") + dtype_name(t.dtype) + " has no .npy equivalent here";
    return false;
  }
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.rank; ++i) {
    dict += std::to_string(t.dims[i]);
    if (i + 1 < t.rank || t.rank == 1) dict += ",";
    if (i + 1 < t.rank) dict += " ";
  }
  dict += "), }";
  int major = 1;
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  if (total - prefix > 65535) {
    major = 2;
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  const size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict.push_back('\n');

  const int64_t es = dtype_size(t.dtype);
  const int64_t n = t.numel();
  out->clear();
  out->reserve(total + static_cast<size_t>(n * es));
  out->insert(out->end(), kMagic, kMagic + 6);
  out->push_back(static_cast<uint8_t>(major));
  out->push_back(0);
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out->push_back(static_cast<uint8_t>((header_len >> (8 * i)) & 0xff));
  out->insert(out->end(), dict.begin(), dict.end());
  const size_t data_at = out->size();
  out->resize(data_at + static_cast<size_t>(n * es));
  const uint8_t* src = static_cast<const uint8_t*>(t.data);
  if (t.is_contiguous()) {
    if (n) std::memcpy(out->data() + data_at, src, static_cast<size_t>(n * es));
  } else {
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(out->data() + data_at + static_cast<size_t>(i * es), src + linear_to_offset(t, i) * es,
                  static_cast<size_t>(es));
  }
  return true;
}

bool npy_read(const std::string& path, NpyArray* out, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = path + ": cannot open";
    return false;
  }
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) {
    *error = path + ": read error";
    return false;
  }
  std::string e;
  if (!npy_parse(buf.data(), buf.size(), out, &e)) {
    *error = path + ": " + e;
    return false;
  }
  return true;
}

bool npy_write(const std::string& path, const TensorView& t, std::string* error) {
  std::vector<uint8_t> buf;
  std::string e;
  if (!npy_serialize(t, &buf, &e)) {
    *error = path + ": " + e;
    return false;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    *error = path + ": cannot create";
    return false;
  }
  f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  f.close();
  if (!f) {
    *error = path + ": write error";
    return false;
  }
  return true;
}

}  // namespace mlaops::tools
