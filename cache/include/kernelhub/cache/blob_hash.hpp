// The digests one cache blob is checked against: sha256 always (metadata.json digests use
// it), plus git's blob sha1 when that is the blob's etag.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernelhub/trust/digest.hpp"

namespace kernelhub::cache {

struct BlobHash {
  trust::Sha256 sha256;
  std::optional<trust::GitBlobSha1> git_sha1;

  void update(const void* data, std::size_t size) {
    sha256.update(data, size);
    if (git_sha1) git_sha1->update(data, size);
  }
  void reset(std::uint64_t size) {
    sha256.reset();
    if (git_sha1) git_sha1->reset(size);
  }
};

}  // namespace kernelhub::cache
