#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/strings.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <new>

#include "kernelhub/util/read_file.hpp"

namespace kernelhub::trust {

void EvpHasher::Free::operator()(evp_md_ctx_st* ctx) const noexcept { EVP_MD_CTX_free(ctx); }

EvpHasher::EvpHasher(const evp_md_st* md) : md_(md), ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
  reset();
}

void EvpHasher::reset() {
  if (EVP_DigestInit_ex(ctx_.get(), md_, nullptr) != 1) throw std::bad_alloc();
}

void EvpHasher::update(const void* data, std::size_t size) {
  // EVP_DigestUpdate only fails on a broken context, which reset() has ruled out.
  EVP_DigestUpdate(ctx_.get(), data, size);
}

std::vector<unsigned char> EvpHasher::final_bytes() {
  std::vector<unsigned char> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_.get(), out.data(), &len);
  out.resize(len);
  reset();
  return out;
}

std::string EvpHasher::final_hex() { return util::to_hex(final_bytes()); }
std::string EvpHasher::final_base64() { return to_base64(final_bytes()); }

namespace {

// Fetched once: OpenSSL 3 resolves an EVP_sha256()-style digest through its provider store
// (under a lock) on every init, which shows in short hashes (Merkle nodes, small files).
// Kept for the life of the process.
const EVP_MD* fetched(const char* name) {
  const EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  if (md == nullptr) throw std::bad_alloc();
  return md;
}

}  // namespace

const evp_md_st* sha256_md() {
  static const EVP_MD* const kMd = fetched("SHA2-256");
  return kMd;
}
const evp_md_st* sha384_md() {
  static const EVP_MD* const kMd = fetched("SHA2-384");
  return kMd;
}
const evp_md_st* sha1_md() {
  static const EVP_MD* const kMd = fetched("SHA1");
  return kMd;
}
const evp_md_st* sha512_md() {
  static const EVP_MD* const kMd = fetched("SHA2-512");
  return kMd;
}

Sha256::Sha256() : EvpHasher(sha256_md()) {}
Sha1::Sha1() : EvpHasher(sha1_md()) {}

GitBlobSha1::GitBlobSha1(std::uint64_t size) { reset(size); }

void GitBlobSha1::reset(std::uint64_t size) {
  sha1_.reset();
  const std::string header = "blob " + std::to_string(size);
  sha1_.update(header.data(), header.size() + 1);  // including the terminating NUL
}

std::string to_base64(std::span<const unsigned char> bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(),
                                  static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(len));
  return out;
}

Result<std::vector<unsigned char>> from_base64(std::string_view text) {
  // EVP_DecodeBlock accepts sloppy input and ignores padding in its length, so insist on
  // canonical standard base64 and trim the padding ourselves.
  const auto bad = [&] {
    return fail(ErrorCode::malformed_response,
                "not valid base64: '" + std::string(text.substr(0, 100)) + "'");
  };
  if (text.size() % 4 != 0) return bad();
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '=') {
      if (i + 2 < text.size()) return bad();
      ++padding;
    } else if ((!alnum && c != '+' && c != '/') || padding > 0) {
      return bad();
    }
  }
  std::vector<unsigned char> out(text.size() / 4 * 3);
  const int len = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
  if (len < 0) return bad();
  out.resize(static_cast<std::size_t>(len) - padding);
  return out;
}

Result<std::string> base64_to_hex(std::string_view text) {
  KH_TRY_ASSIGN(auto bytes, from_base64(text));
  return util::to_hex(bytes);
}

bool is_lower_hex(std::string_view text, std::size_t length) noexcept {
  if (text.size() != length) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.final_hex();
}

std::string git_blob_sha1_hex(std::string_view data) {
  GitBlobSha1 h(data.size());
  h.update(data);
  return h.final_hex();
}

namespace {

// Feeds every byte of `fd` from offset 0 to `sink`; returns the byte count.
template <class Sink>
Result<std::uint64_t> read_all(int fd, const std::string& what, Sink&& sink) {
  std::array<char, 1 << 16> buf{};
  std::uint64_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorCode::io, "cannot read " + what + ": " + std::strerror(errno));
    }
    if (n == 0) return offset;
    sink(buf.data(), static_cast<std::size_t>(n));
    offset += static_cast<std::uint64_t>(n);
  }
}

}  // namespace

Result<std::string> sha256_fd_hex(int fd) {
  Sha256 h;
  KH_TRY(read_all(fd, "fd " + std::to_string(fd),
                  [&](const char* d, std::size_t s) { h.update(d, s); }));
  return h.final_hex();
}

Result<std::string> sha256_file_hex(const std::filesystem::path& path) {
  // A regular file only: hashing a FIFO would wait for a writer, /dev/zero would never end.
  KH_TRY_ASSIGN(const UniqueFd guard, util::open_regular_file(path));
  Sha256 h;
  KH_TRY(
      read_all(guard.get(), path.string(), [&](const char* d, std::size_t s) { h.update(d, s); }));
  return h.final_hex();
}

Result<std::string> git_blob_sha1_file_hex(const std::filesystem::path& path) {
  // A regular file only: hashing a FIFO would wait for a writer, /dev/zero would never end.
  KH_TRY_ASSIGN(const UniqueFd guard, util::open_regular_file(path));
  struct stat st {};
  if (::fstat(guard.get(), &st) != 0) {
    return fail(ErrorCode::io, "cannot stat " + path.string() + ": " + std::strerror(errno));
  }
  GitBlobSha1 h(static_cast<std::uint64_t>(st.st_size));
  KH_TRY_ASSIGN(const auto n, read_all(guard.get(), path.string(),
                                       [&](const char* d, std::size_t s) { h.update(d, s); }));
  if (n != static_cast<std::uint64_t>(st.st_size)) {
    return fail(ErrorCode::io, path.string() + " changed size while being hashed");
  }
  return h.final_hex();
}

}  // namespace kernelhub::trust
