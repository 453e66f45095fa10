// Rollback protection for version branches (TUF's rollback attack, applied to `vN`): once a
// commit is accepted for vN, the Hub may move vN only forward, to a commit whose history
// contains it. A move back or sideways is refused and the accepted commit keeps being served;
// an explicit revision or lockfile pin is never guarded. A commit that fails verification is
// never accepted: the state moves only after a successful publish.
#include <spdlog/spdlog.h>

#include "fetch_call.hpp"
#include "kernelhub/hub/fetcher.hpp"

namespace kernelhub::hub {

Result<std::string> FetchCall::guard_version_move(const fetch::Request& request,
                                                  const std::string& offered) {
  if (!request.ref.is_version() || request.lock()) return offered;
  const auto version = *request.ref.version_number();
  auto state = f_.cache_.read_version_state(request.repo, version);
  if (!state || state->accepted == offered) return offered;
  const std::string what = request.repo.str() + " v" + std::to_string(version);
  if (f_.policy_.allow_version_rollback) {
    spdlog::warn("{} moved from {} to {}; following it (the admin policy allows rollbacks)", what,
                 state->accepted, offered);
    return offered;
  }
  KH_TRY_ASSIGN(const bool forward, f_.api_.history_contains(request.repo, offered, state->accepted,
                                                             kMaxHistoryCommits));
  if (forward) return offered;

  refused_ = RefusedMove{what, offered, state->accepted};
  // Said once the fetch ends: what is served (served_refusal), or why nothing is.
  spdlog::debug("{} moved to {}, which does not descend from {}: refused", what, offered,
                state->accepted);
  state->refused = offered;
  KH_TRY(f_.cache_.write_version_state(request.repo, *state));
  return state->accepted;
}

std::string FetchCall::served_refusal() const {
  if (!refused_) return {};
  const auto& r = *refused_;
  return r.what + " moved to " + r.offered + ", which does not descend from " + r.accepted +
         " (accepted before); serving " + r.accepted +
         ". Pin a revision, or set allow_version_rollback in the admin policy, to follow the move";
}

Error FetchCall::unavailable_after_refusal(const Error& why) const {
  const auto& r = *refused_;
  return {why.code, r.what + " moved to " + r.offered + ", which does not descend from " +
                        r.accepted + " (accepted before): the move is refused, and " + r.accepted +
                        " is not available (not complete in the cache, and the Hub cannot serve "
                        "it: " +
                        std::string(to_string(why.code)) + ": " + why.message +
                        "). Pin a revision (--revision " + r.offered +
                        ") to use the new commit, or set allow_version_rollback in the admin "
                        "policy to follow the move"};
}

Result<void> FetchCall::accept_version(const fetch::Request& request, const std::string& served) {
  if (!request.ref.is_version() || request.lock()) return ok();
  const auto version = *request.ref.version_number();
  auto state = f_.cache_.read_version_state(request.repo, version);
  if (state && state->accepted == served) return ok();
  return f_.cache_.write_version_state(request.repo,
                                       cache::VersionState{version, served, std::nullopt});
}

}  // namespace kernelhub::hub
