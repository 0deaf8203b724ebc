// Canvas drawing and the PNG writer (png.h).
#include "bench/png.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace bench {
namespace {

// 5x7 glyphs of ASCII 32..95, one byte per row (bit 4 = leftmost column); blank where not drawn.
constexpr uint8_t kFont[64][7] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // ' '
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '!'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '"'
    {0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a},  // '#'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '$'
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},  // '%'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '&'
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00},  // "'"
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02},  // '('
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08},  // ')'
    {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00},  // '*'
    {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00},  // '+'
    {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08},  // ','
    {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00},  // '-'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c},  // '.'
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00},  // '/'
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e},  // '0'
    {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e},  // '1'
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f},  // '2'
    {0x1e, 0x01, 0x01, 0x0e, 0x01, 0x01, 0x1e},  // '3'
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02},  // '4'
    {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e},  // '5'
    {0x0e, 0x10, 0x10, 0x1e, 0x11, 0x11, 0x0e},  // '6'
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},  // '7'
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e},  // '8'
    {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x01, 0x0e},  // '9'
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00},  // ':'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // ';'
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02},  // '<'
    {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00},  // '='
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08},  // '>'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '?'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '@'
    {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11},  // 'A'
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e},  // 'B'
    {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e},  // 'C'
    {0x1e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1e},  // 'D'
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f},  // 'E'
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10},  // 'F'
    {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f},  // 'G'
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11},  // 'H'
    {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e},  // 'I'
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c},  // 'J'
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11},  // 'K'
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f},  // 'L'
    {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11},  // 'M'
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},  // 'N'
    {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},  // 'O'
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10},  // 'P'
    {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d},  // 'Q'
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11},  // 'R'
    {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e},  // 'S'
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},  // 'T'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e},  // 'U'
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04},  // 'V'
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a},  // 'W'
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11},  // 'X'
    {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04},  // 'Y'
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f},  // 'Z'
    {0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e},  // '['
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '\\'
    {0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e},  // ']'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},  // '^'
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f},  // '_'
};

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc = 0) {
  static uint32_t table[256];
  static bool init = false;
  if (!init) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    init = true;
  }
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void put32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
}

void chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put32(out, crc32(out.data() + start, out.size() - start));
}

// LSB-first bit writer of a deflate stream; Huffman codes go in most significant bit first.
struct BitWriter {
  std::vector<uint8_t>& out;
  uint32_t acc = 0;
  int n = 0;
  void bits(uint32_t v, int count) {
    acc |= v << n;
    n += count;
    for (; n >= 8; n -= 8, acc >>= 8) out.push_back(static_cast<uint8_t>(acc));
  }
  void code(uint32_t c, int len) {
    uint32_t r = 0;
    for (int i = 0; i < len; ++i) r |= ((c >> i) & 1u) << (len - 1 - i);
    bits(r, len);
  }
  void flush() {
    if (n > 0) out.push_back(static_cast<uint8_t>(acc));
    acc = 0;
    n = 0;
  }
};

// A literal / length symbol in the fixed Huffman code of RFC 1951 §3.2.6.
void fixed_symbol(BitWriter& w, int sym) {
  if (sym < 144) w.code(0x30 + sym, 8);
  else if (sym < 256) w.code(0x190 + sym - 144, 9);
  else if (sym < 280) w.code(sym - 256, 7);
  else w.code(0xC0 + sym - 280, 8);
}

// One deflate block with the fixed code: literals, and runs of the previous byte as matches at
// distance 1 (lengths 3..258) — enough for a plot of flat colours.
void deflate_fixed(const std::vector<uint8_t>& in, std::vector<uint8_t>& out) {
  static constexpr int kBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                    31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
  static constexpr int kExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  BitWriter w{out};
  w.bits(1, 1);  // BFINAL
  w.bits(1, 2);  // BTYPE 01: fixed Huffman
  size_t i = 0;
  while (i < in.size()) {
    size_t run = 0;
    if (i > 0)
      while (i + run < in.size() && run < 258 && in[i + run] == in[i - 1]) ++run;
    if (run >= 3) {
      int k = 28;
      while (kBase[k] > static_cast<int>(run)) --k;
      fixed_symbol(w, 257 + k);
      w.bits(static_cast<uint32_t>(static_cast<int>(run) - kBase[k]), kExtra[k]);
      w.code(0, 5);  // distance code 0: distance 1
      i += run;
    } else {
      fixed_symbol(w, in[i]);
      ++i;
    }
  }
  fixed_symbol(w, 256);  // end of block
  w.flush();
}

}  // namespace

