// A project's kernel dependencies, the table `kernels lock` reads:
//   [tool.kernels.dependencies]
//   "kernels-community/relu" = 1
// from PROJECT_DIR/pyproject.toml, or, for a project without Python packaging, from
// PROJECT_DIR/kernelhub.toml holding the same table.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::string_view kPyprojectFile = "pyproject.toml";
inline constexpr std::string_view kKernelhubManifestFile = "kernelhub.toml";

// The dependencies of one manifest text (`source` names it in errors): versions only, each
// a non-negative integer. invalid_argument for a missing or empty table or a bad entry.
Result<std::vector<KernelDependency>> parse_project_dependencies(std::string_view toml_text,
                                                                 const std::string& source);

// pyproject.toml when it has the table, else kernelhub.toml; invalid_argument naming both
// files when neither declares dependencies.
Result<std::vector<KernelDependency>> read_project_dependencies(
    const std::filesystem::path& project_dir);

}  // namespace kernelhub::trust
