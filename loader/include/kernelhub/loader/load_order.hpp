// The order in which a variant's shared objects are dlopen'ed: a sibling that another one
// needs (DT_NEEDED = its DT_SONAME) comes first, because $ORIGIN and RUNPATH mean nothing
// for /proc/self/fd/N and glibc satisfies DT_NEEDED by the SONAME of a loaded library (S28).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "kernelhub/loader/elf_symbols.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::loader {

struct SharedObject {
  std::string path;  // variant-relative, for messages
  ElfDynamicInfo info;
};

// Whether a library that is neither loaded nor a sibling can be loaded from the system
// search path. The default probe asks dlopen(RTLD_LAZY|RTLD_LOCAL).
using DependencyProbe = std::function<bool(const std::string& soname)>;
bool loadable_from_search_path(const std::string& soname);

// Indices into `objects`, dependencies first. incompatible_kernel when an object needs
// torch's CUDA libraries (libtorch_cuda.so, libc10_cuda.so) and this process's libtorch has
// none loaded: they are never taken from the search path, where they would add a CUDA half
// to a libtorch built without it. missing_dependency lists every other DT_NEEDED that is
// neither loaded, a sibling nor resolvable; load_failed for a dependency cycle among siblings.
Result<std::vector<std::size_t>> plan_load_order(
    const std::vector<SharedObject>& objects,
    const DependencyProbe& probe = loadable_from_search_path);

}  // namespace kernelhub::loader
