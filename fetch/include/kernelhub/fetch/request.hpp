// A fetch request as every room passes it on: the repo, its Ref, which variants, the platform
// to select for, and an optional kernels.lock pin. What a request must hold is checked where
// its parts are built (Ref, VariantChoice, Request::locked), not again by each room.
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <string>

#include "kernelhub/fetch/ref.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/variant/variant.hpp"

namespace kernelhub::fetch {

// Which variants of the commit: the one that best fits the platform, one named, or all.
class VariantChoice {
 public:
  VariantChoice() = default;  // best
  static VariantChoice all() { return {Kind::all, {}}; }
  // invalid_argument for an empty name or one with a control character or a '/'.
  static Result<VariantChoice> named(std::string name);
  // At most one of the two, as flags and frames carry them.
  static Result<VariantChoice> one_of(std::optional<std::string> name, bool all);

  bool is_best() const { return kind_ == Kind::best; }
  bool is_all() const { return kind_ == Kind::all; }
  // The named variant, or nullopt.
  std::optional<std::string> name() const;

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const VariantChoice&) const = default;

 private:
  enum class Kind { best, named, all };
  VariantChoice(Kind kind, std::string name) : kind_(kind), name_(std::move(name)) {}
  Kind kind_ = Kind::best;
  std::string name_;
};

// A kernels.lock entry's pin: its commit is the request's Ref; a kernel-status.toml redirect
// is refused (it would leave the lock); a legacy lock also gives each variant's
// git_lfs_concat hash (empty for the kernels format), checked against the listing before any
// download and against the cached blob names offline.
struct LockPin {
  std::map<std::string, std::string> variant_hashes;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const LockPin&) const = default;
};

struct Request {
  Request(trust::RepoId repo_id, Ref version_or_revision)
      : repo(std::move(repo_id)), ref(std::move(version_or_revision)) {}
  // A request pinned by a lock: `commit` must be a commit id (sha1 or sha256).
  static Result<Request> locked(trust::RepoId repo, std::string_view commit, LockPin pin);

  trust::RepoId repo;
  Ref ref;
  VariantChoice variants;
  variant::PlatformOverrides platform;  // flags that override detection
  // Exact platform to select for (the daemon: its client's); skips detect_platform.
  std::optional<variant::Platform> target_platform;

  const std::optional<LockPin>& lock() const { return lock_; }
  // "org/name v1", "org/name @main": for messages.
  std::string describe() const { return repo.str() + " " + ref.describe(); }

 private:
  std::optional<LockPin> lock_;
};

}  // namespace kernelhub::fetch
