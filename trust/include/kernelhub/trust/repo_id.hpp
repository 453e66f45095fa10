// A Hub repository id `org/name`, validated the way huggingface_hub validates repo ids.
#pragma once

#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

struct RepoId {
  std::string org;
  std::string name;

  // `org/name`; each part matches [A-Za-z0-9_.-]{1,96}, starts and ends with [A-Za-z0-9_], no
  // "--" or "..", not ending in ".git".
  static Result<RepoId> parse(std::string_view text);
  std::string str() const { return org + "/" + name; }
  bool operator==(const RepoId&) const = default;
  auto operator<=>(const RepoId&) const = default;
};

}  // namespace kernelhub::trust
