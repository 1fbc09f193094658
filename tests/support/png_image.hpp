#pragma once
// PNG files decoded with libpng (an independent decoder) for the plot tests:
// size, distinct colours, non-white pixels.
#include <png.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace ppe_test {

/// A PNG decoded to RGBA pixels.
struct DecodedPng {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgba;
  std::size_t distinct_colors() const {
    std::set<std::uint32_t> c;
    for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
      c.insert(rgba[i] | (rgba[i + 1] << 8) | (rgba[i + 2] << 16) | (static_cast<std::uint32_t>(rgba[i + 3]) << 24));
    return c.size();
  }
  std::size_t non_white() const {
    std::size_t n = 0;
    for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
      if (rgba[i] != 255 || rgba[i + 1] != 255 || rgba[i + 2] != 255) ++n;
    return n;
  }
  // Pixels of (about) the given colour.
  std::size_t count_near(std::uint8_t r, std::uint8_t g, std::uint8_t b) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i + 3 < rgba.size(); i += 4)
      if (std::abs(rgba[i] - r) < 12 && std::abs(rgba[i + 1] - g) < 12 && std::abs(rgba[i + 2] - b) < 12) ++n;
    return n;
  }
};

// Decodes PNG bytes with libpng (an independent decoder); width 0 when they are not a PNG.
inline DecodedPng decode_png(const std::string& bytes) {
  DecodedPng d;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) return d;
  image.format = PNG_FORMAT_RGBA;
  d.rgba.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, d.rgba.data(), 0, nullptr)) {
    png_image_free(&image);
    return DecodedPng{};
  }
  d.width = static_cast<int>(image.width);
  d.height = static_cast<int>(image.height);
  return d;
}

/// The PNG file at `file`, decoded (width 0 when it is not a PNG).
inline DecodedPng decode_png_file(const std::filesystem::path& file) { return decode_png(read_file(file)); }

}  // namespace ppe_test
