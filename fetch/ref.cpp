#include "kernelhub/fetch/ref.hpp"

#include "kernelhub/trust/revision.hpp"

namespace kernelhub::fetch {

Result<Ref> Ref::version(std::int64_t n) {
  if (n < 0)
    return fail(ErrorCode::invalid_argument, "a version is >= 0, not " + std::to_string(n));
  if (n > kMaxVersion) {
    return fail(ErrorCode::invalid_argument, "version " + std::to_string(n) +
                                                 " is out of range (at most " +
                                                 std::to_string(kMaxVersion) + ")");
  }
  return Ref(static_cast<std::uint64_t>(n));
}

Result<Ref> Ref::revision(std::string_view name) {
  KH_TRY_ASSIGN(auto checked, trust::validate_revision(name));
  return Ref(std::move(checked));
}

Result<Ref> Ref::one_of(std::optional<std::int64_t> version, std::optional<std::string> revision,
                        std::string_view what) {
  if (version.has_value() == revision.has_value())
    return fail(ErrorCode::invalid_argument, "give exactly one of " + std::string(what));
  return version ? Ref::version(*version) : Ref::revision(*revision);
}

std::optional<std::uint64_t> Ref::version_number() const {
  if (const auto* n = std::get_if<std::uint64_t>(&value_)) return *n;
  return std::nullopt;
}

std::optional<std::string> Ref::revision_name() const {
  if (const auto* name = std::get_if<std::string>(&value_)) return *name;
  return std::nullopt;
}

std::string Ref::ref_name() const {
  if (const auto* n = std::get_if<std::uint64_t>(&value_)) return "v" + std::to_string(*n);
  return std::get<std::string>(value_);
}

std::string Ref::describe() const {
  if (is_version()) return ref_name();
  return "@" + std::get<std::string>(value_);
}

}  // namespace kernelhub::fetch
