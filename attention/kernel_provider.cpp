#include "kernelhub/attention/kernel_provider.hpp"

#include "kernelhub/attention_dispatch.hpp"
#include "kernelhub/util/error_table.hpp"

namespace kernelhub::attention::detail {
namespace {

// The provider's message already names the backend and the fix; only the type is ours.
[[noreturn]] void raise_kernel_error(const Error& error) {
  // Refused by a rule or by verification: never a silent fall-back to another backend.
  if (is_refused(error.code)) throw KernelRefused(error.message);
  throw BackendUnavailable(error.message);
}

template <class Spec, class Provide>
std::shared_ptr<const loader::LoadedKernel> load(const Spec& spec, Provide provide) {
  auto provided = provide(spec);
  if (!provided) raise_kernel_error(provided.error());
  auto loaded = loader::load_kernel(std::move(provided->source));
  if (!loaded) {
    raise_kernel_error(provider::explain_use_error(spec, *provided, std::move(loaded).error()));
  }
  return *loaded;
}

}  // namespace

std::shared_ptr<const loader::LoadedKernel> provide_hub_kernel(const HubKernelSpec& spec) {
  return load(spec, provider::provide_hub_source);
}

std::shared_ptr<const loader::LoadedKernel> provide_local_library(const LibrarySpec& spec) {
  return load(spec, provider::provide_local_library_source);
}

}  // namespace kernelhub::attention::detail
