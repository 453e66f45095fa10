// Streaming hashers over OpenSSL EVP (RAII) and the encodings the Hub and kernel-builder use:
// lowercase hex for etags, standard base64 for metadata.json digests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/util/result.hpp"

struct evp_md_ctx_st;
struct evp_md_st;

namespace kernelhub::trust {

// One EVP digest context. Allocation failure is out-of-memory and throws std::bad_alloc,
// like any other allocation.
class EvpHasher {
 public:
  EvpHasher(EvpHasher&&) noexcept = default;
  EvpHasher& operator=(EvpHasher&&) noexcept = default;
  ~EvpHasher() = default;

  void update(const void* data, std::size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  // Finalises and resets the context, so the object can hash again.
  std::vector<unsigned char> final_bytes();
  std::string final_hex();
  std::string final_base64();
  void reset();

 protected:
  explicit EvpHasher(const evp_md_st* md);

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  const evp_md_st* md_;
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

// The digests, fetched from OpenSSL's providers once per process (for EVP_Digest*Init_ex).
const evp_md_st* sha256_md();
const evp_md_st* sha384_md();
const evp_md_st* sha512_md();
const evp_md_st* sha1_md();

class Sha256 : public EvpHasher {
 public:
  Sha256();
};

class Sha1 : public EvpHasher {
 public:
  Sha1();
};

// Git's object id for a blob: sha1("blob <size>\0" + content). The size goes in the
// header, so it must be known before the first byte.
class GitBlobSha1 {
 public:
  explicit GitBlobSha1(std::uint64_t size);
  void update(const void* data, std::size_t size) { sha1_.update(data, size); }
  void update(std::string_view data) { sha1_.update(data); }
  std::string final_hex() { return sha1_.final_hex(); }
  // Starts over for a blob of `size` bytes.
  void reset(std::uint64_t size);

 private:
  Sha1 sha1_;
};

std::string to_base64(std::span<const unsigned char> bytes);
// Standard base64 (with padding) -> bytes; malformed_response on bad input.
Result<std::vector<unsigned char>> from_base64(std::string_view text);
// Lowercase hex of a base64-encoded digest (metadata.json -> etag-style hex).
Result<std::string> base64_to_hex(std::string_view text);
// True when `text` is exactly `length` lowercase hex digits.
bool is_lower_hex(std::string_view text, std::size_t length) noexcept;

std::string sha256_hex(std::string_view data);
std::string git_blob_sha1_hex(std::string_view data);
// Hash a file's bytes (read with read(2), EINTR-safe); io errors name the path.
Result<std::string> sha256_file_hex(const std::filesystem::path& path);
Result<std::string> git_blob_sha1_file_hex(const std::filesystem::path& path);
// Hash everything an open fd holds, from offset 0 (pread; the fd offset is untouched).
Result<std::string> sha256_fd_hex(int fd);

}  // namespace kernelhub::trust
