// The pure parts of the store model: LFS rules, canonical commits, tree listings.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::hub::server {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool valid_ref_segment(std::string_view seg) {
  if (seg.empty() || seg.front() == '.' || seg == "HEAD") return false;
  return std::all_of(seg.begin(), seg.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

// A directory's oid: sha1 over every file beneath it (relative path and oid). Stable and
// content-derived; not git's tree hash, which clients never recompute.
std::string directory_oid(const Commit& commit, const std::string& dir) {
  std::string material = "tree\n";
  const std::string prefix = dir + "/";
  for (auto it = commit.files.lower_bound(prefix); it != commit.files.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    material += it->first.substr(prefix.size()) + " " + hub_etag(it->second) + "\n";
  }
  trust::Sha1 sha1;
  sha1.update(material);
  return sha1.final_hex();
}

}  // namespace

bool is_lfs_file(std::string_view path, std::uint64_t size) {
  return size >= kLfsThreshold || ends_with(path, ".so") || ends_with(path, ".bin") ||
         ends_with(path, ".safetensors");
}

std::string lfs_pointer_text(std::string_view sha256, std::uint64_t size) {
  return "version https://git-lfs.github.com/spec/v1\noid sha256:" + std::string(sha256) +
         "\nsize " + std::to_string(size) + "\n";
}

std::string lfs_pointer_text(const StoredFile& file) {
  return lfs_pointer_text(file.sha256, file.size);
}

std::string lfs_pointer_oid(const StoredFile& file) {
  return trust::git_blob_sha1_hex(lfs_pointer_text(file));
}

std::string hub_etag(const StoredFile& file) { return file.lfs ? file.sha256 : file.git_oid; }

Result<std::string> canonical_commit_json(const Commit& commit) {
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [path, f] : commit.files) {
    files[path] = {{"size", f.size}, {"sha256", f.sha256}, {"git_oid", f.git_oid}, {"lfs", f.lfs}};
  }
  nlohmann::json j = {
      {"parent", commit.parent ? nlohmann::json(*commit.parent) : nlohmann::json(nullptr)},
      {"message", commit.message},
      {"timestamp", commit.timestamp},
      {"files", std::move(files)}};
  try {
    return j.dump();  // nlohmann objects are key-sorted: this is the canonical form
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::invalid_argument, std::string("commit is not valid UTF-8: ") + e.what());
  }
}

Result<void> validate_ref_name(std::string_view name) {
  if (name.empty() || name.size() > 200)
    return fail(ErrorCode::invalid_argument, "ref name is empty or too long");
  std::size_t start = 0;
  while (true) {
    const auto slash = name.find('/', start);
    const auto seg = name.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (!valid_ref_segment(seg) || seg.find("..") != std::string_view::npos ||
        ends_with(seg, ".lock")) {
      return fail(ErrorCode::invalid_argument, "invalid ref name '" + std::string(name) + "'");
    }
    if (slash == std::string_view::npos) return ok();
    start = slash + 1;
  }
}

std::optional<StoreEntry> find_entry(const Commit& commit, std::string_view path) {
  const std::string key(path);
  if (auto it = commit.files.find(key); it != commit.files.end())
    return StoreEntry{key, it->second, {}};
  const std::string prefix = key + "/";
  auto it = commit.files.lower_bound(prefix);
  if (!key.empty() && it != commit.files.end() &&
      it->first.compare(0, prefix.size(), prefix) == 0) {
    return StoreEntry{key, std::nullopt, directory_oid(commit, key)};
  }
  return std::nullopt;
}

Result<std::vector<StoreEntry>> list_tree(const Commit& commit, std::string_view prefix_in,
                                          bool recursive) {
  std::string base(prefix_in);
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string prefix = base.empty() ? "" : base + "/";
  std::vector<StoreEntry> out;
  std::set<std::string> dirs;
  bool any = false;
  for (auto it = commit.files.lower_bound(prefix); it != commit.files.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    any = true;
    const std::string rest = it->first.substr(prefix.size());
    auto slash = rest.find('/');
    if (slash == std::string::npos) {
      out.push_back({it->first, it->second, {}});
      continue;
    }
    if (!recursive) {
      dirs.insert(prefix + rest.substr(0, slash));
      continue;
    }
    out.push_back({it->first, it->second, {}});
    for (; slash != std::string::npos; slash = rest.find('/', slash + 1))
      dirs.insert(prefix + rest.substr(0, slash));
  }
  if (!any && !base.empty()) {
    return fail(ErrorCode::entry_not_found, "no folder '" + base + "' in commit " + commit.id);
  }
  for (const auto& d : dirs) out.push_back({d, std::nullopt, directory_oid(commit, d)});
  std::sort(out.begin(), out.end(),
            [](const StoreEntry& a, const StoreEntry& b) { return a.path < b.path; });
  return out;
}

}  // namespace kernelhub::hub::server
