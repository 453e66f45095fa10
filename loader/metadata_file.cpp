#include "metadata_file.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace kernelhub::loader::detail {

Result<trust::KernelMetadata> read_metadata_fd(int fd, std::string_view what) {
  KH_TRY_ASSIGN(auto text, read_small_fd(fd, trust::kMaxMetadataBytes, what));
  auto metadata = trust::parse_kernel_metadata(text);
  KH_TRY(metadata);
  KH_TRY(trust::digest_sha256_hex(*metadata));
  return metadata;
}

Result<std::string> read_small_fd(int fd, std::size_t limit, std::string_view what) {
  std::string text;
  std::array<char, 1 << 14> buffer{};
  for (;;) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return fail(ErrorCode::io, "cannot read " + std::string(what) + ": " + std::strerror(errno));
    }
    if (n == 0) return text;
    if (text.size() + static_cast<std::size_t>(n) > limit) {
      return fail(ErrorCode::too_large,
                  std::string(what) + " is larger than " + std::to_string(limit) + " bytes");
    }
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
}

}  // namespace kernelhub::loader::detail
