// What a fetch asks of a repo: version N (the branch vN, whose moves the rollback guard
// watches) or a revision (a branch, tag or commit), exactly one of them. A Ref that exists is
// valid: the version is in range and the revision passes git's ref-name rules.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "kernelhub/util/result.hpp"

namespace kernelhub::fetch {

class Ref {
 public:
  static constexpr std::int64_t kMaxVersion = 1'000'000;

  // invalid_argument when n is negative or above kMaxVersion.
  static Result<Ref> version(std::int64_t n);
  // invalid_argument when the name breaks trust::validate_revision's rules.
  static Result<Ref> revision(std::string_view name);
  // Exactly one of the two, as flags and frames carry them (`what` names them in the error,
  // e.g. "--version or --revision").
  static Result<Ref> one_of(std::optional<std::int64_t> version,
                            std::optional<std::string> revision, std::string_view what);

  bool is_version() const { return std::holds_alternative<std::uint64_t>(value_); }
  // The version N, or nullopt for a revision.
  std::optional<std::uint64_t> version_number() const;
  // The revision, or nullopt for a version.
  std::optional<std::string> revision_name() const;
  // What the Hub's refs and the cache's refs/ call it: "v1" for a version, else the revision.
  std::string ref_name() const;
  // For messages, after the repo: "v1", or "@main" for a revision ("org/name v1").
  std::string describe() const;

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const Ref&) const = default;

 private:
  explicit Ref(std::variant<std::uint64_t, std::string> value) : value_(std::move(value)) {}
  std::variant<std::uint64_t, std::string> value_;
};

}  // namespace kernelhub::fetch
