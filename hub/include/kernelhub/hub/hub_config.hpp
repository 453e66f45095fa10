// Hub connection settings, read once from an Environment snapshot (never from getenv):
// endpoint, token, timeouts, offline mode, retry policy and response size caps.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kernelhub/util/environment.hpp"

namespace kernelhub::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, no trailing '/'
  std::optional<std::string> token;                 // sent as "Authorization: Bearer"
  // HEAD / API calls: connect timeout and stall timeout (HF_HUB_ETAG_TIMEOUT).
  std::chrono::milliseconds etag_timeout{10'000};
  // File bodies: connect timeout and "no byte for this long" (HF_HUB_DOWNLOAD_TIMEOUT).
  std::chrono::milliseconds download_timeout{10'000};
  bool offline = false;  // HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE
  // Slow retrieval (besides the stall watch above). A transfer that moves fewer than
  // min_bytes_per_second * min_speed_window bytes over any min_speed_window is too slow
  // (KERNELHUB_MIN_BYTES_PER_SECOND, KERNELHUB_MIN_SPEED_WINDOW; 0 bytes/s: no floor).
  std::uint64_t min_bytes_per_second = 1024;
  std::chrono::milliseconds min_speed_window{30'000};
  // One API call, all retries and waits included (KERNELHUB_API_DEADLINE).
  std::chrono::milliseconds api_deadline{120'000};
  // One file, all retries included: this plus the file's size at the throughput floor, so a
  // link that keeps above the floor never reaches it (KERNELHUB_DOWNLOAD_DEADLINE).
  std::chrono::milliseconds download_deadline{600'000};
  // Retry waits, in retry units (seconds unless KERNELHUB_RETRY_BASE_MS): a server asking
  // for a longer single wait (Retry-After / RateLimit), or waits of one request adding up
  // to more than the total, end the request at once with its error (rate_limited for 429)
  // (KERNELHUB_MAX_RETRY_WAIT, KERNELHUB_MAX_RETRY_WAIT_TOTAL).
  int max_retry_wait = 60;
  int max_retry_wait_total = 120;
  // CA bundle file (SSL_CERT_FILE, else REQUESTS_CA_BUNDLE, else CURL_CA_BUNDLE) and CA
  // directory (SSL_CERT_DIR); unset: libcurl's compiled-in bundle. Empty values are unset
  // (verification is never turned off).
  std::optional<std::string> ca_file;
  std::optional<std::string> ca_dir;
  int max_retries = 5;
  // Unit of every wait between retries: backoff is 1-2-4-8-8 units, and a server's
  // Retry-After / RateLimit of N seconds waits N units. KERNELHUB_RETRY_BASE_MS scales it
  // (tests use a few ms).
  std::chrono::milliseconds retry_base{1000};
  std::size_t max_api_body = 16u << 20;      // any API JSON response
  std::size_t max_metadata_body = 1u << 20;  // build/<variant>/metadata.json
  int max_parallel_downloads = 8;

  static HubConfig from(const util::Environment& env);

  // Wait before retry number `attempt` (0-based): 1, 2, 4, 8, 8 units.
  std::chrono::milliseconds backoff(int attempt) const;
  // Deadline for one file of `size` bytes (download_deadline + size at the floor).
  std::chrono::milliseconds file_deadline(std::uint64_t size) const;
};

}  // namespace kernelhub::hub
