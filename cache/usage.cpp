#include "kernelhub/cache/usage.hpp"

#include "cache_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <array>

#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache {
namespace {

Result<void> check_names(const VariantRef& ref) {
  if (!trust::is_git_object_id(ref.commit))
    return fail(ErrorCode::invalid_argument, "not a commit: '" + ref.commit + "'");
  KH_TRY(trust::validate_repo_path(ref.variant));
  if (ref.variant.find('/') != std::string::npos)
    return fail(ErrorCode::invalid_argument, "not a variant name: '" + ref.variant + "'");
  return ok();
}

}  // namespace

Result<void> record_use(const KernelCache& cache, const VariantRef& ref, WallClock::time_point when,
                        std::chrono::seconds resolution) {
  KH_TRY(check_names(ref));
  const auto path = cache.usage_marker_path(ref.repo, ref.commit, ref.variant);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      tree::mtime_of(st) + resolution > when && tree::mtime_of(st) <= when + resolution) {
    return ok();
  }
  KH_TRY(util::make_dirs(path.parent_path()));
  const UniqueFd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!fd) return util::errno_error(errno, "cannot record the use of a kernel", path);
  const auto since_epoch = when.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs);
  const timespec at{secs.count(), nanos.count()};
  const std::array<timespec, 2> times{at, at};  // access and modification
  if (::futimens(fd.get(), times.data()) != 0)
    return util::errno_error(errno, "cannot record the use of a kernel", path);
  return ok();
}

std::optional<WallClock::time_point> recorded_use(const KernelCache& cache, const VariantRef& ref) {
  if (!check_names(ref)) return std::nullopt;
  struct stat st {};
  const auto path = cache.usage_marker_path(ref.repo, ref.commit, ref.variant);
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return tree::mtime_of(st);
}

}  // namespace kernelhub::cache
