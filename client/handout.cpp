#include "client/handout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "trust/open_beneath.hpp"

namespace kernelhub::client {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

Result<void> check_handed_fd(int fd, std::uint64_t expected_size, std::string_view what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return fail(ErrorCode::io, "fstat " + std::string(what) + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return fail(ErrorCode::unsafe_path, std::string(what) + " is not a regular file");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDONLY) {
    return fail(ErrorCode::unsafe_path, std::string(what) + " was not handed out read-only");
  }
  if (static_cast<std::uint64_t>(st.st_size) != expected_size) {
    return fail(ErrorCode::size_mismatch, std::string(what) + " has " + std::to_string(st.st_size) +
                                              " bytes, the manifest says " +
                                              std::to_string(expected_size));
  }
  return ok();
}

Result<std::vector<HandedFile>> open_fetched_files(const cache::KernelCache& cache,
                                                   const hub::FetchResult& result) {
  const auto blobs = cache.blobs_dir(result.repo);
  const UniqueFd blobs_fd(::open(blobs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!blobs_fd)
    return fail(ErrorCode::io, "cannot open " + blobs.string() + ": " + errno_text(errno));

  std::vector<HandedFile> files;
  files.reserve(result.files.size());
  for (const auto& file : result.files) {
    std::error_code ec;
    const auto link = result.snapshot_path / file.path;
    const auto target = std::filesystem::read_symlink(link, ec);
    if (ec)
      return fail(ErrorCode::io,
                  "cannot read snapshot link " + link.string() + ": " + ec.message());
    const auto blob = target.filename().string();
    // The snapshot and the verified manifest must name the same blob.
    if (!file.etag.empty() && blob != file.etag) {
      return fail(ErrorCode::unsafe_path,
                  link.string() + " points at " + blob + ", expected " + file.etag);
    }
    // The blob is a single file name (filename() of the link): opened beneath blobs/.
    auto fd = open_beneath(blobs_fd.get(), blob);
    if (!fd) return fail(fd.error());
    KH_TRY(check_handed_fd(fd->get(), file.size, file.path));
    files.push_back(HandedFile{file.path, file.size, file.sha256, std::move(*fd)});
  }
  return files;
}

}  // namespace kernelhub::client
