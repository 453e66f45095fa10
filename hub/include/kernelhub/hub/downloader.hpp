// Parallel file downloads over one curl multi handle: several files at once, each streamed
// straight into its cache::BlobWriter (no intermediate copies), with Range resume after a
// mid-body failure, a stall timeout, a throughput floor and a per-file deadline, bounded
// retries with the Hub backoff and capped Retry-After waits, and redirects
// to LFS storage followed without leaking Authorization or leaving https.
#pragma once

#include <string>
#include <vector>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/progress.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

struct DownloadJob {
  std::string path;                     // repo-relative, for progress and messages
  std::string url;                      // the /resolve/ URL
  cache::BlobWriter* writer = nullptr;  // owned by the caller; finished on success
};

struct DownloadStats {
  int resumed = 0;    // Range requests answered with a usable 206
  int restarted = 0;  // server ignored Range or sent a bad Content-Range: started over
  int retried = 0;    // attempts after the first, over all files
};

class Downloader {
 public:
  explicit Downloader(HubConfig config) : config_(std::move(config)) {}

  // Downloads every job (up to HubConfig::max_parallel_downloads at a time) and calls
  // finish() on each writer. The first failure cancels the rest and is returned.
  // `progress` starts from `base` (files/bytes already accounted for by the caller).
  Result<void> run(const std::vector<DownloadJob>& jobs, const ProgressCallback& progress = {},
                   FetchProgress base = {});

  const DownloadStats& stats() const { return stats_; }

 private:
  HubConfig config_;
  DownloadStats stats_;
};

// "bytes 100-199/200" -> 100; nullopt if malformed.
std::optional<std::uint64_t> content_range_start(std::string_view header);

}  // namespace kernelhub::hub
