// A kernel file's bytes, read once and checked: the same checks the loader makes before a
// dlopen (regular file, not writable by others, sha256 as handed out), on the bytes that are
// then used, so nothing can change between the check and the use. For files that are not
// mapped but read: a Python kernel's sources.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::loader {

// too_large (before reading) when the file has more than max_bytes; unsafe_kernel,
// hash_mismatch, size_mismatch (it changed while read) or io otherwise.
Result<std::string> read_verified_file(const KernelFile& file, std::string_view repo,
                                       std::uint64_t max_bytes);

}  // namespace kernelhub::loader
