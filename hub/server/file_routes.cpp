// The store's file downloads: /resolve/ (HEAD and GET, routed by hub_routes.cpp) and the LFS
// object URL that LFS files redirect to. Bodies stream from the object file, mapped read-only
// (pread into a buffer when mapping fails), through an httplib content provider in 1 MiB chunks.
// The server's hooks (serve_hooks.hpp) see each download before it is answered.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kernelhub/hub/server/server_context.hpp"
#include "kernelhub/util/strings.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "store_source.hpp"

namespace kernelhub::hub::server {
namespace {

constexpr std::size_t kChunk = 1 << 20;

struct BodyState {
  UniqueFd fd;
  std::uint64_t file_size = 0;
  std::vector<char> buffer;
  // The object mapped read-only: bodies go from the page cache to the socket with one copy
  // fewer than pread + send. Safe because store objects are immutable (written to a temp,
  // renamed into place, never truncated). Null when mapping failed.
  const char* map = nullptr;
  std::size_t map_size = 0;
  BodyState() = default;
  BodyState(const BodyState&) = delete;
  BodyState& operator=(const BodyState&) = delete;
  ~BodyState() {
    if (map) ::munmap(const_cast<char*>(map), map_size);
  }
};

struct ServedFile {
  std::filesystem::path object;
  std::uint64_t size = 0;
  std::string etag;       // unquoted
  std::string repo_path;  // what the hooks see
  std::string commit;     // X-Repo-Commit when non-empty
};

// Writes body bytes [offset, offset + length) (file bytes from `first` on), one chunk at most.
bool write_body(BodyState& s, std::uint64_t first, std::size_t offset, std::size_t length,
                httplib::DataSink& sink) {
  const std::uint64_t pos = first + offset;
  if (pos >= s.file_size) return false;
  const auto want =
      static_cast<std::size_t>(std::min<std::uint64_t>({length, kChunk, s.file_size - pos}));
  if (s.map) return sink.write(s.map + pos, want);
  ssize_t n;
  do {
    n = ::pread(s.fd.get(), s.buffer.data(), want, static_cast<off_t>(pos));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  return sink.write(s.buffer.data(), static_cast<std::size_t>(n));
}

// The single range of a Range request as [first, last]; nullopt when it cannot be satisfied.
// No range (or several: answered with everything) is the whole file.
std::optional<std::pair<std::uint64_t, std::uint64_t>> byte_range(const httplib::Ranges& ranges,
                                                                  std::uint64_t size) {
  std::uint64_t first = 0;
  std::uint64_t last = size == 0 ? 0 : size - 1;
  if (ranges.size() != 1) return std::pair{first, last};
  const auto [a, b] = ranges.front();
  if (a < 0) {  // suffix range: the last b bytes
    first = b >= static_cast<ssize_t>(size) ? 0 : size - static_cast<std::uint64_t>(b);
  } else {
    first = static_cast<std::uint64_t>(a);
    if (b >= 0) last = std::min<std::uint64_t>(last, static_cast<std::uint64_t>(b));
  }
  if (first >= size || (a < 0 && b == 0)) return std::nullopt;
  return std::pair{first, last};
}

void serve_file(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                const ServedFile& file) {
  if (ctx.hooks->before_file(req, res, {FileDownload::Stage::body, file.repo_path, file.size}))
    return;
  const httplib::Ranges ranges = http::take_ranges(req);
  const bool is_get = req.method == "GET";
  auto state = std::make_shared<BodyState>();
  state->fd = UniqueFd(::open(file.object.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!state->fd || ::fstat(state->fd.get(), &st) != 0 ||
      static_cast<std::uint64_t>(st.st_size) != file.size) {
    return http::send_error(res, 500, "InternalError",
                            "object for " + file.repo_path + " is missing or damaged");
  }
  state->file_size = file.size;

  if (!file.commit.empty()) res.set_header("X-Repo-Commit", file.commit);
  res.set_header("ETag", "\"" + file.etag + "\"");
  res.set_header("Accept-Ranges", "bytes");

  const auto range = byte_range(ranges, file.size);
  if (!range) {
    res.set_header("Content-Range", "bytes */" + std::to_string(file.size));
    return http::send_error(
        res, 416, "RangeNotSatisfiable",
        "range not satisfiable for a " + std::to_string(file.size) + "-byte file");
  }
  const auto [first, last] = *range;
  FileBody body{first, file.size == 0 ? 0 : last - first + 1, false, {}};
  res.status = 200;
  if (ranges.size() == 1) {
    res.status = 206;
    res.set_header("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) +
                                        "/" + std::to_string(file.size));
  }
  if (body.length == 0) {
    res.set_content("", "application/octet-stream");
    return;
  }
  if (is_get) {
    void* map = ::mmap(nullptr, file.size, PROT_READ, MAP_SHARED, state->fd.get(), 0);
    if (map != MAP_FAILED) {
      state->map = static_cast<const char*>(map);
      state->map_size = file.size;
    } else {
      state->buffer.resize(std::min<std::uint64_t>(body.length, kChunk));
    }
  }
  body.write = [state, first = body.first](std::size_t offset, std::size_t length,
                                           httplib::DataSink& sink) {
    return write_body(*state, first, offset, length, sink);
  };
  if (is_get) ctx.hooks->shape_body({FileDownload::Stage::body, file.repo_path, file.size}, body);
  if (body.chunked) {
    res.set_header("Transfer-Encoding", "chunked");
    res.set_chunked_content_provider(
        "application/octet-stream",
        [write = body.write](std::size_t offset, httplib::DataSink& sink) {
          return write(offset, kChunk, sink);
        });
    return;
  }
  res.set_content_provider(static_cast<std::size_t>(body.length), "application/octet-stream",
                           body.write);
}

void lfs_object(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string sha256 = req.matches[1];
  auto repo = trust::RepoId::parse(req.get_param_value("repo"));
  if (!repo)
    return http::send_error(res, 404, "RepoNotFound", "LFS object URL without a valid repo");
  const auto object = ctx.store.object_path(*repo, sha256);
  std::error_code ec;
  const auto size = std::filesystem::file_size(object, ec);
  if (ec)
    return http::send_error(res, 404, "EntryNotFound",
                            "no LFS object " + sha256 + " in " + repo->str());
  // Clients that follow same-host redirects (huggingface_hub >= 2) read the Hub metadata from
  // this response, so it repeats X-Repo-Commit once the commit really holds this object there.
  std::string commit = req.get_param_value("commit");
  const std::string path = req.get_param_value("path");
  if (!commit.empty()) {
    auto c = ctx.store.read_commit(*repo, commit);
    const auto it = c ? c->files.find(path) : decltype(c->files.end()){};
    if (!c || it == c->files.end() || it->second.sha256 != sha256) {
      return http::send_error(res, 404, "EntryNotFound",
                              "commit " + commit + " has no LFS object " + sha256 + " at " + path);
    }
  }
  serve_file(ctx, req, res, {object, size, sha256, path, commit});
}

}  // namespace

void serve_store_file(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                      const RepoTarget& target, const Located& where) {
  auto commit = ctx.store.read_commit(target.repo, where.commit);
  if (!commit) return send_source_error(*ctx.source, req, res, commit.error());
  const auto it = commit->files.find(where.path);
  if (it == commit->files.end()) {
    res.set_header("X-Repo-Commit", where.commit);  // clients record .no_exist/<commit>/<path>
    return send_source_error(
        *ctx.source, req, res,
        {ErrorCode::entry_not_found, where.path + " does not exist at revision " + where.revision +
                                         " of " + target.repo.str()});
  }
  const StoredFile& f = it->second;
  if (ctx.hooks->before_file(req, res, {FileDownload::Stage::resolve, where.path, f.size})) return;
  if (f.lfs) {
    res.status = 302;
    res.set_header("Location", ctx.base_url(req) + "/lfs-objects/" + f.sha256 +
                                   "?repo=" + util::url_encode(target.repo.str(), true) + "&path=" +
                                   util::url_encode(where.path, true) + "&commit=" + where.commit);
    res.set_header("X-Repo-Commit", where.commit);
    res.set_header("X-Linked-Etag", "\"" + f.sha256 + "\"");
    res.set_header("X-Linked-Size", std::to_string(f.size));
    res.set_header("ETag", "\"" + lfs_pointer_oid(f) + "\"");
    return;
  }
  serve_file(
      ctx, req, res,
      {ctx.store.object_path(target.repo, f.sha256), f.size, f.git_oid, where.path, where.commit});
}

void register_lfs_route(httplib::Server& server, ServerContext& ctx) {
  server.Get(
      R"(/lfs-objects/([0-9a-f]{64}))",
      [&ctx](const httplib::Request& req, httplib::Response& res) { lfs_object(ctx, req, res); });
}

}  // namespace kernelhub::hub::server
