#include "kernelhub/cache/pins.hpp"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::cache {
namespace {

namespace fs = std::filesystem;

Unexpected malformed(const std::string& why) {
  return fail(ErrorCode::malformed_response, "pins.json: " + why);
}

bool is_variant_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos &&
         trust::validate_repo_path(name).has_value();
}

Result<std::string> string_member(const nlohmann::json& pin, const char* key) {
  const auto it = pin.find(key);
  if (it == pin.end()) return std::string();
  if (!it->is_string()) return malformed(std::string(key) + " must be a string");
  return it->get<std::string>();
}

Result<Pin> parse_pin(const nlohmann::json& item) {
  if (!item.is_object()) return malformed("each pin must be an object");
  Pin pin;
  KH_TRY_ASSIGN(pin.commit, string_member(item, "commit"));
  if (!trust::is_git_object_id(pin.commit)) return malformed("a pin's commit must be 40 or 64 hex");
  if (const auto variants = item.find("variants"); variants != item.end()) {
    if (!variants->is_array()) return malformed("variants must be an array");
    for (const auto& v : *variants) {
      if (!v.is_string() || !is_variant_name(v.get<std::string>()))
        return malformed("variants must hold variant folder names");
      pin.variants.push_back(v.get<std::string>());
    }
  }
  std::sort(pin.variants.begin(), pin.variants.end());
  pin.variants.erase(std::unique(pin.variants.begin(), pin.variants.end()), pin.variants.end());
  KH_TRY_ASSIGN(pin.source, string_member(item, "source"));
  KH_TRY_ASSIGN(pin.pinned_by, string_member(item, "pinned_by"));
  if (const auto at = item.find("pinned_at"); at != item.end()) {
    if (!at->is_number_integer()) return malformed("pinned_at must be an integer");
    pin.pinned_at = at->get<std::int64_t>();
  }
  return pin;
}

Result<void> write_pins(const KernelCache& cache, const trust::RepoId& repo,
                        const std::vector<Pin>& pins) {
  KH_TRY(cache.prepare_repo(repo));  // a pin may come before the first download
  util::DirtyDirs dirty;
  KH_TRY(dirty.create(cache.state_dir(repo)));
  KH_TRY(util::write_file_atomic(cache.pins_path(repo), pins_to_json(pins), 0644));
  return dirty.sync();
}

}  // namespace

bool Pin::covers(std::string_view commit_sha, std::string_view variant) const {
  if (commit != commit_sha) return false;
  return variants.empty() || std::binary_search(variants.begin(), variants.end(), variant);
}

Result<std::vector<Pin>> parse_pins(std::string_view text) {
  auto doc = util::parse_bounded_json(text, kPinsJson);
  if (!doc) return malformed(doc.error().message);
  if (!doc->is_object()) return malformed("not a JSON object");
  std::vector<Pin> pins;
  const auto list = doc->find("pins");
  if (list == doc->end()) return pins;
  if (!list->is_array()) return malformed("pins must be an array");
  if (list->size() > kMaxPinsPerRepo)
    return malformed("more than " + std::to_string(kMaxPinsPerRepo) + " pins");
  for (const auto& item : *list) {
    KH_TRY_ASSIGN(auto pin, parse_pin(item));
    pins.push_back(std::move(pin));
  }
  return pins;
}

std::string pins_to_json(const std::vector<Pin>& pins) {
  auto list = nlohmann::json::array();
  for (const auto& pin : pins) {
    list.push_back({{"commit", pin.commit},
                    {"variants", pin.variants},
                    {"source", pin.source},
                    {"pinned_by", pin.pinned_by},
                    {"pinned_at", pin.pinned_at}});
  }
  return nlohmann::json{{"pins", std::move(list)}}.dump(2) + "\n";
}

Result<std::vector<Pin>> read_pins(const KernelCache& cache, const trust::RepoId& repo) {
  const fs::path path = cache.pins_path(repo);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return std::vector<Pin>{};
  auto text = util::read_small_file(path, kPinsJson.max_bytes);
  if (!text) return fail(text.error().code, repo.str() + ": " + text.error().message);
  auto pins = parse_pins(*text);
  if (!pins) return fail(pins.error().code, repo.str() + ": " + pins.error().message);
  return pins;
}

Result<std::vector<Pin>> add_pin(const KernelCache& cache, const trust::RepoId& repo, Pin pin) {
  if (!trust::is_git_object_id(pin.commit))
    return fail(ErrorCode::invalid_argument,
                "a pin needs a commit (40 or 64 hex), not '" + pin.commit + "'");
  std::sort(pin.variants.begin(), pin.variants.end());
  pin.variants.erase(std::unique(pin.variants.begin(), pin.variants.end()), pin.variants.end());
  KH_TRY_ASSIGN(auto lock, cache.lock(repo, "pins"));
  auto current = read_pins(cache, repo);
  // A damaged document is replaced: the pin being made is what the operator wants now.
  std::vector<Pin> pins = current ? std::move(*current) : std::vector<Pin>{};
  const auto same =
      std::find_if(pins.begin(), pins.end(), [&](const Pin& p) { return p.commit == pin.commit; });
  if (same == pins.end()) {
    if (pins.size() >= kMaxPinsPerRepo)
      return fail(ErrorCode::invalid_argument,
                  repo.str() + " has " + std::to_string(pins.size()) + " pins already (the most)");
    pins.push_back(std::move(pin));
  } else {
    const bool every = same->variants.empty() || pin.variants.empty();
    std::vector<std::string> merged = same->variants;
    merged.insert(merged.end(), pin.variants.begin(), pin.variants.end());
    std::sort(merged.begin(), merged.end());
    merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
    *same = std::move(pin);
    same->variants = every ? std::vector<std::string>{} : std::move(merged);
  }
  std::sort(pins.begin(), pins.end(),
            [](const Pin& a, const Pin& b) { return a.commit < b.commit; });
  KH_TRY(write_pins(cache, repo, pins));
  return pins;
}

Result<std::size_t> remove_pins(const KernelCache& cache, const trust::RepoId& repo,
                                const std::optional<std::string>& commit) {
  KH_TRY_ASSIGN(auto lock, cache.lock(repo, "pins"));
  auto current = read_pins(cache, repo);
  std::vector<Pin> pins = current ? std::move(*current) : std::vector<Pin>{};
  const std::size_t before = pins.size();
  std::erase_if(pins, [&](const Pin& p) { return !commit || p.commit == *commit; });
  const std::size_t removed = before - pins.size();
  if (removed == 0 && current) return removed;
  KH_TRY(write_pins(cache, repo, pins));
  return removed;
}

}  // namespace kernelhub::cache
