#include "hub/server/file_digest.hpp"

#include <openssl/evp.h>

#include <new>

namespace kernelhub::hub::server {
namespace {

evp_md_ctx_st* new_ctx(const EVP_MD* md) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr || EVP_DigestInit_ex(ctx, md, nullptr) != 1) {
    EVP_MD_CTX_free(ctx);
    throw std::bad_alloc();
  }
  return ctx;
}

std::string finish_hex(EVP_MD_CTX* ctx) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, out, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[out[i] >> 4]);
    hex.push_back(kHex[out[i] & 0xf]);
  }
  return hex;
}

std::string one_shot(const EVP_MD* md, std::string_view prefix, std::string_view data) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(new_ctx(md), EVP_MD_CTX_free);
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  EVP_DigestUpdate(ctx.get(), data.data(), data.size());
  return finish_hex(ctx.get());
}

std::string git_header(std::uint64_t size) {
  std::string header = "blob " + std::to_string(size);
  header.push_back('\0');
  return header;
}

}  // namespace

void DualDigest::Free::operator()(evp_md_ctx_st* ctx) const noexcept { EVP_MD_CTX_free(ctx); }

DualDigest::DualDigest(std::uint64_t size)
    : sha256_(new_ctx(EVP_sha256())), sha1_(new_ctx(EVP_sha1())) {
  const std::string header = git_header(size);
  EVP_DigestUpdate(sha1_.get(), header.data(), header.size());
}

void DualDigest::update(const void* data, std::size_t size) {
  EVP_DigestUpdate(sha256_.get(), data, size);
  EVP_DigestUpdate(sha1_.get(), data, size);
}

std::string DualDigest::sha256_hex() { return finish_hex(sha256_.get()); }
std::string DualDigest::git_sha1_hex() { return finish_hex(sha1_.get()); }

std::string sha1_hex(std::string_view data) { return one_shot(EVP_sha1(), {}, data); }
std::string sha256_hex(std::string_view data) { return one_shot(EVP_sha256(), {}, data); }
std::string git_blob_sha1_hex(std::string_view data) {
  return one_shot(EVP_sha1(), git_header(data.size()), data);
}

}  // namespace kernelhub::hub::server
