// kernelhubd's warm path. What a flight served (the manifest and receipts of one commit for
// one selection) is kept, and what a (repo, Ref) resolved to is kept for the resolve TTL; a
// request that finds both is answered from the cache without asking the Hub
// (fetch_service.cpp).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/fetch/flight_key.hpp"
#include "kernelhub/hub/fetcher.hpp"

namespace kernelhub::daemon {

class ManifestMemo {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `now`: the clock the TTL is read on (tests step their own).
  explicit ManifestMemo(
      std::chrono::seconds resolve_ttl, Clock now = [] { return std::chrono::steady_clock::now(); })
      : resolve_ttl_(resolve_ttl), now_(std::move(now)) {}

  // The manifest for what `resolve_key` resolved to within its TTL, under `selection`; null
  // when either is not known (or the resolution expired).
  std::shared_ptr<const hub::FetchResult> warm(const fetch::ResolveKey& resolve_key,
                                               const fetch::Selection& selection);
  // What the flight of `key` served; it is kept as served from the cache, without the notes
  // of that flight (a cache fallback, a refused move, signature warnings: a hand-out judges
  // the receipts again).
  void remember(const fetch::FlightKey& key, const hub::FetchResult& result);
  // A manifest no longer matched the cache, or the trusted root changed: everything goes.
  void forget_all();

 private:
  struct Resolved {
    std::string commit;
    std::chrono::steady_clock::time_point expires;
  };
  std::chrono::seconds resolve_ttl_;
  Clock now_;
  std::mutex mutex_;
  std::map<fetch::ResolveKey, Resolved> resolved_;
  std::map<fetch::ManifestKey, std::shared_ptr<const hub::FetchResult>> manifests_;
};

}  // namespace kernelhub::daemon
