#include "kernelhub/provider/kernel_provider.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <system_error>

#include "kernel_errors.hpp"
#include "kernel_fetch.hpp"
#include "kernelhub/fetch/ref.hpp"
#include "kernelhub/fetch/request.hpp"
#include "kernelhub/provider/local_kernels.hpp"
#include "kernelhub/provider/process_environment.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "lock_in_force.hpp"

namespace kernelhub::provider {
namespace {

// The spec's version or revision, checked as every fetch checks it.
Result<fetch::Ref> ref_of(const HubKernelSpec& spec) {
  if (spec.version.has_value() == spec.revision.has_value()) {
    return fail(ErrorCode::invalid_argument,
                "a hub kernel is asked for at a version or a revision, exactly one of them");
  }
  if (spec.revision) return fetch::Ref::revision(*spec.revision);
  // Above INT64_MAX is out of range all the same, and Ref::version says so.
  constexpr auto kLargest = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return fetch::Ref::version(static_cast<std::int64_t>(std::min(*spec.version, kLargest)));
}

Result<LocalKernels> local_kernels() {
  return parse_local_kernels(process_environment().get("LOCAL_KERNELS").value_or(""));
}

// The folder open_local_kernel took the files from: `dir` itself, or its build/<variant>.
std::filesystem::path local_variant_dir(const std::filesystem::path& dir,
                                        const std::string& variant) {
  std::error_code ec;
  const auto nested = dir / "build" / variant;
  return std::filesystem::absolute(std::filesystem::is_directory(nested, ec) ? nested : dir, ec)
      .lexically_normal();
}

Result<ProvidedKernel> open_local(const std::string& context, const std::string& path,
                                  const std::string& fix,
                                  loader::VariantKinds kinds = loader::VariantKinds::compiled) {
  auto source = loader::open_local_kernel(path, "local:" + path, loader::current_runtime(), kinds);
  if (!source) return fail(in_context(std::move(source).error(), context, fix));
  ProvidedKernel kernel;
  kernel.variant_dir = local_variant_dir(path, source->variant);
  kernel.source = std::move(*source);
  kernel.local = true;
  kernel.context = context;
  return kernel;
}

// Diffusers' words for a library backend it cannot use.
Unexpected library_unusable(const LibrarySpec& spec, ErrorCode code, const std::string& why) {
  return fail(code, "Backend '" + std::string(spec.backend) + "' is not usable because " + why);
}

}  // namespace

Result<ProvidedKernel> provide_hub_source(const HubKernelSpec& spec) {
  const bool lock_decides = spec.lockfile || spec.require_lock;
  std::optional<fetch::Ref> ref;
  if (!lock_decides || spec.version || spec.revision) {
    auto checked = ref_of(spec);
    if (!checked) {
      return fail(in_context(std::move(checked).error(),
                             std::string(spec.user) + ": cannot use " + std::string(spec.repo)));
    }
    ref = std::move(*checked);
  }
  KH_TRY_ASSIGN(const LocalKernels locals, local_kernels());
  if (auto local = locals.find(spec.repo); local != locals.end()) {
    const std::string context = std::string(spec.user) + ": local kernel " +
                                std::string(spec.repo) + " at " + local->second;
    return open_local(context, local->second, "Check the LOCAL_KERNELS entry.", spec.kinds);
  }

  const std::string context = std::string(spec.user) + ": cannot use " + std::string(spec.repo) +
                              " " + (ref ? ref->describe() : std::string("as locked"));
  auto repo = trust::RepoId::parse(spec.repo);
  if (!repo) return fail(in_context(std::move(repo).error(), context));
  std::optional<trust::LockEntry> locked;
  if (spec.lockfile) {
    KH_TRY_ASSIGN(locked, locked_entry_in(*spec.lockfile, spec, *repo, context));
  } else {
    KH_TRY_ASSIGN(locked, locked_entry(spec, *repo, context));
  }
  if (!locked && spec.require_lock) {
    return fail(in_context({ErrorCode::not_locked, "no lockfile is in force."}, context,
                           "Set KERNELHUB_LOCKFILE (or call set_kernel_lockfile) to the "
                           "project's kernels.lock, or name the lockfile in the mapping."));
  }
  auto request = locked ? fetch::Request::locked(*repo, locked->commit, {locked->variant_hashes})
                        : Result<fetch::Request>(fetch::Request(*repo, std::move(*ref)));
  if (!request) {
    const ErrorCode code = request.error().code;
    return fail(in_context(std::move(request).error(), context, hub_fix(spec, code)));
  }
  return fetch_hub_source(*request, spec, context);
}

Result<ProvidedKernel> provide_local_source(std::string_view user, const std::filesystem::path& dir,
                                            loader::VariantKinds kinds) {
  const std::string context = std::string(user) + ": local kernel at " + dir.string();
  return open_local(context, dir.string(), "Check the path of the local build.", kinds);
}

Result<ProvidedKernel> provide_local_library_source(const LibrarySpec& spec) {
  KH_TRY_ASSIGN(const LocalKernels locals, local_kernels());
  const auto local = locals.find(spec.library);
  const std::string install = "Please install `" + std::string(spec.requirement) +
                              "`: point LOCAL_KERNELS=" + std::string(spec.library) +
                              "=<path> at a kernel-builder build of it.";
  if (local == locals.end()) {
    return library_unusable(spec, ErrorCode::entry_not_found,
                            "of missing package or the version is too old: no " +
                                std::string(spec.library) + " in LOCAL_KERNELS. " + install);
  }
  const std::string context =
      std::string(spec.backend) + ": " + std::string(spec.library) + " at " + local->second;
  KH_TRY_ASSIGN(ProvidedKernel kernel, open_local(context, local->second, install));
  if (!spec.min_version.empty()) {
    auto metadata = loader::read_metadata(kernel.source);
    if (!metadata) return fail(in_context(std::move(metadata).error(), context, install));
    const std::string have = metadata->version.value_or("unknown");
    if (!metadata->version || !version_at_least(have, spec.min_version)) {
      return library_unusable(spec, ErrorCode::incompatible_kernel,
                              "the version is too old: " + context + " is version " + have +
                                  ", it needs " + std::string(spec.requirement) + ". " + install);
    }
  }
  return kernel;
}

Error explain_use_error(const HubKernelSpec& spec, const ProvidedKernel& kernel, Error error) {
  const std::string fix = kernel.local ? std::string() : hub_fix(spec, error.code);
  return in_context(std::move(error), kernel.context, fix);
}

Error explain_use_error(const LibrarySpec& /*spec*/, const ProvidedKernel& kernel, Error error) {
  return in_context(std::move(error), kernel.context);
}

}  // namespace kernelhub::provider
