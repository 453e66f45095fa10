#include "kernelhub/fetch/request.hpp"

#include "kernelhub/trust/lockfile.hpp"

namespace kernelhub::fetch {

Result<VariantChoice> VariantChoice::named(std::string name) {
  const bool bad_char = name.find_first_of(std::string_view("\0\n\r\t/", 5)) != std::string::npos;
  if (name.empty() || bad_char)
    return fail(ErrorCode::invalid_argument, "'" + name + "' is not a variant name");
  return VariantChoice(Kind::named, std::move(name));
}

Result<VariantChoice> VariantChoice::one_of(std::optional<std::string> name, bool all) {
  if (name && all) {
    return fail(ErrorCode::invalid_argument, "give either a variant or all variants, not both");
  }
  if (name) return named(std::move(*name));
  return all ? VariantChoice::all() : VariantChoice();
}

std::optional<std::string> VariantChoice::name() const {
  if (kind_ != Kind::named) return std::nullopt;
  return name_;
}

Result<Request> Request::locked(trust::RepoId repo, std::string_view commit, LockPin pin) {
  if (!trust::is_git_object_id(commit)) {
    return fail(ErrorCode::invalid_argument,
                "a locked request names its commit, not '" + std::string(commit) + "'");
  }
  KH_TRY_ASSIGN(auto ref, Ref::revision(commit));
  Request request(std::move(repo), std::move(ref));
  request.lock_ = std::move(pin);
  return request;
}

}  // namespace kernelhub::fetch
