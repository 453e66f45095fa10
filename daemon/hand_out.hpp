// Private to kh_daemon: a hand-out, the last step of every fetch kernelhubd serves. The
// fetch's receipts are judged by the policy in force now ([signatures]); its files are
// opened beneath the cache root without following links (their snapshot links checked unless
// a warm manifest's were already) and, for a fetch, passed as descriptors.
#pragma once

#include <vector>

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/manifest_memo.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::daemon {

struct HandOutOptions {
  bool with_fds = false;
  bool warm = false;  // a memoised manifest, whose snapshot links a hand-out checked
};

Result<HandOut> hand_out(const hub::FetchResult& fetched, int root_fd,
                         const trust::AdminPolicy& policy, AtomicCounters& counters,
                         const HandOutOptions& options);

}  // namespace kernelhub::daemon
