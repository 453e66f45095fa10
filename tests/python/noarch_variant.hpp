// Python-only kernel variants written by a test: the real layout (build/torch-<backend>/
// with metadata.json: name, id, python-depends and the per-file sha256 digest), so the
// runtime's checks run on them as on a Hub kernel.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kernelhub::testing {

struct NoarchKernel {
  std::string name = "py-test";
  std::string id;  // default: _<name>_<backend>_<7 hex of the sources>
  std::string backend = "universal";
  std::vector<std::string> python_depends;
  std::vector<std::pair<std::string, int>> kernel_depends;  // (repo, version)
  std::map<std::string, std::string> files;                 // variant-relative path -> content
};

// Writes root/build/torch-<backend>/ and returns that variant folder.
std::filesystem::path write_noarch_kernel(const std::filesystem::path& root,
                                          const NoarchKernel& kernel);

// A pure-Python kernel for the runtime's own tests: relative imports (sub/helpers.py), a
// lazily imported module (lazy.py), an exception raised two modules deep (fail), in-place
// tensor ops (add_), and views of the interpreter (flags, can_import, loaded_with_prefix).
NoarchKernel ops_kernel();

}  // namespace kernelhub::testing
