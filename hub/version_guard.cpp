// Rollback protection for version branches (TUF's rollback attack, applied to `vN`): once a
// commit is accepted for vN, the Hub may move vN only forward, to a commit whose history
// contains it. A move back or sideways is refused and the accepted commit keeps being served;
// an explicit revision or lockfile pin is never guarded. A commit that fails verification is
// never accepted: the state moves only after a successful publish.
#include <spdlog/spdlog.h>

#include "hub/fetcher.hpp"

namespace kernelhub::hub {

Result<std::string> Fetcher::guard_version_move(const FetchRequest& request,
                                                const std::string& offered) {
  if (!request.version || request.from_lock) return offered;
  const auto version = static_cast<std::uint64_t>(*request.version);
  auto state = cache_.read_version_state(request.repo, version);
  if (!state || state->accepted == offered) return offered;
  const std::string what = request.repo.str() + " v" + std::to_string(version);
  if (policy_.allow_version_rollback) {
    spdlog::warn("{} moved from {} to {}; following it (the admin policy allows rollbacks)", what,
                 state->accepted, offered);
    return offered;
  }
  auto forward = api_.history_contains(request.repo, offered, state->accepted, kMaxHistoryCommits);
  if (!forward) return fail(forward.error());
  if (*forward) return offered;

  refused_move_ = what + " moved to " + offered + ", which does not descend from " +
                  state->accepted + " (accepted before); serving " + state->accepted +
                  ". Pin a revision, or set allow_version_rollback in the admin policy, to "
                  "follow the move";
  spdlog::warn("{}", refused_move_);
  state->refused = offered;
  KH_TRY(cache_.write_version_state(request.repo, *state));
  return state->accepted;
}

Result<void> Fetcher::accept_version(const FetchRequest& request, const std::string& served) {
  if (!request.version || request.from_lock) return ok();
  const auto version = static_cast<std::uint64_t>(*request.version);
  auto state = cache_.read_version_state(request.repo, version);
  if (state && state->accepted == served) return ok();
  return cache_.write_version_state(request.repo,
                                    cache::VersionState{version, served, std::nullopt});
}

}  // namespace kernelhub::hub
