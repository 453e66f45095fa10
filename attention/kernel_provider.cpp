#include "kernelhub/attention/kernel_provider.hpp"

#include <charconv>
#include <mutex>
#include <optional>
#include <vector>

#include "kernel_fetch.hpp"
#include "kernelhub/attention_dispatch.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/error_table.hpp"

namespace kernelhub::attention::detail {
namespace {

std::mutex g_environment_mutex;
std::optional<util::Environment> g_environment;

// The lockfile in force: set_kernel_lockfile's, else KERNELHUB_LOCKFILE. Parsed once per
// path. Guarded by g_lock_mutex.
std::mutex g_lock_mutex;
std::optional<std::optional<std::string>> g_lockfile_override;
std::optional<std::pair<std::string, trust::Lockfile>> g_lockfile;

}  // namespace

void raise_kernel_error(const Error& error, const std::string& context, const std::string& fix) {
  std::string message = context + ": " + error.message;
  if (!fix.empty()) message += " " + fix;
  // Refused by a rule or by verification: never a silent fall-back to another backend.
  if (is_refused(error.code)) throw KernelRefused(message);
  throw BackendUnavailable(message);
}

namespace {

// The lock entry that pins spec.repo, or nullopt when no lockfile is in force. A repo the
// lock does not name, or locks at another version than the backend loads, is refused.
std::optional<trust::LockEntry> locked_entry(const HubKernelSpec& spec, const trust::RepoId& repo,
                                             const std::string& context) {
  std::lock_guard lock(g_lock_mutex);
  const std::optional<std::string> path =
      g_lockfile_override ? *g_lockfile_override : process_environment().get("KERNELHUB_LOCKFILE");
  if (!path || path->empty()) return std::nullopt;
  if (!g_lockfile || g_lockfile->first != *path) {
    auto parsed = trust::read_lockfile(*path);
    if (!parsed) raise_kernel_error(parsed.error(), context, "Check KERNELHUB_LOCKFILE.");
    g_lockfile.emplace(*path, std::move(*parsed));
  }
  const std::string relock = "Add \"" + repo.str() + "\" = " + std::to_string(spec.version) +
                             " to [tool.kernels.dependencies] and run `kernelhub lock`, or unset "
                             "KERNELHUB_LOCKFILE.";
  const auto* entry = g_lockfile->second.find(repo);
  if (entry == nullptr) {
    raise_kernel_error(
        Error{ErrorCode::not_locked, repo.str() + " is not in the lockfile " + *path + "."},
        context, relock);
  }
  if (entry->dependency && entry->dependency->has_version() &&
      entry->dependency->version() != static_cast<std::uint64_t>(spec.version)) {
    raise_kernel_error(
        Error{ErrorCode::not_locked, *path + " locks " + entry->dependency->describe() +
                                         ", the backend loads version " +
                                         std::to_string(spec.version) + "."},
        context, relock);
  }
  return *entry;
}

std::shared_ptr<const loader::LoadedKernel> load_local(std::string_view backend,
                                                       std::string_view key,
                                                       const std::string& path) {
  const std::string context =
      std::string(backend) + ": local kernel " + std::string(key) + " at " + path;
  auto source = loader::open_local_kernel(path, "local:" + path, loader::current_runtime());
  if (!source) raise_kernel_error(source.error(), context, "Check the LOCAL_KERNELS entry.");
  auto loaded = loader::load_kernel(std::move(*source));
  if (!loaded) raise_kernel_error(loaded.error(), context, "");
  return *loaded;
}

}  // namespace

const util::Environment& process_environment() {
  std::lock_guard lock(g_environment_mutex);
  if (!g_environment) g_environment = util::Environment::from_process();
  return *g_environment;
}

void set_lockfile_override(std::optional<std::optional<std::string>> path) {
  std::lock_guard lock(g_lock_mutex);
  g_lockfile_override = std::move(path);
  g_lockfile.reset();
}

void reload_process_environment() {
  reset_hub_connection([] {
    std::lock_guard lock(g_environment_mutex);
    g_environment = util::Environment::from_process();
    std::lock_guard lock_file(g_lock_mutex);
    g_lockfile.reset();  // KERNELHUB_LOCKFILE may name another file now
  });
}

std::map<std::string, std::string, std::less<>> parse_local_kernels(std::string_view value) {
  std::map<std::string, std::string, std::less<>> entries;
  while (!value.empty()) {
    const auto colon = value.find(':');
    const std::string_view entry = value.substr(0, colon);
    value = colon == std::string_view::npos ? std::string_view() : value.substr(colon + 1);
    if (entry.empty()) continue;
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0 || equals + 1 == entry.size()) {
      throw BackendUnavailable("LOCAL_KERNELS entry '" + std::string(entry) +
                               "' is not of the form key=path (entries are separated by ':').");
    }
    entries.emplace(std::string(entry.substr(0, equals)), std::string(entry.substr(equals + 1)));
  }
  return entries;
}

