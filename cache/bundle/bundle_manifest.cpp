#include "kernelhub/cache/bundle/bundle_manifest.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::cache::bundle {
namespace {

using nlohmann::json;

Unexpected bad(const std::string& where, const std::string& why) {
  return fail(ErrorCode::malformed_response, "bundle manifest: " + where + ": " + why);
}

Result<void> only(const json& node, std::initializer_list<std::string_view> keys,
                  const std::string& where) {
  if (!node.is_object()) return bad(where, "must be an object");
  for (const auto& [key, value] : node.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return bad(where, "unknown member '" + trust::sanitize_for_message(key) + "'");
    }
  }
  for (const auto key : keys) {
    if (!node.contains(key)) return bad(where, "missing '" + std::string(key) + "'");
  }
  return ok();
}

Result<std::string> hex_member(const json& node, const char* key, std::size_t length,
                               const std::string& where) {
  const auto& value = node.at(key);
  if (!value.is_string() || !trust::is_lower_hex(value.get_ref<const std::string&>(), length)) {
    return bad(where, std::string("'") + key + "' must be " + std::to_string(length) +
                          " lowercase hex digits");
  }
  return value.get<std::string>();
}

Result<std::vector<std::string>> names(const json& node, const char* key,
                                       const std::string& where) {
  const auto& list = node.at(key);
  if (!list.is_array()) return bad(where, std::string("'") + key + "' must be an array");
  std::vector<std::string> out;
  for (const auto& item : list) {
    if (!item.is_string()) return bad(where, std::string("'") + key + "' holds a non-string");
    const auto& text = item.get_ref<const std::string&>();
    // refs may hold '/' (release/2); variants never do.
    if (!trust::validate_repo_path(text) ||
        (std::string_view(key) == "variants" && text.find('/') != std::string::npos)) {
      return bad(where,
                 std::string("'") + key + "' holds '" + trust::sanitize_for_message(text) + "'");
    }
    out.push_back(text);
  }
  return out;
}

Result<BundledFile> parse_file(const json& node, const std::string& where,
                               const std::vector<std::string>& variants) {
  KH_TRY(only(node, {"path", "size", "etag", "sha256"}, where));
  const auto& path = node.at("path");
  if (!path.is_string() || !trust::validate_repo_path(path.get_ref<const std::string&>())) {
    return bad(where, "'path' is not a safe repo path");
  }
  BundledFile file;
  file.path = path.get<std::string>();
  bool inside = false;
  for (const auto& variant : variants)
    inside = inside || file.path.starts_with("build/" + variant + "/");
  if (!inside) return bad(where, file.path + " is not under one of the repo's variants");
  if (!node.at("size").is_number_unsigned())
    return bad(where, "'size' must be an unsigned integer");
  file.size = node.at("size").get<std::uint64_t>();
  const auto& etag = node.at("etag");
  if (!etag.is_string() || !(trust::is_lower_hex(etag.get_ref<const std::string&>(), 40) ||
                             trust::is_lower_hex(etag.get_ref<const std::string&>(), 64))) {
    return bad(where, "'etag' must be 40 or 64 lowercase hex digits");
  }
  file.etag = etag.get<std::string>();
  KH_TRY_ASSIGN(file.sha256, hex_member(node, "sha256", 64, where));
  if (file.etag.size() == 64 && file.etag != file.sha256) {
    return bad(where, "an LFS etag is the content's sha256");
  }
  return file;
}

