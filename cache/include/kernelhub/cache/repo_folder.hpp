// The one place that names a repo's cache folder: `kernels--{org}--{name}` (huggingface_hub's
// `{type}s--{org}--{name}`), and the legacy `models--` folders that older kernels used.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernelhub/trust/repo_id.hpp"

namespace kernelhub::cache {

enum class RepoKind { kernels, models };

// `kernels--org--name` (or `models--org--name`). A RepoId never contains "--" (see
// trust::RepoId::parse), so the name parses back to the same id.
std::string repo_folder_name(const trust::RepoId& repo, RepoKind kind = RepoKind::kernels);

// The repo a `kernels--org--name` folder name stands for; nullopt for anything else (other
// kinds, `.locks`, CACHEDIR.TAG, a name whose parts are not a valid repo id).
std::optional<trust::RepoId> parse_repo_folder_name(std::string_view folder);

}  // namespace kernelhub::cache
