#include "kernel_errors.hpp"

#include "kernelhub/util/error_table.hpp"

namespace kernelhub::provider {
namespace {

// What the CLI is given to name the same version or revision: "--version 3".
std::string cli_ref(const HubKernelSpec& spec) {
  if (spec.version) return "--version " + std::to_string(*spec.version);
  if (spec.revision) return "--revision " + *spec.revision;
  return "--lockfile " + spec.lockfile.value_or("kernels.lock");
}

}  // namespace

Error in_context(Error error, const std::string& context, const std::string& fix) {
  error.message = context + ": " + error.message;
  if (!fix.empty()) error.message += " " + fix;
  return error;
}

std::string hub_fix(const HubKernelSpec& spec, ErrorCode code) {
  const std::string user(spec.user);
  const std::string repo(spec.repo);
  switch (error_info(code).remedy) {
    case Remedy::trust_opt_in:
      return "Backend '" + user + "' loads `" + repo +
             "`, which is not published by a trusted kernel publisher on the Hub, so loading it "
             "downloads and executes remote code. Set `DIFFUSERS_TRUST_REMOTE_KERNELS=true` to "
             "allow it.";
    case Remedy::allow_remote_code:
      return "Remote kernels are disabled by DIFFUSERS_DISABLE_REMOTE_CODE; unset it, point "
             "LOCAL_KERNELS=" +
             repo + "=<path> at a local build, or use a native backend.";
    case Remedy::prefetch_online:
      return "Prefetch it while online: `kernelhub download " + repo + " " + cli_ref(spec) + "`.";
    case Remedy::signed_release:
      return "The admin policy's [signatures] refuses this build of " + repo +
             "; use a signed release (kernelhub verify-signature " + repo + " " + cli_ref(spec) +
             " shows each variant's verdict) or a native backend.";
    case Remedy::other_build:
      return "No build of " + repo +
             " fits this process; use a native backend or a matching "
             "libtorch.";
    case Remedy::none:
      return {};
  }
  return {};
}

}  // namespace kernelhub::provider
