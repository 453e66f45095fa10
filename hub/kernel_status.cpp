#include "kernelhub/hub/kernel_status.hpp"

#include <toml++/toml.h>

#include "kernelhub/util/toml_bounds.hpp"

namespace kernelhub::hub {

Result<std::optional<KernelRedirect>> parse_kernel_status(std::string_view toml_text) {
  if (auto bounded =
          util::check_toml_shape(toml_text, util::kKernelStatusToml, ErrorCode::malformed_response);
      !bounded) {
    return fail(bounded.error().code, "kernel-status.toml: " + bounded.error().message);
  }
  toml::table table;
  try {
    table = toml::parse(toml_text);
  } catch (const toml::parse_error& e) {
    return fail(
        ErrorCode::malformed_response,
        std::string("kernel-status.toml is not valid TOML: ") + std::string(e.description()));
  }
  const auto kind = table["kind"].value<std::string>();
  if (!kind) return fail(ErrorCode::malformed_response, "kernel-status.toml has no 'kind'");
  if (*kind != "redirect") {
    return fail(ErrorCode::malformed_response,
                "kernel-status.toml has an unknown kind '" + *kind + "'");
  }
  const auto destination = table["destination"].value<std::string>();
  if (!destination)
    return fail(ErrorCode::malformed_response, "kernel-status.toml redirect has no 'destination'");
  auto repo = trust::RepoId::parse(*destination);
  if (!repo)
    return fail(ErrorCode::malformed_response,
                "kernel-status.toml destination: " + repo.error().message);
  KernelRedirect redirect{*repo, table["revision"].value_or(std::string("main"))};
  if (redirect.revision.empty()) redirect.revision = "main";
  return std::optional<KernelRedirect>(std::move(redirect));
}

}  // namespace kernelhub::hub
