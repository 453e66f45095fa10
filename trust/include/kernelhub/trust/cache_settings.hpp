// [cache] of the admin policy: the bounds kernelhubd keeps its shared cache within, and that
// `kernelhub gc --policy` applies to a user's own cache (docs/operations.md, "Disk").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace kernelhub::trust {

struct CacheSettings {
  // The blobs of every repo together may hold at most this many bytes.
  std::optional<std::uint64_t> max_size;
  // The cache's file system keeps at least this much free: bytes, or percent of its size.
  std::optional<std::uint64_t> min_free_bytes;
  std::optional<double> min_free_percent;
  // A variant not handed out for this long goes, whatever the sizes.
  std::optional<std::chrono::seconds> max_unused_age;
  // How often kernelhubd checks the bounds besides after each download (default 10 minutes).
  std::optional<std::chrono::seconds> check_interval;
  // kernelhubd's own passes leave variants used this recently (default 60 s): one it has just
  // published is about to be handed out.
  std::optional<std::chrono::seconds> in_use_grace;

  bool bounded() const { return max_size || min_free_bytes || min_free_percent || max_unused_age; }
  bool operator==(const CacheSettings&) const = default;
};

}  // namespace kernelhub::trust
