// Hub and local Python-only kernels: provided (fetched, verified), their kernel-depends loaded
// first, their python-depends checked, then imported from the verified bytes.
#include <algorithm>

#include "edge.hpp"
#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/python/import_kernel.hpp"
#include "kernelhub/variant/variant_name.hpp"
#include "python_depends.hpp"
#include "verified_package.hpp"

namespace kernelhub::python {
namespace {

using detail::value_or_raise;

constexpr std::size_t kMaxDependencyDepth = 8;

bool is_python_only(const std::string& variant) {
  const auto parsed = variant::parse_variant_name(variant);
  return parsed && parsed->framework == variant::Framework::noarch;
}

// `python-depends`, checked importable before anything of the kernel runs.
void check_python_depends(detail::Bridge& python, const detail::VerifiedPackage& package) {
  const std::string name = package.metadata.name.value_or(package.spec.module_name);
  auto packages = value_or_raise(
      detail::resolve_python_depends(package.metadata.python_depends, package.backend, name));
  std::vector<std::string> imports;
  for (const auto& p : packages) {
    if (p.import_name) imports.push_back(*p.import_name);
  }
  if (imports.empty()) return;
  detail::PythonFailure failure;
  const auto missing = value_or_raise(python.missing_modules(imports, failure), failure);
  for (const auto& p : packages) {
    if (p.import_name &&
        std::find(missing.begin(), missing.end(), *p.import_name) != missing.end()) {
      throw BackendUnavailable("Kernel module `" + name + "` (" + package.spec.origin +
                               ") requires Python dependency `" + p.pip_package +
                               "`. Please install with: pip install " + p.pip_package +
                               " (kernelhub never installs packages)");
    }
  }
}

// The kernels being imported, outermost first: a dependency cycle or a chain deeper than
// kMaxDependencyDepth is refused.
using Chain = std::vector<std::string>;

Kernel import_with(const loader::KernelSource& source, const std::filesystem::path& variant_dir,
                   Chain& chain);

// metadata.json `kernel-depends`, loaded before the kernel as `kernels` loads them: a
// Python-only dependency imported, a compiled one loaded (its ops registered).
detail::Dependency load_dependency(const trust::KernelDependency& dependency, Chain& chain,
                                   std::vector<Kernel>& keep) {
  const std::string repo = dependency.repo.str();
  if (std::find(chain.begin(), chain.end(), repo) != chain.end() ||
      chain.size() >= kMaxDependencyDepth) {
    throw KernelRefused("kernel-depends of " + chain.back() + " loops back to " + repo +
                        " or nests deeper than " + std::to_string(kMaxDependencyDepth));
  }
  provider::HubKernelSpec spec{.user = "python kernel dependency",
                               .repo = repo,
                               .kinds = loader::VariantKinds::compiled_or_python};
  if (dependency.has_version()) {
    spec.version = dependency.version();
  } else {
    spec.revision = dependency.revision();
  }
  auto provided = value_or_raise(provider::provide_hub_source(spec));
  if (is_python_only(provided.source.variant)) {
    chain.push_back(repo);
    keep.push_back(import_with(provided.source, provided.variant_dir, chain));
    chain.pop_back();
    return {repo, keep.back().state()->module, {}};
  }
  auto loaded = loader::load_kernel(std::move(provided.source));
  if (!loaded) detail::raise(provider::explain_use_error(spec, provided, loaded.error()));
  return {repo, nullptr, (*loaded)->ops_namespace};
}

Kernel import_with(const loader::KernelSource& source, const std::filesystem::path& variant_dir,
                   Chain& chain) {
  auto package =
      value_or_raise(detail::read_package(source, variant_dir, loader::current_runtime()));
  detail::Bridge& python = detail::bridge();
  check_python_depends(python, package);
  std::vector<Kernel> dependencies;  // alive until the kernel is imported
  for (const auto& dependency : package.metadata.kernel_depends) {
    package.spec.dependencies.push_back(load_dependency(dependency, chain, dependencies));
  }
  detail::PythonFailure failure;
  auto state = std::make_shared<Kernel::State>();
  state->python = &python;
  state->module = value_or_raise(python.import_package(package.spec, failure), failure);
  state->module_name = package.spec.module_name;
  state->repo = source.repo;
  state->variant = source.variant;
  return Kernel(std::move(state));
}

}  // namespace

Kernel import_kernel(const loader::KernelSource& source, const std::filesystem::path& variant_dir) {
  Chain chain{source.repo};
  return import_with(source, variant_dir, chain);
}

Kernel get_kernel(std::string_view repo, const KernelOptions& options) {
  provider::HubKernelSpec spec{.user = "python kernel",
                               .repo = repo,
                               .version = options.version,
                               .revision = options.revision};
  if (!spec.version && !spec.revision) spec.version = 1;
  return get_hub_kernel(std::move(spec));
}

Kernel get_hub_kernel(provider::HubKernelSpec spec) {
  spec.kinds = loader::VariantKinds::compiled_or_python;
  auto provided = value_or_raise(provider::provide_hub_source(spec));
  if (!is_python_only(provided.source.variant)) {
    throw BackendUnavailable(provided.context + ": the build served, " + provided.source.variant +
                             ", is compiled; kernelhub::python imports Python-only builds "
                             "(build/torch-<backend>, build/torch-universal). Load compiled "
                             "kernels with the attention dispatcher or kernelhub::loader");
  }
  return import_kernel(provided.source, provided.variant_dir);
}

Kernel get_local_kernel(const std::filesystem::path& path) {
  auto provided = value_or_raise(provider::provide_local_source(
      "python kernel", path, loader::VariantKinds::compiled_or_python));
  return import_kernel(provided.source, provided.variant_dir);
}

}  // namespace kernelhub::python
