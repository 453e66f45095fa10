#include "kernelhub/trust/lockfile.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::trust {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr util::JsonBounds kLockfileJson{kMaxLockfileBytes, 16, 200'000};
constexpr std::string_view kLegacyHashType = "git_lfs_concat";

Unexpected malformed(const std::string& where, const std::string& why) {
  return fail(ErrorCode::malformed_lockfile,
              where + ": " + why + "; fix the file or write it again with `kernelhub lock`");
}

std::string entry_name(std::size_t index) {
  return "kernels.lock entry " + std::to_string(index + 1);
}

// A git object id: 40 (sha1) or 64 (sha256) hex digits, kept lowercase.
Result<std::string> commit_id(const json& node, const std::string& where) {
  if (!node.is_string()) return malformed(where, "the commit must be a string");
  const std::string text = util::ascii_lower(node.get<std::string>());
  if (!is_git_object_id(text)) {
    return malformed(where, "'" + trust::sanitize_for_message(text) +
                                "' is not a git object id (40 or 64 hex digits)");
  }
  return text;
}

Result<void> only_members(const json& node, std::initializer_list<std::string_view> allowed,
                          const std::string& where) {
  if (!node.is_object()) return malformed(where, "must be an object");
  for (const auto& [key, value] : node.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return malformed(where, "unknown member '" + trust::sanitize_for_message(key) + "'");
    }
  }
  return ok();
}

Result<LockEntry> parse_kernels_entry(const json& node, const std::string& where) {
  KH_TRY(only_members(node, {"dependency", "lock"}, where));
  const auto dependency = node.find("dependency");
  const auto lock = node.find("lock");
  if (dependency == node.end() || lock == node.end()) {
    return malformed(where, "needs both 'dependency' and 'lock'");
  }
  KH_TRY_ASSIGN(auto parsed,
                parse_kernel_dependency(*dependency, where, ErrorCode::malformed_lockfile));
  KH_TRY(only_members(*lock, {"commit"}, where + " lock"));
  const auto commit = lock->find("commit");
  if (commit == lock->end()) return malformed(where, "'lock' needs a 'commit'");
  KH_TRY_ASSIGN(auto id, commit_id(*commit, where));
  return LockEntry{parsed.repo, std::move(parsed), std::move(id), {}};
}

Result<LockEntry> parse_legacy_entry(const json& node, const std::string& where) {
  KH_TRY(only_members(node, {"repo_id", "sha", "variants"}, where));
  const auto repo_it = node.find("repo_id");
  const auto sha = node.find("sha");
  const auto variants = node.find("variants");
  if (repo_it == node.end() || sha == node.end() || variants == node.end()) {
    return malformed(where, "needs 'repo_id', 'sha' and 'variants'");
  }
  if (!repo_it->is_string()) return malformed(where, "'repo_id' must be a string");
  auto repo = RepoId::parse(repo_it->get_ref<const std::string&>());
  if (!repo) return malformed(where, repo.error().message);
  KH_TRY_ASSIGN(auto id, commit_id(*sha, where));
  if (!variants->is_object()) return malformed(where, "'variants' must be an object");
  LockEntry entry{*repo, std::nullopt, std::move(id), {}};
  for (const auto& [variant, value] : variants->items()) {
    const std::string at = where + " variant '" + trust::sanitize_for_message(variant) + "'";
    if (auto safe = validate_repo_path(variant); !safe || variant.find('/') != std::string::npos) {
      return malformed(at, "not a variant folder name");
    }
    KH_TRY(only_members(value, {"hash", "hash_type"}, at));
    const auto hash = value.find("hash");
    const auto type = value.find("hash_type");
    if (hash == value.end() || type == value.end() || !hash->is_string() || !type->is_string()) {
      return malformed(at, "needs string members 'hash' and 'hash_type'");
    }
    if (type->get_ref<const std::string&>() != kLegacyHashType) {
      return malformed(at, "hash_type must be git_lfs_concat");
    }
    const auto& text = hash->get_ref<const std::string&>();
    if (text.rfind("sha256-", 0) != 0 || !is_lower_hex(std::string_view(text).substr(7), 64)) {
      return malformed(at, "hash must be sha256-<64 hex digits>");
    }
    entry.variant_hashes.emplace(variant, text);
  }
  return entry;
}

bool same_lock_key(const LockEntry& a, const LockEntry& b) {
  return a.dependency && b.dependency ? *a.dependency == *b.dependency : a.repo == b.repo;
}

std::vector<unsigned char> hex_bytes(std::string_view hex) {
  std::vector<unsigned char> out;
  out.reserve(hex.size() / 2);
  const auto nibble = [](char c) {
    return static_cast<unsigned char>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  };
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<unsigned char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return out;
}

}  // namespace

const LockEntry* Lockfile::find(const RepoId& repo) const {
  for (const auto& entry : entries) {
    if (entry.repo == repo) return &entry;
  }
  return nullptr;
}

bool is_git_object_id(std::string_view text) noexcept {
  return is_lower_hex(text, 40) || is_lower_hex(text, 64);
}

