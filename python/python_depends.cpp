#include "python_depends.hpp"

#include <array>

#include "kernelhub/util/printable.hpp"

namespace kernelhub::python::detail {
namespace {

struct AllowedDependency {
  std::string_view backend;  // empty: every backend ("general")
  std::string_view dependency;
  std::string_view pip_package;
  std::string_view import_name;  // empty: none
};

// kernels 0.17.2's python_depends.json.
constexpr std::array kAllowed{
    AllowedDependency{"", "einops", "einops", "einops"},
    AllowedDependency{"", "helion", "helion", "helion"},
    AllowedDependency{"", "tvm-ffi", "apache-tvm-ffi", "tvm_ffi"},
    AllowedDependency{"cuda", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl", "cutlass"},
    AllowedDependency{"neuron", "nki", "nki", "nki"},
    AllowedDependency{"xpu", "onednn", "onednn-devel", ""},
};

const AllowedDependency* find(std::string_view dependency, std::string_view backend) {
  for (const auto& allowed : kAllowed) {
    if (allowed.dependency == dependency && allowed.backend.empty()) return &allowed;
  }
  for (const auto& allowed : kAllowed) {
    if (allowed.dependency == dependency && allowed.backend == backend) return &allowed;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<PythonPackage>> resolve_python_depends(const std::vector<std::string>& depends,
                                                          std::string_view backend,
                                                          std::string_view kernel) {
  std::vector<PythonPackage> out;
  for (const auto& dependency : depends) {
    const auto* allowed = find(dependency, backend);
    if (allowed == nullptr) {
      return fail(ErrorCode::incompatible_kernel,
                  "Kernel module `" + std::string(kernel) +
                      "` uses unsupported kernel dependency: " + util::printable(dependency));
    }
    PythonPackage package{dependency, std::string(allowed->pip_package), std::nullopt};
    if (!allowed->import_name.empty()) package.import_name = std::string(allowed->import_name);
    out.push_back(std::move(package));
  }
  return out;
}

}  // namespace kernelhub::python::detail
