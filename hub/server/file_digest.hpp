// Private to kh_hub_server: one pass over bytes that yields both ids the Hub uses for a
// file (sha256 for LFS, git blob sha1 otherwise), so publishing reads each file once.
// Thin OpenSSL EVP wrapper; switch to trust/digest.hpp once its implementation lands.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace kernelhub::hub::server {

class DualDigest {
 public:
  explicit DualDigest(std::uint64_t size);  // git's blob header needs the size up front
  void update(const void* data, std::size_t size);
  // Both lowercase hex; call once.
  std::string sha256_hex();
  std::string git_sha1_hex();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, Free> sha256_;
  std::unique_ptr<evp_md_ctx_st, Free> sha1_;
};

std::string sha1_hex(std::string_view data);
std::string sha256_hex(std::string_view data);
std::string git_blob_sha1_hex(std::string_view data);

}  // namespace kernelhub::hub::server