Result<Lockfile> parse_lockfile(std::string_view text) {
  if (text.size() > kMaxLockfileBytes) {
    return fail(ErrorCode::too_large, "kernels.lock is " + std::to_string(text.size()) +
                                          " bytes, more than the 4 MiB limit");
  }
  auto doc = util::parse_bounded_json(text, kLockfileJson, ErrorCode::malformed_lockfile);
  if (!doc) return malformed("kernels.lock", doc.error().message);
  if (!doc->is_array()) return malformed("kernels.lock", "the top level must be an array");

  Lockfile lock;
  // The first entry decides the format; an empty array is an empty lock of either.
  if (!doc->empty() && doc->front().is_object() && doc->front().contains("repo_id")) {
    lock.format = LockFormat::legacy;
  }
  for (std::size_t i = 0; i < doc->size(); ++i) {
    const std::string where = entry_name(i);
    KH_TRY_ASSIGN(auto entry, lock.format == LockFormat::legacy
                                  ? parse_legacy_entry((*doc)[i], where)
                                  : parse_kernels_entry((*doc)[i], where));
    for (const auto& seen : lock.entries) {
      if (same_lock_key(seen, entry)) {
        return malformed(where,
                         "duplicate dependency " +
                             (entry.dependency ? entry.dependency->describe() : entry.repo.str()));
      }
    }
    lock.entries.push_back(std::move(entry));
  }
  return lock;
}

Result<Lockfile> read_lockfile(const std::string& path) {
  auto text = util::read_small_file(path, kMaxLockfileBytes);
  if (!text) return fail(text.error().code, "cannot read the lockfile: " + text.error().message);
  auto lock = parse_lockfile(*text);
  if (!lock) return fail(lock.error().code, path + ": " + lock.error().message);
  return lock;
}

Result<std::string> write_lockfile(const Lockfile& lock, LockFormat format) {
  std::vector<const LockEntry*> sorted;
  for (const auto& entry : lock.entries) sorted.push_back(&entry);
  ordered_json out = ordered_json::array();
  if (format == LockFormat::kernels) {
    for (const auto* entry : sorted) {
      if (!entry->dependency) {
        return fail(ErrorCode::invalid_argument,
                    "the legacy entry for " + entry->repo.str() +
                        " names no version; lock the project again to write the kernels format");
      }
    }
    std::sort(sorted.begin(), sorted.end(), [](const LockEntry* a, const LockEntry* b) {
      return *a->dependency < *b->dependency;
    });
    for (const auto* entry : sorted) {
      ordered_json item;
      item["dependency"] = to_json(*entry->dependency);
      item["lock"]["commit"] = entry->commit;
      out.push_back(std::move(item));
    }
    return out.dump(2);
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const LockEntry* a, const LockEntry* b) {
    return a->repo.str() < b->repo.str();
  });
  for (const auto* entry : sorted) {
    ordered_json item;
    item["repo_id"] = entry->repo.str();
    item["sha"] = entry->commit;
    item["variants"] = ordered_json::object();
    for (const auto& [variant, hash] : entry->variant_hashes) {
      item["variants"][variant] = {{"hash", hash}, {"hash_type", kLegacyHashType}};
    }
    out.push_back(std::move(item));
  }
  // Python's json.dump escapes every non-ASCII character.
  return out.dump(2, ' ', /*ensure_ascii=*/true);
}

std::string git_lfs_concat_hash(std::vector<std::pair<std::string, std::string>> files) {
  std::sort(files.begin(), files.end());
  Sha256 hasher;
  for (const auto& [path, object_id] : files) {
    hasher.update(path);
    const auto raw = hex_bytes(object_id);
    hasher.update(raw.data(), raw.size());
  }
  return "sha256-" + hasher.final_hex();
}

Result<void> check_locked_variant(const LockEntry& entry, const std::string& variant,
                                  const std::vector<std::pair<std::string, std::string>>& files) {
  if (entry.variant_hashes.empty()) return ok();
  const auto locked = entry.variant_hashes.find(variant);
  if (locked == entry.variant_hashes.end()) {
    return fail(ErrorCode::not_locked, entry.repo.str() + "@" + entry.commit + ": variant " +
                                           variant + " is not in the lockfile; lock it again");
  }
  const std::string prefix = "build/" + variant + "/";
  std::vector<std::pair<std::string, std::string>> relative;
  for (const auto& [path, object_id] : files) {
    if (path.rfind(prefix, 0) == 0) relative.emplace_back(path.substr(prefix.size()), object_id);
  }
  const std::string actual = git_lfs_concat_hash(std::move(relative));
  if (actual != locked->second) {
    return fail(ErrorCode::hash_mismatch,
                entry.repo.str() + "@" + entry.commit + " variant " + variant + " hashes to " +
                    actual + ", the lockfile says " + locked->second +
                    "; nothing was handed out. Check where the lockfile and the kernel came from");
  }
  return ok();
}

}  // namespace kernelhub::trust
