// Stall detection shared by API calls and file downloads: a transfer is aborted when no
// byte has moved for `stall` (curl's LOW_SPEED_TIME only has whole-second resolution).
#pragma once

#include <curl/curl.h>

#include <chrono>

namespace kernelhub::hub {

struct TransferWatch {
  std::chrono::milliseconds stall{10'000};
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
  curl_off_t last_bytes = -1;
  bool stalled = false;

  void reset() {
    last_progress = std::chrono::steady_clock::now();
    last_bytes = -1;
    stalled = false;
  }

  // CURLOPT_XFERINFOFUNCTION with CURLOPT_XFERINFODATA = this; non-zero aborts.
  static int callback(void* self, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                      curl_off_t ulnow) {
    (void)dltotal;
    (void)ultotal;
    auto& watch = *static_cast<TransferWatch*>(self);
    const auto now = std::chrono::steady_clock::now();
    const curl_off_t moved = dlnow + ulnow;
    if (moved != watch.last_bytes) {
      watch.last_bytes = moved;
      watch.last_progress = now;
      return 0;
    }
    if (now - watch.last_progress > watch.stall) {
      watch.stalled = true;
      return 1;
    }
    return 0;
  }

  void install(CURL* easy) {
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &TransferWatch::callback);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, this);
  }
};

}  // namespace kernelhub::hub
