// The checks a kernel passes before anything of it is mapped: per file (type, mode,
// digest) and per shared object (the Python symbols it references).
#pragma once

#include <string_view>
#include <vector>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/loader/load_order.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::loader::detail {

// A regular file, not writable by group or others (unsafe_kernel), whose bytes hash to
// file.sha256 (hash_mismatch naming the file, the expected and the actual digest).
Result<void> verify_file(const KernelFile& file, std::string_view repo);

// Refuses strong undefined Py*/_Py* symbols outside the shim list (unsafe_kernel naming
// them all). Returns whether any object references a shimmed function.
Result<bool> check_python_symbols(const std::vector<SharedObject>& objects, std::string_view repo);

}  // namespace kernelhub::loader::detail
