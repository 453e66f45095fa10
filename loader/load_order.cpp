#include "kernelhub/loader/load_order.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>

namespace kernelhub::loader {
namespace {

constexpr std::array<std::string_view, 2> kTorchCudaLibraries = {"libtorch_cuda.so",
                                                                 "libc10_cuda.so"};

bool is_torch_cuda_library(std::string_view soname) {
  return std::find(kTorchCudaLibraries.begin(), kTorchCudaLibraries.end(), soname) !=
         kTorchCudaLibraries.end();
}

}  // namespace

bool loadable_from_search_path(const std::string& soname) {
  // The handle is kept, not dlclose'd: the kernel about to load needs the library.
  if (::dlopen(soname.c_str(), RTLD_LAZY | RTLD_LOCAL) != nullptr) return true;
  ::dlerror();  // clear, so a later dlerror() reports the kernel's own failure
  return false;
}

Result<std::vector<std::size_t>> plan_load_order(const std::vector<SharedObject>& objects,
                                                 const DependencyProbe& probe) {
  std::map<std::string, std::size_t, std::less<>> by_soname;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (objects[i].info.soname) by_soname.emplace(*objects[i].info.soname, i);
  }

  // Sibling edges; libraries already in the process win over a sibling of the same name,
  // as they would inside ld.so.
  std::vector<std::vector<std::size_t>> needs(objects.size());
  std::string missing;
  std::string needs_cuda;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    for (const auto& name : objects[i].info.needed) {
      const bool loaded = ::dlopen(name.c_str(), RTLD_NOLOAD | RTLD_LAZY) != nullptr;
      if (loaded) continue;
      if (is_torch_cuda_library(name)) {
        needs_cuda +=
            (needs_cuda.empty() ? "" : ", ") + name + " (needed by " + objects[i].path + ")";
      } else if (const auto it = by_soname.find(name); it != by_soname.end() && it->second != i) {
        needs[i].push_back(it->second);
      } else if (!probe(name)) {
        missing += (missing.empty() ? "" : ", ") + name + " (needed by " + objects[i].path + ")";
      }
    }
  }
  if (!needs_cuda.empty()) {
    return fail(
        ErrorCode::incompatible_kernel,
        "the kernel is a CUDA build and this process's libtorch has no CUDA: " + needs_cuda +
            " not loaded. Link libtorch_cuda and libc10_cuda into the program, or use a "
            "cpu variant (KERNELHUB_BACKEND=cpu)");
  }
  if (!missing.empty()) {
    return fail(ErrorCode::missing_dependency,
                "the kernel needs libraries that are neither loaded, in its variant, nor on the "
                "library search path: " +
                    missing +
                    ". Kernels carry no RUNPATH: load them first or add their directory to "
                    "LD_LIBRARY_PATH");
  }

  // Depth-first topological order; the input order breaks ties so the result is stable.
  enum class Mark { none, visiting, done };
  std::vector<Mark> marks(objects.size(), Mark::none);
  std::vector<std::size_t> order;
  std::string cycle;
  std::function<bool(std::size_t)> visit = [&](std::size_t i) {
    if (marks[i] == Mark::done) return true;
    if (marks[i] == Mark::visiting) {
      cycle = objects[i].path;
      return false;
    }
    marks[i] = Mark::visiting;
    for (const auto dep : needs[i]) {
      if (!visit(dep)) return false;
    }
    marks[i] = Mark::done;
    order.push_back(i);
    return true;
  };
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (!visit(i)) {
      return fail(ErrorCode::load_failed,
                  "the variant's libraries need each other in a cycle (through " + cycle +
                      "); they cannot be loaded one after another");
    }
  }
  return order;
}

}  // namespace kernelhub::loader