Canvas::Canvas(int width, int height, Rgb bg) : w_(width), h_(height), px_(static_cast<size_t>(width) * height * 3) {
  for (size_t i = 0; i < px_.size(); i += 3) {
    px_[i] = bg.r;
    px_[i + 1] = bg.g;
    px_[i + 2] = bg.b;
  }
}

void Canvas::pixel(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) return;
  uint8_t* p = &px_[(static_cast<size_t>(y) * w_ + x) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb c, int thickness) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    for (int t = 0; t < thickness; ++t)
      for (int u = 0; u < thickness; ++u) pixel(x0 + t - thickness / 2, y0 + u - thickness / 2, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

void Canvas::dashed_line(int x0, int y0, int x1, int y1, Rgb c, int dash) {
  const int n = std::max(std::abs(x1 - x0), std::abs(y1 - y0));
  for (int i = 0; i <= n; ++i)
    if ((i / dash) % 2 == 0) pixel(x0 + (x1 - x0) * i / std::max(n, 1), y0 + (y1 - y0) * i / std::max(n, 1), c);
}

void Canvas::rect(int x0, int y0, int x1, int y1, Rgb c) {
  line(x0, y0, x1, y0, c);
  line(x1, y0, x1, y1, c);
  line(x1, y1, x0, y1, c);
  line(x0, y1, x0, y0, c);
}

void Canvas::fill(int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y)
    for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) pixel(x, y, c);
}

void Canvas::dot(int x, int y, int r, Rgb c) {
  for (int v = -r; v <= r; ++v)
    for (int u = -r; u <= r; ++u)
      if (u * u + v * v <= r * r) pixel(x + u, y + v, c);
}

namespace {

// Calls dot(u, v) for every set pixel of `s` in the 5x7 font: u along the text (6 per glyph),
// v down the glyph.
template <class F>
void for_each_glyph_pixel(const std::string& s, F&& dot) {
  for (size_t i = 0; i < s.size(); ++i) {
    int ch = static_cast<unsigned char>(s[i]);
    if (ch >= 'a' && ch <= 'z') ch -= 32;
    if (ch < 32 || ch > 95) ch = '?';
    for (int row = 0; row < 7; ++row)
      for (int col = 0; col < 5; ++col)
        if (kFont[ch - 32][row] & (0x10 >> col)) dot(static_cast<int>(i) * 6 + col, row);
  }
}

}  // namespace

void Canvas::text(int x, int y, const std::string& s, Rgb c, int scale) {
  for_each_glyph_pixel(s, [&](int u, int v) {
    fill(x + u * scale, y + v * scale, x + u * scale + scale - 1, y + v * scale + scale - 1, c);
  });
}

void Canvas::text_up(int x, int y, const std::string& s, Rgb c, int scale) {
  for_each_glyph_pixel(s, [&](int u, int v) {  // along the text -> up the page, down the glyph -> right
    const int px = x + v * scale, py = y - u * scale;
    fill(px, py - scale + 1, px + scale - 1, py, c);
  });
}

std::vector<uint8_t> Canvas::png() const {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  put32(ihdr, static_cast<uint32_t>(w_));
  put32(ihdr, static_cast<uint32_t>(h_));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, deflate, adaptive filter, no interlace
  chunk(out, "IHDR", ihdr);
  // scanlines with the Sub filter (byte minus the byte one pixel left): a run of equal pixels
  // becomes a run of zeros
  std::vector<uint8_t> raw;
  raw.reserve(static_cast<size_t>(h_) * (w_ * 3 + 1));
  for (int y = 0; y < h_; ++y) {
    raw.push_back(1);
    const uint8_t* row = px_.data() + static_cast<size_t>(y) * w_ * 3;
    for (int x = 0; x < w_ * 3; ++x) raw.push_back(static_cast<uint8_t>(row[x] - (x >= 3 ? row[x - 3] : 0)));
  }
  std::vector<uint8_t> z = {0x78, 0x01};
  deflate_fixed(raw, z);
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    b = (b + a) % 65521;
  }
  put32(z, (b << 16) | a);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  return out;
}

}  // namespace bench
