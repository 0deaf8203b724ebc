// A small RGB canvas with lines, dots and a 5x7 bitmap font, encoded as a PNG file by libpng
// (Debian libpng-dev, found by CMake; a build without it, such as the aarch64 cross build, has
// no plot: png() returns nothing and png_available() is false). Used by the roofline plot of
// `mlaops bench` (report.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

class Canvas {
 public:
  Canvas(int width, int height, Rgb background);
  int width() const { return w_; }
  int height() const { return h_; }
  void pixel(int x, int y, Rgb c);
  void line(int x0, int y0, int x1, int y1, Rgb c, int thickness = 1);
  void dashed_line(int x0, int y0, int x1, int y1, Rgb c, int dash = 6);
  void rect(int x0, int y0, int x1, int y1, Rgb c);  // outline
  void fill(int x0, int y0, int x1, int y1, Rgb c);
  void dot(int x, int y, int radius, Rgb c);
  // Text in the 5x7 font (lower case drawn as upper case), top-left at (x, y); scale >= 1.
  void text(int x, int y, const std::string& s, Rgb c, int scale = 1);
  // Text rotated 90 degrees counter-clockwise (reads bottom to top), bottom-left at (x, y).
  void text_up(int x, int y, const std::string& s, Rgb c, int scale = 1);
  static int text_width(const std::string& s, int scale = 1) { return static_cast<int>(s.size()) * 6 * scale; }
  // The PNG file bytes (8-bit RGB), empty when this build has no libpng or it failed.
  std::vector<uint8_t> png() const;
  static bool png_available();

 private:
  int w_, h_;
  std::vector<uint8_t> px_;  // [h, w, 3]
};

}  // namespace bench
