// libFuzzer harness: `kernelhub bundle import` over arbitrary bytes (libarchive's zstd and
// tar readers, the manifest parser, the importer) into a scratch cache. Properties: no crash,
// and an input that fails publishes nothing: the scratch cache holds no repo folder after.
// Seeds: a valid bundle as .tar.zst and as a plain tar (the importer reads both), so that
// mutations reach the manifest parser and the entry checks, not only the zstd decoder.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "kernelhub/cache/bundle/bundle_import.hpp"

using namespace kernelhub;

namespace {

const std::filesystem::path& scratch() {
  static const std::filesystem::path kDir = [] {
    std::string pattern = "/tmp/kh-bundle-fuzz-XXXXXX";
    return std::filesystem::path(::mkdtemp(pattern.data()));
  }();
  return kDir;
}

bool holds_a_repo(const std::filesystem::path& root) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().starts_with("kernels--")) return true;
  }
  return false;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = ::memfd_create("bundle", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data, size) != static_cast<ssize_t>(size) || ::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return 0;
  }
  const cache::KernelCache cache(scratch() / "cache");
  cache::bundle::ImportOptions options;
  options.limits.max_total_bytes = 64u << 20;  // keep each run's disk use small
  auto imported = cache::bundle::import_bundle(fd, cache, options);
  ::close(fd);
  if (!imported && holds_a_repo(cache.root())) __builtin_trap();
  std::error_code ec;
  std::filesystem::remove_all(cache.root(), ec);
  return 0;
}
