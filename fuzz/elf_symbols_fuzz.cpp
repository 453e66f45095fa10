// libFuzzer harness: the ELF .dynamic/.dynsym/hash scanner run on every downloaded kernel
// .so before dlopen. The bytes go into a memfd, as the scanner reads by pread. Properties:
// no crash or out-of-bounds read (ASan); what it returns is bounded by the file (every name
// is text of the file, so no more names than bytes).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "kernelhub/loader/elf_symbols.hpp"

using namespace kernelhub;

namespace {

int memfd() {
  static const int kFd = ::memfd_create("elf-fuzz", MFD_CLOEXEC);
  if (kFd < 0) std::abort();
  return kFd;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd();
  if (::ftruncate(fd, 0) != 0) std::abort();
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  auto info = loader::read_elf_dynamic(fd, "fuzz.so");
  if (!info) return 0;
  if (info->needed.size() + info->undefined.size() > size) __builtin_trap();
  for (const auto& name : info->needed) {
    if (name.size() > size) __builtin_trap();
  }
  return 0;
}
