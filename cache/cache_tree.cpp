#include "cache_tree.hpp"

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::cache::tree {

namespace fs = std::filesystem;

bool is_blob_name(std::string_view name) {
  return trust::is_lower_hex(name, 64) || trust::is_lower_hex(name, 40);
}

WallClock::time_point mtime_of(const struct stat& st) {
  return WallClock::time_point(std::chrono::duration_cast<WallClock::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

WallClock::time_point mtime_of(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {};
  return mtime_of(st);
}

std::set<std::string> linked_blobs(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_symlink(ec)) continue;
    const fs::path target = fs::read_symlink(it->path(), ec);
    if (!ec && target.parent_path().filename() == "blobs") out.insert(target.filename().string());
    ec.clear();
  }
  return out;
}

std::optional<std::string> read_ref_file(const fs::path& path) {
  auto read = util::read_small_file(path, 63);
  if (!read) return std::nullopt;
  std::string text = std::move(*read);
  // Other writers may add a newline; huggingface_hub itself does not.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (!trust::is_lower_hex(text, 40)) return std::nullopt;
  return text;
}

}  // namespace kernelhub::cache::tree
