#include "trust/read_file.hpp"

#include <fstream>

namespace kernelhub::trust {

std::optional<std::string> read_file_prefix(const std::filesystem::path& path,
                                            std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return std::nullopt;
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

}  // namespace kernelhub::trust
