#include "verified_package.hpp"

#include <algorithm>

#include "kernelhub/loader/verified_file.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::python::detail {
namespace {

bool has_file(const PackageSpec& spec, const std::string& path) {
  return std::any_of(spec.files.begin(), spec.files.end(),
                     [&](const SourceFile& file) { return file.path == path; });
}

// kernel-builder's ids: `_<name>_<backend>_<hash>`. Anything else could take the name of a
// module the process imports (`json`, `torch`) and serve it from the kernel's files.
bool is_kernel_module_name(std::string_view id) {
  if (id.size() < 2 || id.size() > 200 || id.front() != '_') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string python_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace

Result<VerifiedPackage> read_package(const loader::KernelSource& source,
                                     const std::filesystem::path& variant_dir,
                                     const loader::Runtime& runtime) {
  KH_TRY(loader::check_noarch_compatible(source.variant, runtime));
  VerifiedPackage package;
  const auto parsed = variant::parse_variant_name(source.variant);
  package.backend = parsed->noarch_backend == "universal" ? (runtime.cuda ? "cuda" : "cpu")
                                                          : parsed->noarch_backend;
  std::uint64_t total = 0;
  bool has_metadata = false;
  for (const auto& file : source.files) {
    KH_TRY_ASSIGN(auto bytes, loader::read_verified_file(file, source.repo, kMaxPythonFileBytes));
    total += bytes.size();
    if (total > kMaxPythonVariantBytes) {
      return fail(ErrorCode::too_large, source.repo + " (" + source.variant + ") has more than " +
                                            std::to_string(kMaxPythonVariantBytes) +
                                            " bytes of files; refusing to import it");
    }
    if (file.path == "metadata.json") {
      KH_TRY_ASSIGN(package.metadata, trust::parse_kernel_metadata(bytes));
      has_metadata = true;
    }
    package.spec.files.push_back({file.path, std::move(bytes)});
  }
  const std::string what = source.repo + " (" + source.variant + ")";
  if (!has_metadata || !package.metadata.id) {
    return fail(ErrorCode::incompatible_kernel,
                what +
                    " has no metadata.json with an `id`, the module name a Python kernel is "
                    "imported under; it predates kernel-builder's metadata format");
  }
  if (!is_kernel_module_name(*package.metadata.id)) {
    return fail(ErrorCode::unsafe_kernel,
                what +
                    "'s metadata.json `id` is not a kernel module name (an identifier that "
                    "starts with '_', as kernel-builder writes `_<name>_<backend>_<hash>`); "
                    "refusing a name that could shadow another module");
  }
  package.spec.module_name = *package.metadata.id;
  package.spec.origin = what;
  package.spec.display_dir = variant_dir.string();
  // kernels' rule: __init__.py at the variant's top, else in a folder named after the kernel.
  const std::string named_root = python_name(package.metadata.name.value_or("")) + "/";
  if (has_file(package.spec, "__init__.py")) {
    package.spec.root = "";
  } else if (named_root != "/" && has_file(package.spec, named_root + "__init__.py")) {
    package.spec.root = named_root;
  } else {
    return fail(ErrorCode::incompatible_kernel,
                "No kernel module found in " + what + ": it has no __init__.py");
  }
  return package;
}

}  // namespace kernelhub::python::detail
