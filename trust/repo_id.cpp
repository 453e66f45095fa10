#include "kernelhub/trust/repo_id.hpp"

#include <algorithm>
#include <cctype>

#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::trust {
namespace {

bool word_char(unsigned char c) { return std::isalnum(c) != 0 || c == '_'; }

bool valid_part(std::string_view part) {
  if (part.empty() || part.size() > 96) return false;
  const bool chars_ok = std::all_of(part.begin(), part.end(), [](unsigned char c) {
    return word_char(c) || c == '-' || c == '.';
  });
  if (!chars_ok) return false;
  // huggingface_hub's \b...\b: a part starts and ends with a letter, digit or '_', so "."
  // (a dot segment in every URL the id goes into) is no repo id.
  if (!word_char(part.front()) || !word_char(part.back())) return false;
  if (part.find("--") != std::string_view::npos || part.find("..") != std::string_view::npos)
    return false;
  return !(part.size() >= 4 && part.substr(part.size() - 4) == ".git");
}

}  // namespace

Result<RepoId> RepoId::parse(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos || text.find('/', slash + 1) != std::string_view::npos) {
    return fail(ErrorCode::invalid_argument, "repository id '" + trust::sanitize_for_message(text) +
                                                 "' must have the form ORG/NAME");
  }
  RepoId id{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
  if (!valid_part(id.org) || !valid_part(id.name)) {
    return fail(ErrorCode::invalid_argument, "repository id '" + trust::sanitize_for_message(text) +
                                                 "' is not valid: use letters, digits, '_', '-' "
                                                 "and '.', at most 96 each, starting and ending "
                                                 "with a letter, digit or '_', no '--' or '..'");
  }
  return id;
}

}  // namespace kernelhub::trust
