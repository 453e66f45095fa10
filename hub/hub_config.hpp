// Hub connection settings, read once from an Environment snapshot (never from getenv):
// endpoint, token, timeouts, offline mode, retry policy and response size caps.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "trust/environment.hpp"

namespace kernelhub::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, no trailing '/'
  std::optional<std::string> token;                 // sent as "Authorization: Bearer"
  // HEAD / API calls: connect timeout and stall timeout (HF_HUB_ETAG_TIMEOUT).
  std::chrono::milliseconds etag_timeout{10'000};
  // File bodies: connect timeout and "no byte for this long" (HF_HUB_DOWNLOAD_TIMEOUT).
  std::chrono::milliseconds download_timeout{10'000};
  bool offline = false;  // HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE
  int max_retries = 5;
  // Unit of every wait between retries: backoff is 1-2-4-8-8 units, and a server's
  // Retry-After / RateLimit of N seconds waits N units. KERNELHUB_RETRY_BASE_MS scales it
  // (tests use a few ms).
  std::chrono::milliseconds retry_base{1000};
  std::size_t max_api_body = 16u << 20;      // any API JSON response
  std::size_t max_metadata_body = 1u << 20;  // build/<variant>/metadata.json
  int max_parallel_downloads = 8;

  static HubConfig from(const trust::Environment& env);

  // Wait before retry number `attempt` (0-based): 1, 2, 4, 8, 8 units.
  std::chrono::milliseconds backoff(int attempt) const;
};

}  // namespace kernelhub::hub
