// Hub kernels over kernelhubd or the embedded pipeline (see kernel_fetch.hpp).
#include "kernel_fetch.hpp"

#include <iostream>
#include <mutex>
#include <optional>

#include "kernel_errors.hpp"
#include "kernelhub/client/client.hpp"
#include "kernelhub/provider/process_environment.hpp"

namespace kernelhub::provider {
namespace {

// One connection (or one embedded pipeline) for the process: kernelhubd is per host, and a
// kept connection saves the handshake on every later activation. Guarded by g_fetch_mutex.
std::mutex g_fetch_mutex;
std::optional<client::Client> g_client;

Result<client::Client*> shared_client() {
  if (!g_client) {
    auto opened = client::Client::open(process_environment());
    if (!opened) {
      return fail(
          in_context(std::move(opened).error(), "cannot reach kernelhubd or the kernel cache"));
    }
    g_client.emplace(std::move(*opened));
  }
  return &*g_client;
}

// Select the build for the libtorch and device of this process. Overrides rather than an
// exact Platform: they travel to kernelhubd too (arch and OS are the host's either way).
variant::PlatformOverrides fetch_platform(const loader::Runtime& runtime) {
  variant::PlatformOverrides overrides;
  overrides.torch_version =
      std::to_string(runtime.torch_major) + "." + std::to_string(runtime.torch_minor);
  overrides.backend = "cpu";
  if (runtime.cuda) {
    std::string digits;
    for (char c : *runtime.cuda) {
      if (c != '.') digits += c;
    }
    overrides.backend = "cu" + digits;
  }
  return overrides;
}

// The handed-out files of the chosen variant, relative to build/<variant>/.
ProvidedKernel to_provided(client::FetchedKernel&& fetched) {
  const fetch::Manifest& manifest = fetched.manifest;
  ProvidedKernel kernel;
  kernel.commit = manifest.commit;
  loader::KernelSource& source = kernel.source;
  source.repo = manifest.repo.str();
  source.variant = manifest.variants.empty() ? std::string() : manifest.variants.front();
  kernel.variant_dir = manifest.snapshot_path / "build" / source.variant;
  const std::string prefix = "build/" + source.variant + "/";
  for (std::size_t i = 0; i < manifest.files.size() && i < fetched.fds.size(); ++i) {
    const auto& file = manifest.files[i];
    if (file.path.rfind(prefix, 0) != 0) continue;
    source.files.push_back(
        {file.path.substr(prefix.size()), file.sha256, std::move(fetched.fds[i])});
  }
  return kernel;
}

}  // namespace

Result<ProvidedKernel> fetch_hub_source(const fetch::Request& asked, const HubKernelSpec& spec,
                                        const std::string& context) {
  fetch::Request request = asked;
  request.platform = fetch_platform(loader::current_runtime());

  std::lock_guard lock(g_fetch_mutex);  // the shared client carries one request at a time
  KH_TRY_ASSIGN(client::Client * client, shared_client());
  auto fetched = client->fetch(request);
  if (!fetched) {
    const ErrorCode code = fetched.error().code;
    return fail(in_context(std::move(fetched).error(), context, hub_fix(spec, code)));
  }
  // [signatures] warn mode: served, and the app's user is told on stderr.
  for (const auto& warning : fetched->manifest.signature_warnings) {
    std::cerr << "kernelhub: warning: " << warning << "\n";
  }
  ProvidedKernel kernel = to_provided(std::move(*fetched));
  kernel.context = context;
  return kernel;
}

void reset_hub_connection(const std::function<void()>& reload) {
  std::lock_guard lock(g_fetch_mutex);
  reload();
  g_client.reset();  // it was opened with the old environment
}

}  // namespace kernelhub::provider
