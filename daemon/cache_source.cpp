#include "kernelhub/daemon/cache_source.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/trust/revision.hpp"
#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::daemon {
namespace {

using hub::server::Located;
using hub::server::RepoTarget;

// Files outside build/<variant>/ (kernel-status.toml, README.md) are passed on when small.
constexpr std::size_t kMaxSmallFile = std::size_t{1024} * 1024;
constexpr std::size_t kChunk = std::size_t{256} * 1024;

constexpr const char* kHttpTrustNote =
    " (kernelhubd's local Hub sees no client environment and no peer credential: its admin "
    "policy alone decides trust over HTTP, so trust_remote_code and "
    "DIFFUSERS_TRUST_REMOTE_KERNELS do not count here; ask the admin to add the publisher to "
    "[trust] publishers, or fetch over the Unix socket with `kernelhub download`, where your "
    "opt-in applies)";

// "build/<variant>/<file...>" -> variant.
std::optional<std::string> variant_of(const std::string& path) {
  constexpr std::string_view kPrefix = "build/";
  if (path.rfind(kPrefix, 0) != 0) return std::nullopt;
  const auto end = path.find('/', kPrefix.size());
  if (end == std::string::npos || end == kPrefix.size()) return std::nullopt;
  return path.substr(kPrefix.size(), end - kPrefix.size());
}

// HEAD: the length, no body.
void head_only(httplib::Response& res, std::uint64_t size) {
  res.set_content_provider(size, "application/octet-stream",
                           [](std::size_t, std::size_t, httplib::DataSink&) { return false; });
}

}  // namespace

// One variant of a commit through the fetch service, as an HTTP client's (the admin policy's
// trust alone, no opt-in), with descriptors to serve from.
Result<HandOut> CacheSource::fetch_variant(const trust::RepoId& repo, const std::string& commit,
                                           const std::string& variant,
                                           const std::string& remote_addr) {
  KH_TRY_ASSIGN(auto ref, fetch::Ref::revision(commit));
  fetch::Request request(repo, std::move(ref));
  KH_TRY_ASSIGN(request.variants, fetch::VariantChoice::named(variant));
  ClientContext client;
  client.name = "http " + remote_addr;
  client.with_fds = true;
  return service_.fetch(request, client);
}

void CacheSource::register_on(httplib::Server& server) {
  hub::server::register_hub_routes(server, *this, {});
  http::register_error_handler(server);
}

Result<bool> CacheSource::trusted_publisher(const std::string& org) {
  return trust::decide_trust(*service_.policy(), org, {}).allowed;
}

Result<void> CacheSource::admit(const RepoTarget& target, const httplib::Request& req) {
  const auto decision = trust::decide_trust(*service_.policy(), target.repo.org, {});
  if (decision.allowed) return ok();
  counters_.trust_refused.fetch_add(1, std::memory_order_relaxed);
  // decide_trust's own text points at the client's variables, which cannot reach us.
  const std::string why = decision.code == ErrorCode::untrusted_publisher
                              ? "publisher '" + target.repo.org +
                                    "' is not trusted by this host's kernelhubd" + kHttpTrustNote
                              : decision.reason;
  spdlog::warn("refused {} for http {}: {}", target.repo.str(), req.remote_addr, why);
  return fail(decision.code, why);
}

// The revision and path are checked before anything is asked upstream: a '.' or '..' segment
// (cpp-httplib has decoded %2e and %2F already), a control character or an encoded separator
// is refused here with a 400 that echoes the request only. HubApi checks them again where it
// builds the URL (hub/api_url.cpp).
Result<Located> CacheSource::locate(const trust::RepoId& repo, const std::string& rest,
                                    bool need_path) {
  const auto slash = rest.find('/');
  Located where;
  where.revision = rest.substr(0, slash);
  if (slash != std::string::npos) where.path = rest.substr(slash + 1);
  if (auto rev = trust::validate_revision(where.revision); !rev) {
    return fail(ErrorCode::invalid_request,
                rev.error().message +
                    " (kernelhubd's local Hub passes on branch, tag and commit names only)");
  }
  if (!where.path.empty()) {
    // The client's path, not the Hub's listing: a bad request (400), not unsafe_path (the
    // integrity error a hostile listing gets, 502).
    if (auto safe = trust::validate_repo_path(where.path); !safe)
      return fail(ErrorCode::invalid_request, safe.error().message);
  } else if (need_path) {
    return fail(ErrorCode::entry_not_found, "no file named in " + rest);
  }
  KH_TRY_ASSIGN(where.commit, metadata_.commit_of(repo, where.revision));
  return where;
}

