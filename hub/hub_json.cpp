// JSON bodies of the Hub API -> typed values. Everything from the network is checked here:
// shapes, 40/64-hex ids (an etag becomes a file name in blobs/), and repo paths.
#include <nlohmann/json.hpp>

#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::hub {
namespace {

using nlohmann::json;

Unexpected malformed(std::string what) {
  return fail(ErrorCode::malformed_response, std::move(what));
}

// Size, depth and value-count bounds first (kernelhub/util/json_bounds.hpp): a hostile
// page costs bounded memory and no later walk of it can recurse deep.
Result<json> parse(std::string_view body, std::string_view what) {
  auto value = util::parse_bounded_json(body, util::kHubApiJson);
  if (!value) {
    const auto& e = value.error();
    if (e.code == ErrorCode::too_large)
      return fail(e.code, "the " + std::string(what) + " response is " + e.message);
    return malformed("invalid JSON in the " + std::string(what) + " response: " + e.message);
  }
  return std::move(*value);
}

std::optional<std::string> string_field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::uint64_t> size_field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

Result<std::vector<GitRef>> parse_ref_list(const json& data, const char* key) {
  std::vector<GitRef> refs;
  const auto it = data.find(key);
  if (it == data.end()) return refs;
  if (!it->is_array()) return malformed(std::string("refs: '") + key + "' is not an array");
  for (const auto& item : *it) {
    if (!item.is_object()) return malformed("refs: entry is not an object");
    auto name = string_field(item, "name");
    auto target = string_field(item, "targetCommit");
    if (!name || !target || !is_commit_sha(*target))
      return malformed("refs: entry without name or 40-hex targetCommit");
    refs.push_back({*name, string_field(item, "ref").value_or(""), *target});
  }
  return refs;
}

}  // namespace

bool is_commit_sha(std::string_view text) noexcept { return trust::is_lower_hex(text, 40); }

Result<RepoRefs> parse_refs_json(std::string_view body) {
  KH_TRY_ASSIGN(auto data, parse(body, "refs"));
  if (!data.is_object()) return malformed("refs response is not an object");
  KH_TRY_ASSIGN(auto branches, parse_ref_list(data, "branches"));
  KH_TRY_ASSIGN(auto tags, parse_ref_list(data, "tags"));
  return RepoRefs{std::move(branches), std::move(tags)};
}

Result<std::string> parse_revision_json(std::string_view body) {
  KH_TRY_ASSIGN(auto data, parse(body, "revision"));
  if (!data.is_object()) return malformed("revision response is not an object");
  auto sha = string_field(data, "sha");
  if (!sha || !is_commit_sha(*sha)) return malformed("revision response has no 40-hex 'sha'");
  return *sha;
}

Result<std::vector<TreeEntry>> parse_tree_json(std::string_view body, std::string_view under) {
  KH_TRY_ASSIGN(auto data, parse(body, "tree"));
  if (!data.is_array()) return malformed("tree response is not an array");
  std::vector<TreeEntry> entries;
  entries.reserve(data.size());
  for (const auto& item : data) {
    if (!item.is_object()) return malformed("tree entry is not an object");
    auto path = string_field(item, "path");
    if (!path) return malformed("tree entry without a path");
    // Hostile names are refused here, before anything else sees them.
    KH_TRY_ASSIGN(auto safe, trust::validate_repo_path(*path));
    if (!under.empty() &&
        !(path->size() > under.size() && path->compare(0, under.size(), under) == 0 &&
          (*path)[under.size()] == '/')) {
      return fail(ErrorCode::unsafe_path, "tree entry '" + trust::sanitize_for_message(*path) +
                                              "' is outside the listed folder '" +
                                              std::string(under) + "'");
    }
    TreeEntry entry;
    entry.path = std::move(safe);
    entry.is_file = string_field(item, "type").value_or("") == "file";
    entry.oid = string_field(item, "oid").value_or("");
    if (entry.is_file) {
      auto size = size_field(item, "size");
      if (!size) return malformed("tree entry '" + entry.path + "' has no size");
      entry.size = *size;
      if (!trust::is_lower_hex(entry.oid, 40))
        return malformed("tree entry '" + entry.path + "' has no 40-hex oid");
      if (const auto lfs = item.find("lfs"); lfs != item.end() && !lfs->is_null()) {
        if (!lfs->is_object())
          return malformed("tree entry '" + entry.path + "' has a malformed lfs field");
        auto oid = string_field(*lfs, "oid");
        if (!oid || !trust::is_lower_hex(*oid, 64))
          return malformed("tree entry '" + entry.path + "' has no 64-hex lfs oid");
        if (auto lfs_size = size_field(*lfs, "size"); lfs_size && *lfs_size != entry.size) {
          return malformed("tree entry '" + entry.path + "' has inconsistent sizes");
        }
        entry.lfs_sha256 = std::move(*oid);
      }
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<std::vector<std::string>> parse_commits_json(std::string_view body) {
  KH_TRY_ASSIGN(auto data, parse(body, "commits"));
  if (!data.is_array()) return malformed("commits response is not an array");
  std::vector<std::string> ids;
  ids.reserve(data.size());
  for (const auto& item : data) {
    if (!item.is_object()) return malformed("commits: entry is not an object");
    auto id = string_field(item, "id");
    if (!id || !is_commit_sha(*id)) return malformed("commits: entry without a 40-hex id");
    ids.push_back(std::move(*id));
  }
  return ids;
}

}  // namespace kernelhub::hub
