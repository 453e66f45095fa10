// Shared by the proto tests: golden files and a recorded client/daemon exchange.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/proto/frame.hpp"

namespace kernelhub::proto::testing {

inline nlohmann::json load_golden(const std::string& name) {
  std::ifstream in(std::string(KH_SOURCE_DIR) + "/tests/proto/golden/" + name + ".json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// One fetch as it goes over the wire: hello both ways, fetch, progress, fetched, status
// both ways, and an error reply for an unknown request.
inline std::vector<nlohmann::json> recorded_exchange() {
  return {load_golden("hello_client"), load_golden("hello_daemon"), load_golden("fetch"),
          load_golden("progress"),     load_golden("fetched"),      load_golden("status_request"),
          load_golden("status_reply"), load_golden("error")};
}

// The exchange's bytes and the offset at which each frame ends.
struct Recording {
  std::string bytes;
  std::vector<std::size_t> frame_ends;
};

inline Recording record(const std::vector<nlohmann::json>& frames) {
  Recording r;
  for (const auto& frame : frames) {
    r.bytes += *encode_frame(frame);
    r.frame_ends.push_back(r.bytes.size());
  }
  return r;
}

// How many frames end at or before `prefix` bytes.
inline std::size_t complete_frames(const Recording& r, std::size_t prefix) {
  std::size_t n = 0;
  while (n < r.frame_ends.size() && r.frame_ends[n] <= prefix) ++n;
  return n;
}

}  // namespace kernelhub::proto::testing