bool version_at_least(std::string_view have, std::string_view need) {
  // Split into numeric release parts and a pre-release flag; a pre-release of a release
  // sorts before it, which is all the pins here need.
  struct Parsed {
    std::vector<long> release;
    bool pre = false;
  };
  auto parse = [](std::string_view text) {
    Parsed parsed;
    while (!text.empty()) {
      long number = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (ec != std::errc()) break;
      parsed.release.push_back(number);
      text.remove_prefix(static_cast<std::size_t>(end - text.data()));
      if (text.empty()) break;
      if (text.front() != '.') {
        parsed.pre = text.front() == 'a' || text.front() == 'b' || text.front() == 'r';
        break;
      }
      text.remove_prefix(1);
    }
    return parsed;
  };
  Parsed a = parse(have);
  Parsed b = parse(need);
  const std::size_t n = std::max(a.release.size(), b.release.size());
  a.release.resize(n, 0);
  b.release.resize(n, 0);
  if (a.release != b.release) return a.release > b.release;
  return !a.pre || b.pre;
}

std::shared_ptr<const loader::LoadedKernel> provide_hub_kernel(const HubKernelSpec& spec) {
  const auto& env = process_environment();
  const auto locals = parse_local_kernels(env.get("LOCAL_KERNELS").value_or(""));
  if (auto local = locals.find(spec.repo); local != locals.end()) {
    return load_local(spec.backend, spec.repo, local->second);
  }

  const std::string context = std::string(spec.backend) + ": cannot use " + std::string(spec.repo) +
                              " v" + std::to_string(spec.version);
  auto repo = trust::RepoId::parse(spec.repo);
  if (!repo) raise_kernel_error(repo.error(), context, "");
  return fetch_hub_kernel(spec, *repo, locked_entry(spec, *repo, context), context);
}

std::shared_ptr<const loader::LoadedKernel> provide_local_library(const LibrarySpec& spec) {
  const auto& env = process_environment();
  const auto locals = parse_local_kernels(env.get("LOCAL_KERNELS").value_or(""));
  const auto local = locals.find(spec.library);
  const std::string install = "Please install `" + std::string(spec.requirement) +
                              "`: point LOCAL_KERNELS=" + std::string(spec.library) +
                              "=<path> at a kernel-builder build of it.";
  if (local == locals.end()) {
    throw BackendUnavailable("Backend '" + std::string(spec.backend) +
                             "' is not usable because of missing package or the version is too "
                             "old: no " +
                             std::string(spec.library) + " in LOCAL_KERNELS. " + install);
  }
  const std::string context =
      std::string(spec.backend) + ": " + std::string(spec.library) + " at " + local->second;
  auto source =
      loader::open_local_kernel(local->second, "local:" + local->second, loader::current_runtime());
  if (!source) raise_kernel_error(source.error(), context, install);
  if (!spec.min_version.empty()) {
    auto metadata = loader::read_metadata(*source);
    if (!metadata) raise_kernel_error(metadata.error(), context, install);
    const std::string have = metadata->version.value_or("unknown");
    if (!metadata->version || !version_at_least(have, spec.min_version)) {
      throw BackendUnavailable("Backend '" + std::string(spec.backend) +
                               "' is not usable because the version is too old: " + context +
                               " is version " + have + ", it needs " +
                               std::string(spec.requirement) + ". " + install);
    }
  }
  auto loaded = loader::load_kernel(std::move(*source));
  if (!loaded) raise_kernel_error(loaded.error(), context, "");
  return *loaded;
}

}  // namespace kernelhub::attention::detail
