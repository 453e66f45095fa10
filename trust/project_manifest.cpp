#include "kernelhub/trust/project_manifest.hpp"

#include <sstream>

#include <toml++/toml.h>

#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/toml_bounds.hpp"

namespace kernelhub::trust {
namespace {

// pyproject.toml files carry whole build configurations; 1 MiB is far above any real one.
constexpr util::TomlBounds kProjectToml{1u << 20, 16384};
constexpr std::size_t kMaxDependencies = 1024;

Unexpected invalid(const std::string& source, const std::string& why) {
  return fail(ErrorCode::invalid_argument, source + ": " + why);
}

Result<std::optional<std::string>> read_manifest_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<std::string>{};
  KH_TRY_ASSIGN(auto text, util::read_small_file(path, kProjectToml.max_bytes));
  return std::optional<std::string>(std::move(text));
}

// nullopt when the text has no (or an empty) dependency table.
Result<std::optional<std::vector<KernelDependency>>> parse_table(std::string_view toml_text,
                                                                 const std::string& source) {
  if (auto bounded = util::check_toml_shape(toml_text, kProjectToml, ErrorCode::invalid_argument);
      !bounded) {
    return invalid(source, bounded.error().message);
  }
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "invalid TOML: " << e.description() << " (line " << e.source().begin.line << ")";
    return invalid(source, msg.str());
  }
  const auto* table = root["tool"]["kernels"]["dependencies"].as_table();
  if (table == nullptr || table->empty()) return std::optional<std::vector<KernelDependency>>{};
  if (table->size() > kMaxDependencies) return invalid(source, "more than 1024 dependencies");
  std::vector<KernelDependency> out;
  for (const auto& [key, value] : *table) {
    const std::string name(key.str());
    auto repo = RepoId::parse(name);
    if (!repo) return invalid(source, "dependency '" + name + "': " + repo.error().message);
    const auto* version = value.as_integer();
    if (version == nullptr || version->get() < 0) {
      return invalid(
          source, "dependency '" + name + "' must be a non-negative integer version (branch v<N>)");
    }
    out.push_back(KernelDependency{*repo, static_cast<std::uint64_t>(version->get())});
  }
  return std::optional{std::move(out)};
}

}  // namespace

Result<std::vector<KernelDependency>> parse_project_dependencies(std::string_view toml_text,
                                                                 const std::string& source) {
  KH_TRY_ASSIGN(auto deps, parse_table(toml_text, source));
  if (!deps) {
    return invalid(source, "no [tool.kernels.dependencies] table with \"org/name\" = <version>");
  }
  return std::move(*deps);
}

Result<std::vector<KernelDependency>> read_project_dependencies(
    const std::filesystem::path& project_dir) {
  for (const auto name : {kPyprojectFile, kKernelhubManifestFile}) {
    const auto path = project_dir / name;
    KH_TRY_ASSIGN(auto text, read_manifest_file(path));
    if (!text) continue;
    // A pyproject.toml without the table is an ordinary Python project: try the next file.
    KH_TRY_ASSIGN(auto deps, parse_table(*text, path.string()));
    if (deps) return std::move(*deps);
  }
  return fail(ErrorCode::invalid_argument, "neither " + (project_dir / kPyprojectFile).string() +
                                               " nor " +
                                               (project_dir / kKernelhubManifestFile).string() +
                                               " declares [tool.kernels.dependencies]");
}

}  // namespace kernelhub::trust
