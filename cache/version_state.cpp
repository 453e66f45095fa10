// The accepted commit of each version branch (see KernelCache::read_version_state): the
// high-water mark that keeps a vN branch from moving back to an older or unrelated commit.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::cache {
namespace {

namespace fs = std::filesystem;

constexpr util::JsonBounds kStateJson{4096, 4, 16};

std::optional<VersionState> read_state_file(const fs::path& path, std::uint64_t version) {
  const auto text = util::read_small_file(path, kStateJson.max_bytes);
  if (!text) return std::nullopt;
  auto doc = util::parse_bounded_json(*text, kStateJson);
  if (!doc || !doc->is_object()) return std::nullopt;
  const auto accepted = doc->find("accepted");
  if (accepted == doc->end() || !accepted->is_string() ||
      !trust::is_lower_hex(accepted->get_ref<const std::string&>(), 40)) {
    return std::nullopt;
  }
  VersionState state{version, accepted->get<std::string>(), std::nullopt};
  const auto refused = doc->find("refused");
  if (refused != doc->end() && refused->is_string() &&
      trust::is_lower_hex(refused->get_ref<const std::string&>(), 40)) {
    state.refused = refused->get<std::string>();
  }
  return state;
}

// "v<N>.json" -> N.
std::optional<std::uint64_t> version_of(std::string_view file_name) {
  if (!file_name.ends_with(".json")) return std::nullopt;
  return trust::version_of_branch(file_name.substr(0, file_name.size() - 5));
}

}  // namespace

std::optional<VersionState> KernelCache::read_version_state(const trust::RepoId& repo,
                                                            std::uint64_t version) const {
  return read_state_file(state_dir(repo) / ("v" + std::to_string(version) + ".json"), version);
}

std::vector<VersionState> KernelCache::version_states(const trust::RepoId& repo) const {
  std::vector<VersionState> states;
  std::error_code ec;
  for (fs::directory_iterator it(state_dir(repo), ec), end; !ec && it != end; it.increment(ec)) {
    const auto version = version_of(it->path().filename().string());
    if (!version) continue;
    if (auto state = read_state_file(it->path(), *version)) states.push_back(std::move(*state));
  }
  std::sort(states.begin(), states.end(),
            [](const auto& a, const auto& b) { return a.version < b.version; });
  return states;
}

Result<void> KernelCache::write_version_state(const trust::RepoId& repo,
                                              const VersionState& state) const {
  const fs::path dir = state_dir(repo);
  util::DirtyDirs dirty;
  KH_TRY(dirty.create(dir));
  nlohmann::json doc = {{"accepted", state.accepted}};
  doc["refused"] = state.refused ? nlohmann::json(*state.refused) : nlohmann::json(nullptr);
  KH_TRY(util::write_file_atomic(dir / ("v" + std::to_string(state.version) + ".json"), doc.dump(),
                                 0644));
  return dirty.sync();
}

}  // namespace kernelhub::cache
