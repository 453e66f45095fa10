// How kernelhubd shares work between requests (daemon/fetch_service.cpp): requests whose
// repo and Ref are equal share the memo of the commit they resolve to; requests that also
// select alike share a warm manifest of that commit and, while it runs, one flight.
#pragma once

#include <compare>
#include <optional>
#include <string>

#include "kernelhub/fetch/request.hpp"

namespace kernelhub::fetch {

// What a hand-out of a resolved commit depends on besides the commit. A locked request
// refuses what an unlocked one accepts (a redirect, a variant whose hash differs), so it
// shares only with requests under the same lock.
struct Selection {
  VariantChoice variants;
  std::optional<variant::Platform> platform;
  std::optional<LockPin> lock;

  static Selection of(const Request& r) { return {r.variants, r.target_platform, r.lock()}; }
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const Selection&) const = default;
};

// The commit memo's key.
struct ResolveKey {
  trust::RepoId repo;
  Ref ref;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const ResolveKey&) const = default;
};

// A warm manifest's key: one commit, one selection.
struct ManifestKey {
  trust::RepoId repo;
  std::string commit;
  Selection selection;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const ManifestKey&) const = default;
};

// A flight's key: an offline flight never answers an online request, nor the reverse.
struct FlightKey {
  ResolveKey resolve;
  Selection selection;
  bool offline = false;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 takes the defaulted <=> for a 0
  auto operator<=>(const FlightKey&) const = default;
};

}  // namespace kernelhub::fetch
