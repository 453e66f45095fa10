#include "kernelhub/trust/metadata.hpp"

#include <nlohmann/json.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::trust {
namespace {

using nlohmann::json;

Unexpected malformed(std::string_view why) {
  return fail(ErrorCode::malformed_response, "metadata.json: " + std::string(why));
}

constexpr std::size_t kMaxVersionText = 64;

// A descriptive field: a string, or absent (any other type is ignored, as older generations
// and local library builds wrote them differently).
std::optional<std::string> lenient_string(const json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

Result<std::optional<std::string>> version_text(const json& doc) {
  const auto it = doc.find("version");
  if (it == doc.end()) return std::optional<std::string>{};
  if (it->is_number_integer()) {
    const auto v = it->get<std::int64_t>();
    if (v < 0 || v > 1'000'000) return malformed("'version' is out of range");
    return std::optional<std::string>{std::to_string(v)};
  }
  if (it->is_number_unsigned()) return malformed("'version' is out of range");
  if (!it->is_string()) return std::optional<std::string>{};
  if (it->get_ref<const std::string&>().size() > kMaxVersionText)
    return malformed("'version' is longer than 64 characters");
  return std::optional<std::string>{it->get<std::string>()};
}

Result<std::optional<std::string>> optional_string(const json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::optional<std::string>{};
  if (!it->is_string()) return malformed(std::string("'") + key + "' must be a string");
  return std::optional<std::string>{it->get<std::string>()};
}

Result<void> parse_digest(const json& digest, KernelMetadata& out) {
  if (!digest.is_object()) return malformed("'digest' must be an object");
  const auto algorithm = digest.find("algorithm");
  if (algorithm == digest.end() || !algorithm->is_string()) {
    return malformed("'digest.algorithm' must be a string");
  }
  out.digest_algorithm = algorithm->get<std::string>();
  const auto files = digest.find("files");
  if (files == digest.end() || files->is_null()) return ok();
  if (!files->is_object()) return malformed("'digest.files' must be an object");
  for (const auto& [path, value] : files->items()) {
    KH_TRY(validate_repo_path(path));
    if (!value.is_string()) {
      return malformed("digest of '" + trust::sanitize_for_message(path) + "' must be a string");
    }
    out.file_digests.emplace(path, value.get<std::string>());
  }
  return ok();
}

}  // namespace

Result<KernelMetadata> parse_kernel_metadata(std::string_view text) {
  if (text.size() > kMaxMetadataBytes) {
    return fail(ErrorCode::too_large, "metadata.json is " + std::to_string(text.size()) +
                                          " bytes, more than the 1 MiB limit");
  }
  // Depth and value-count bounds too: digest.files is a list of unbounded length.
  auto parsed = util::parse_bounded_json(text, util::kMetadataJson);
  if (!parsed) {
    if (parsed.error().code == ErrorCode::too_large)
      return fail(ErrorCode::too_large, "metadata.json is " + parsed.error().message);
    return malformed(parsed.error().message);
  }
  const json doc = std::move(*parsed);
  if (!doc.is_object()) return malformed("top level must be an object");

  KernelMetadata out;
  KH_TRY_ASSIGN(out.id, optional_string(doc, "id"));
  out.name = lenient_string(doc, "name");
  KH_TRY_ASSIGN(out.version, version_text(doc));
  if (const auto it = doc.find("backend"); it != doc.end() && it->is_object()) {
    out.backend_type = lenient_string(*it, "type");
  }
  if (const auto it = doc.find("digest"); it != doc.end() && !it->is_null()) {
    KH_TRY(parse_digest(*it, out));
  }
  if (const auto it = doc.find("kernel-depends"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) return malformed("'kernel-depends' must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      KH_TRY_ASSIGN(auto dependency,
                    parse_kernel_dependency(
                        (*it)[i], "metadata.json: kernel-depends[" + std::to_string(i) + "]",
                        ErrorCode::malformed_response));
      out.kernel_depends.push_back(std::move(dependency));
    }
  }
  if (const auto it = doc.find("python-depends"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) return malformed("'python-depends' must be an array");
    for (const auto& dependency : *it) {
      if (!dependency.is_string() || dependency.get<std::string>().empty() ||
          dependency.get<std::string>().size() > 128) {
        return malformed("'python-depends' entries must be non-empty strings of at most 128 bytes");
      }
      out.python_depends.push_back(dependency.get<std::string>());
    }
  }
  return out;
}

bool excluded_from_digest(std::string_view relpath) {
  if (relpath == "metadata.json" || relpath == "metadata.json.sigstore") return true;
  if (relpath.size() >= 4 && relpath.substr(relpath.size() - 4) == ".pyc") return true;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = relpath.find('/', start);
    const auto segment =
        relpath.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (segment == "__pycache__") return true;
    if (end == std::string_view::npos) return false;
    start = end + 1;
  }
}

Result<std::map<std::string, std::string>> digest_sha256_hex(const KernelMetadata& metadata) {
  std::map<std::string, std::string> out;
  if (!metadata.has_digest()) return out;  // builds before 2026-06 carry no digest
  if (*metadata.digest_algorithm != "sha256") {
    return fail(ErrorCode::hash_mismatch,
                "metadata.json digest algorithm '" +
                    trust::sanitize_for_message(*metadata.digest_algorithm) +
                    "' is not supported (only sha256)");
  }
  for (const auto& [path, b64] : metadata.file_digests) {
    auto hex = base64_to_hex(b64);
    if (!hex || hex->size() != 64) {
      return fail(ErrorCode::malformed_response, "metadata.json digest of '" +
                                                     trust::sanitize_for_message(path) +
                                                     "' is not a base64 sha256");
    }
    out.emplace(path, std::move(*hex));
  }
  return out;
}

Result<void> verify_variant_digests(const KernelMetadata& metadata,
                                    const std::map<std::string, std::string>& actual) {
  KH_TRY_ASSIGN(const auto expected, digest_sha256_hex(metadata));
  if (!metadata.has_digest()) return ok();
  for (const auto& [path, expected_hex] : expected) {
    const auto it = actual.find(path);
    if (it == actual.end()) {
      return fail(ErrorCode::entry_not_found, "'" + trust::sanitize_for_message(path) +
                                                  "' is listed in metadata.json but missing");
    }
    if (expected_hex != it->second) {
      return fail(ErrorCode::hash_mismatch, "'" + trust::sanitize_for_message(path) +
                                                "' has sha256 " + it->second +
                                                ", metadata.json says " + expected_hex);
    }
  }
  for (const auto& [path, digest] : actual) {
    if (excluded_from_digest(path) || expected.contains(path)) continue;
    return fail(ErrorCode::hash_mismatch,
                "'" + trust::sanitize_for_message(path) + "' is not listed in metadata.json");
  }
  return ok();
}

}  // namespace kernelhub::trust