Result<BundledRepo> parse_repo(const json& node, const std::string& where, std::size_t& file_count,
                               const BundleLimits& limits) {
  KH_TRY(only(node, {"repo", "commit", "refs", "variants", "files"}, where));
  const auto& id = node.at("repo");
  if (!id.is_string()) return bad(where, "'repo' must be a string");
  auto repo = trust::RepoId::parse(id.get_ref<const std::string&>());
  if (!repo) return bad(where, repo.error().message);
  BundledRepo out{*repo, {}, {}, {}, {}};
  const std::string at = where + " (" + repo->str() + ")";
  KH_TRY_ASSIGN(out.commit, hex_member(node, "commit", 40, at));
  KH_TRY_ASSIGN(auto refs, names(node, "refs", at));
  if (refs.size() > limits.max_refs) {
    return fail(ErrorCode::too_large, "bundle manifest: " + at + " claims more than " +
                                          std::to_string(limits.max_refs) + " refs");
  }
  out.refs = std::move(refs);
  KH_TRY_ASSIGN(auto variants, names(node, "variants", at));
  if (variants.empty()) return bad(at, "no variants");
  out.variants = std::move(variants);
  const auto& files = node.at("files");
  if (!files.is_array()) return bad(at, "'files' must be an array");
  std::set<std::string> paths;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (++file_count > limits.max_files) {
      return fail(ErrorCode::too_large,
                  "bundle manifest: more than " + std::to_string(limits.max_files) + " files");
    }
    KH_TRY_ASSIGN(auto file,
                  parse_file(files[i], at + " file " + std::to_string(i + 1), out.variants));
    if (!paths.insert(file.path).second) return bad(at, file.path + " is listed twice");
    out.files.push_back(std::move(file));
  }
  // A snapshot is a tree: a path that is also a folder of another could never be linked, and
  // the import must fail here, before a blob is written, not half-way through its publish.
  for (const auto& path : paths) {
    for (auto slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      if (paths.contains(path.substr(0, slash))) {
        return bad(at, path.substr(0, slash) + " is listed as a file and as the folder of " + path);
      }
    }
  }
  return out;
}

}  // namespace

std::uint64_t BundleManifest::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& repo : repos) {
    for (const auto& file : repo.files) total += file.size;
  }
  return total;
}

std::string blob_entry_name(const trust::RepoId& repo, std::string_view etag) {
  return "blobs/" + repo.org + "/" + repo.name + "/" + std::string(etag);
}

std::string to_json_text(const BundleManifest& manifest) {
  nlohmann::ordered_json repos = nlohmann::ordered_json::array();
  for (const auto& repo : manifest.repos) {
    nlohmann::ordered_json files = nlohmann::ordered_json::array();
    for (const auto& f : repo.files) {
      files.push_back({{"path", f.path}, {"size", f.size}, {"etag", f.etag}, {"sha256", f.sha256}});
    }
    repos.push_back({{"repo", repo.repo.str()},
                     {"commit", repo.commit},
                     {"refs", repo.refs},
                     {"variants", repo.variants},
                     {"files", std::move(files)}});
  }
  nlohmann::ordered_json doc = {{"format", kFormat}, {"version", kFormatVersion}, {"repos", repos}};
  return doc.dump(1) + "\n";
}

Result<BundleManifest> parse_manifest(std::string_view text, const BundleLimits& limits) {
  const util::JsonBounds bounds{limits.max_manifest_bytes, 8, limits.max_files * 8 + 1024};
  auto doc = util::parse_bounded_json(text, bounds);
  if (!doc) {
    if (doc.error().code == ErrorCode::too_large) {
      return fail(ErrorCode::too_large, "bundle manifest is " + doc.error().message);
    }
    return bad("document", doc.error().message);
  }
  KH_TRY(only(*doc, {"format", "version", "repos"}, "document"));
  if ((*doc)["format"] != kFormat) return bad("format", "not a kernelhub bundle");
  if ((*doc)["version"] != kFormatVersion) {
    return bad("version", "version " + (*doc)["version"].dump() +
                              " is not supported by this kernelhub (it reads 1)");
  }
  const auto& repos = (*doc)["repos"];
  if (!repos.is_array()) return bad("repos", "must be an array");
  if (repos.size() > limits.max_repos) {
    return fail(ErrorCode::too_large,
                "bundle manifest: more than " + std::to_string(limits.max_repos) + " repos");
  }
  BundleManifest manifest;
  std::size_t file_count = 0;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < repos.size(); ++i) {
    KH_TRY_ASSIGN(auto repo,
                  parse_repo(repos[i], "repo " + std::to_string(i + 1), file_count, limits));
    if (!seen.insert(repo.repo.str()).second) {
      return bad("repo " + std::to_string(i + 1), repo.repo.str() + " is listed twice");
    }
    manifest.repos.push_back(std::move(repo));
  }
  // Overflow-safe: each size is checked against what is left of the limit.
  std::uint64_t total = 0;
  for (const auto& repo : manifest.repos) {
    for (const auto& file : repo.files) {
      if (file.size > limits.max_total_bytes - total) {
        return fail(ErrorCode::too_large,
                    "bundle manifest declares more than " +
                        std::to_string(limits.max_total_bytes >> 30) +
                        " GiB of files; refusing it before anything is written");
      }
      total += file.size;
    }
  }
  return manifest;
}

}  // namespace kernelhub::cache::bundle