Result<std::optional<hub::TreeEntry>> CacheSource::find(const trust::RepoId& repo,
                                                        const std::string& commit,
                                                        const std::string& path) {
  auto entry = metadata_.file_entry(repo, commit, path);
  if (entry) return std::optional<hub::TreeEntry>{std::move(*entry)};
  if (entry.error().code == ErrorCode::entry_not_found) return std::optional<hub::TreeEntry>{};
  return fail(entry.error());
}

// HEAD answers from the listing; GET of build/<variant>/... from the verified cache, through
// the daemon's single-flight fetch; other small files are passed on, checked.
void CacheSource::serve_file(const httplib::Request& req, httplib::Response& res,
                             const RepoTarget& target, const Located& where) {
  http::take_ranges(req);  // whole files only (200): clients restart, not resume
  const auto reply_error = [&](const Error& error) {
    hub::server::send_source_error(*this, req, res, error);
  };
  auto entry = metadata_.file_entry(target.repo, where.commit, where.path);
  if (!entry) return reply_error(entry.error());
  res.set_header("X-Repo-Commit", where.commit);
  res.set_header("ETag", "\"" + entry->etag() + "\"");
  if (entry->is_lfs()) {
    res.set_header("X-Linked-Etag", "\"" + entry->etag() + "\"");
    res.set_header("X-Linked-Size", std::to_string(entry->size));
  }
  if (req.method == "HEAD") return head_only(res, entry->size);

  if (const auto variant = variant_of(where.path)) {
    auto out = fetch_variant(target.repo, where.commit, *variant, req.remote_addr);
    if (!out) return reply_error(out.error());
    const auto& files = out->manifest.files;
    for (std::size_t i = 0; i < files.size() && i < out->fds.size(); ++i) {
      const auto& file = files[i];
      if (file.path != entry->path) continue;
      auto fd = std::make_shared<UniqueFd>(std::move(out->fds[i]));
      res.set_content_provider(
          file.size, "application/octet-stream",
          [fd](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
            std::string buffer(std::min(length, kChunk), '\0');
            const auto n =
                ::pread(fd->get(), buffer.data(), buffer.size(), static_cast<off_t>(offset));
            if (n <= 0) return false;  // the connection is closed: never a short 200
            return sink.write(buffer.data(), static_cast<std::size_t>(n));
          });
      return;
    }
    return reply_error({ErrorCode::entry_not_found, entry->path + " is not part of the variant " +
                                                        *variant + " kernelhubd fetched"});
  }

  if (entry->is_lfs() || entry->size > kMaxSmallFile) {
    return reply_error({ErrorCode::invalid_request,
                        "kernelhubd's local Hub serves the files of build/<variant>/ and small "
                        "files (up to 1 MiB) only; " +
                            entry->path + " is neither"});
  }
  auto body = metadata_.small_file(target.repo, where.commit, entry->path, kMaxSmallFile);
  if (!body) return reply_error(body.error());
  if (!*body) {
    return reply_error(
        {ErrorCode::entry_not_found, entry->path + " does not exist in " + target.repo.str()});
  }
  if (trust::git_blob_sha1_hex(**body) != entry->oid) {
    return reply_error({ErrorCode::hash_mismatch,
                        entry->path + ": the upstream bytes do not match the listing's git oid " +
                            entry->oid + "; nothing served"});
  }
  res.set_content(**body, "application/octet-stream");
}

}  // namespace kernelhub::daemon
