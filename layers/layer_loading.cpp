#include "layer_loading.hpp"

#include <mutex>
#include <utility>
#include <vector>

#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/util/error_table.hpp"
#include "kernelhub/variant/variant_name.hpp"
#include "native_layer.hpp"
#include "python_layer.hpp"

namespace kernelhub::layers::detail {
namespace {

[[noreturn]] void raise(const Error& error) {
  if (is_refused(error.code) || error.code == ErrorCode::incompatible_kernel ||
      error.code == ErrorCode::op_not_found || error.code == ErrorCode::not_locked) {
    throw LayerRefused(error.message);
  }
  throw LayerUnavailable(error.message);
}

Result<provider::ProvidedKernel> provide(const LayerRepository& repository,
                                         const std::string& user) {
  const auto kinds = loader::VariantKinds::compiled_or_python;
  if (repository.kind == LayerRepository::Kind::local) {
    return provider::provide_local_source(user, repository.path, kinds);
  }
  provider::HubKernelSpec spec{.user = user, .repo = repository.repo, .kinds = kinds};
  spec.version = repository.version;
  spec.revision = repository.revision;
  if (repository.kind == LayerRepository::Kind::locked) {
    spec.require_lock = true;
    if (repository.lockfile) spec.lockfile = repository.lockfile->string();
  }
  return provider::provide_hub_source(spec);
}

bool is_python_only(const std::string& variant) {
  const auto parsed = variant::parse_variant_name(variant);
  return parsed && parsed->framework == variant::Framework::noarch;
}

std::string describe(const LayerRepository& repository, const provider::ProvidedKernel& kernel,
                     std::string_view how) {
  std::string where = repository.kind == LayerRepository::Kind::local
                          ? repository.path.string()
                          : repository.repo + "@" + kernel.commit.substr(0, 12);
  return where + " (" + kernel.source.variant + ") layers." + repository.layer + ", " +
         std::string(how);
}

std::shared_ptr<const LayerKernel> load_uncached(const LayerRepository& repository) {
  const std::string user = "layer " + repository.layer;
  auto provided = provide(repository, user);
  if (!provided) raise(provided.error());
  if (is_python_only(provided->source.variant)) {
    const std::string description = describe(repository, *provided, "python");
    return load_python_layer(*provided, repository.layer, description);
  }
  const std::string description = describe(repository, *provided, "native");
  const std::string repo = provided->source.repo;  // the source is moved into the loader
  const provider::HubKernelSpec spec{.user = user, .repo = repo};
  auto loaded = loader::load_kernel(std::move(provided->source));
  if (!loaded) raise(provider::explain_use_error(spec, *provided, std::move(loaded).error()));
  auto layer = make_native_layer({*loaded, description}, repository.layer);
  if (!layer) raise(layer.error());
  return *layer;
}

std::mutex g_mutex;
// Guarded by g_mutex. Layers are few; a list keeps LayerSource free of a hash.
std::vector<std::pair<LayerRepository, std::shared_ptr<const LayerKernel>>> g_layers;

}  // namespace

std::shared_ptr<const LayerKernel> load_layer(const LayerRepository& repository) {
  const std::lock_guard lock(g_mutex);
  for (const auto& [key, layer] : g_layers) {
    if (key == repository) return layer;
  }
  auto layer = load_uncached(repository);
  g_layers.emplace_back(repository, layer);
  return layer;
}

}  // namespace kernelhub::layers::detail
