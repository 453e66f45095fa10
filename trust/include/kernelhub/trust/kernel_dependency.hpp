// A kernel that a project or another kernel depends on: `org/name` at version N (branch
// vN) or at a revision. The one shape shared by pyproject's [tool.kernels.dependencies],
// metadata.json's `kernel-depends` and kernels.lock's `dependency` member, ordered the way
// the `kernels` library orders its lock entries.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxRevisionText = 256;

struct KernelDependency {
  RepoId repo;
  // A version (branch v<N>) or a revision (branch, tag or commit). The index order is the
  // lock's sort order: every version of a repo sorts before its revisions.
  std::variant<std::uint64_t, std::string> pin;

  bool has_version() const { return pin.index() == 0; }
  std::uint64_t version() const { return std::get<0>(pin); }
  const std::string& revision() const { return std::get<1>(pin); }
  // "org/name version 1" / "org/name revision main", for messages.
  std::string describe() const;

  bool operator==(const KernelDependency&) const = default;
  // `kernels` compares the repo id as one string ("a-b/x" < "a/x"), then the pin.
  std::strong_ordering operator<=>(const KernelDependency& other) const;
};

// The version a branch name stands for: "v1" -> 1 ("v" and decimal digits only, no sign, no
// overflow); nullopt for any other name.
std::optional<std::uint64_t> version_of_branch(std::string_view name);

// {"repo-id": "org/name", "version": N} or {"repo-id": ..., "revision": "..."}: exactly one
// of version and revision, no other member. `code` types the error; the message starts
// with `where` (e.g. "kernels.lock entry 3").
Result<KernelDependency> parse_kernel_dependency(const nlohmann::json& node, std::string_view where,
                                                 ErrorCode code);
// Members in the order `kernels` writes them: repo-id, then version or revision.
nlohmann::ordered_json to_json(const KernelDependency& dependency);

}  // namespace kernelhub::trust
