// Hub kernels over kernelhubd or the embedded pipeline (see kernel_fetch.hpp).
#include "kernel_fetch.hpp"

#include <iostream>
#include <mutex>
#include <optional>

#include "kernelhub/client/client.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/util/error_table.hpp"

namespace kernelhub::attention::detail {
namespace {

// One connection (or one embedded pipeline) for the process: kernelhubd is per host, and a
// kept connection saves the handshake on every later activation. Guarded by g_fetch_mutex.
std::mutex g_fetch_mutex;
std::optional<client::Client> g_client;

// The fix that goes with a failed hub fetch or load (the error table's remedy), in the
// user's terms.
std::string hub_fix(const HubKernelSpec& spec, ErrorCode code) {
  const std::string backend(spec.backend);
  const std::string repo(spec.repo);
  switch (error_info(code).remedy) {
    case Remedy::trust_opt_in:
      return "Backend '" + backend + "' loads `" + repo +
             "`, which is not published by a trusted kernel publisher on the Hub, so loading it "
             "downloads and executes remote code. Set `DIFFUSERS_TRUST_REMOTE_KERNELS=true` to "
             "allow it.";
    case Remedy::allow_remote_code:
      return "Remote kernels are disabled by DIFFUSERS_DISABLE_REMOTE_CODE; unset it, point "
             "LOCAL_KERNELS=" +
             repo + "=<path> at a local build, or use a native backend.";
    case Remedy::prefetch_online:
      return "Prefetch it while online: `kernelhub download " + repo + " --version " +
             std::to_string(spec.version) + "`.";
    case Remedy::signed_release:
      return "The admin policy's [signatures] refuses this build of " + repo +
             "; use a signed release (kernelhub verify-signature " + repo + " --version " +
             std::to_string(spec.version) + " shows each variant's verdict) or a native backend.";
    case Remedy::other_build:
      return "No build of " + repo +
             " fits this process; use a native backend or a matching "
             "libtorch.";
    case Remedy::none:
      return {};
  }
  return {};
}

client::Client& shared_client() {
  if (!g_client) {
    auto opened = client::Client::open(process_environment());
    if (!opened)
      raise_kernel_error(opened.error(), "cannot reach kernelhubd or the kernel cache", "");
    g_client.emplace(std::move(*opened));
  }
  return *g_client;
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
loader::KernelSource to_source(client::FetchedKernel&& fetched) {
  const fetch::Manifest& manifest = fetched.manifest;
  loader::KernelSource source;
  source.repo = manifest.repo.str();
  source.variant = manifest.variants.empty() ? std::string() : manifest.variants.front();
  const std::string prefix = "build/" + source.variant + "/";
  for (std::size_t i = 0; i < manifest.files.size() && i < fetched.fds.size(); ++i) {
    const auto& file = manifest.files[i];
    if (file.path.rfind(prefix, 0) != 0) continue;
    source.files.push_back(
        {file.path.substr(prefix.size()), file.sha256, std::move(fetched.fds[i])});
  }
  return source;
}

// spec.repo at spec.version, or at the locked commit and variant hashes.
Result<fetch::Request> hub_request(const HubKernelSpec& spec, const trust::RepoId& repo,
                                   const std::optional<trust::LockEntry>& locked) {
  if (locked) return fetch::Request::locked(repo, locked->commit, {locked->variant_hashes});
  KH_TRY_ASSIGN(auto ref, fetch::Ref::version(spec.version));
  return fetch::Request(repo, std::move(ref));
}

}  // namespace

std::shared_ptr<const loader::LoadedKernel> fetch_hub_kernel(
    const HubKernelSpec& spec, const trust::RepoId& repo,
    const std::optional<trust::LockEntry>& locked, const std::string& context) {
  auto request = hub_request(spec, repo, locked);
  if (!request) raise_kernel_error(request.error(), context, hub_fix(spec, request.error().code));
  request->platform = fetch_platform(loader::current_runtime());

  std::lock_guard lock(g_fetch_mutex);  // the shared client carries one request at a time
  auto fetched = shared_client().fetch(*request);
  if (!fetched) raise_kernel_error(fetched.error(), context, hub_fix(spec, fetched.error().code));
  // [signatures] warn mode: served, and the app's user is told on stderr.
  for (const auto& warning : fetched->manifest.signature_warnings) {
    std::cerr << "kernelhub: warning: " << warning << "\n";
  }
  auto loaded = loader::load_kernel(to_source(std::move(*fetched)));
  if (!loaded) raise_kernel_error(loaded.error(), context, hub_fix(spec, loaded.error().code));
  return *loaded;
}

void reset_hub_connection(const std::function<void()>& reload) {
  std::lock_guard lock(g_fetch_mutex);
  reload();
  g_client.reset();  // it was opened with the old environment
}

}  // namespace kernelhub::attention::detail
