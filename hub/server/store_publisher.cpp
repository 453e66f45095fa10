#include "kernelhub/hub/server/store_publisher.hpp"

#include <algorithm>
#include <chrono>

#include "kernelhub/hub/server/local_store.hpp"

namespace kernelhub::hub::server {
namespace fs = std::filesystem;
namespace {

bool hostile_segment(const std::string& seg) {
  if (seg.empty() || seg == "." || seg == ".." || seg == ".git") return true;
  return std::any_of(seg.begin(), seg.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == 0x7f || c == '\\';
  });
}

Unexpected unsafe(const fs::path& path, const std::string& why) {
  return fail(ErrorCode::unsafe_path, "refusing to publish " + path.string() + ": " + why);
}

}  // namespace

Result<std::vector<std::pair<std::string, fs::path>>> collect_source_files(const fs::path& source) {
  std::error_code ec;
  if (!fs::is_directory(source, ec)) {
    return fail(ErrorCode::invalid_argument, source.string() + " is not a directory");
  }
  std::vector<std::pair<std::string, fs::path>> files;
  fs::recursive_directory_iterator it(source, fs::directory_options::none, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (hostile_segment(name)) return unsafe(path, "hostile file name");
    const auto status = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_symlink(status)) return unsafe(path, "symbolic links are not published");
    if (fs::is_directory(status)) {
      if (name == "__pycache__") it.disable_recursion_pending();
      continue;
    }
    if (!fs::is_regular_file(status)) return unsafe(path, "not a regular file");
    if (path.extension() == ".pyc") continue;
    files.emplace_back(fs::relative(path, source, ec).generic_string(), path);
    if (ec) break;
  }
  if (ec) return fail(ErrorCode::io, "cannot walk " + source.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

Result<PublishResult> publish_directory(const PublishRequest& request) {
  KH_TRY(validate_ref_name(request.branch));
  if (request.tag) KH_TRY(validate_ref_name(*request.tag));
  KH_TRY_ASSIGN(auto files, collect_source_files(request.source));
  if (files.empty())
    return fail(ErrorCode::invalid_argument, request.source.string() + " has no files to publish");

  const LocalStore store(request.root);
  KH_TRY(store.create_repo(request.repo));
  KH_TRY_ASSIGN(auto lock, RepoLock::acquire(store, request.repo));

  KH_TRY_ASSIGN(auto head, store.read_ref(request.repo, RefKind::branch, request.branch));
  KH_TRY_ASSIGN(auto existing_tag, request.tag
                                       ? store.read_ref(request.repo, RefKind::tag, *request.tag)
                                       : Result<std::optional<std::string>>(std::nullopt));

  Commit commit;
  commit.parent = head;
  commit.message =
      request.message.empty() ? "Publish " + request.source.filename().string() : request.message;
  commit.timestamp =
      request.timestamp.value_or(std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  for (const auto& [repo_path, path] : files) {
    KH_TRY_ASSIGN(auto stored, store.add_object(request.repo, path, repo_path));
    commit.files.emplace(repo_path, std::move(stored));
  }
  KH_TRY_ASSIGN(auto id, store.write_commit(request.repo, commit));
  if (existing_tag && *existing_tag != id) {
    return fail(ErrorCode::invalid_argument,
                "tag '" + *request.tag + "' already points to " + *existing_tag);
  }
  KH_TRY(store.set_ref(request.repo, RefKind::branch, request.branch, id));
  if (request.tag) KH_TRY(store.set_ref(request.repo, RefKind::tag, *request.tag, id));
  return PublishResult{id, head, files.size()};
}

Result<void> point_branch(const std::filesystem::path& root, const trust::RepoId& repo,
                          const std::string& branch, const std::string& commit) {
  LocalStore store(root);
  KH_TRY(validate_ref_name(branch));
  KH_TRY_ASSIGN(auto lock, RepoLock::acquire(store, repo));
  KH_TRY_ASSIGN(auto existing, store.read_commit(repo, commit));  // must be a commit of this repo
  return store.set_ref(repo, RefKind::branch, branch, existing.id);
}

}  // namespace kernelhub::hub::server
