#include "loader/variant_metadata.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "trust/digest.hpp"
#include "trust/metadata.hpp"
#include "trust/safe_path.hpp"

namespace kernelhub::loader::detail {
namespace {

using nlohmann::json;

Unexpected malformed(const std::string& why) {
  return fail(ErrorCode::malformed_response, "metadata.json: " + why);
}

std::optional<std::string> string_field(const json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

Result<std::map<std::string, std::string>> parse_digest(const json& digest) {
  if (!digest.is_object()) return malformed("'digest' must be an object");
  const auto algorithm = string_field(digest, "algorithm");
  if (algorithm != "sha256") {
    return fail(ErrorCode::hash_mismatch, "metadata.json digest algorithm '" +
                                              trust::sanitize_for_message(algorithm.value_or("")) +
                                              "' is not supported (only sha256)");
  }
  std::map<std::string, std::string> out;
  const auto files = digest.find("files");
  if (files == digest.end() || files->is_null()) return out;
  if (!files->is_object()) return malformed("'digest.files' must be an object");
  for (const auto& [path, value] : files->items()) {
    auto safe = trust::validate_repo_path(path);
    KH_TRY(safe);
    auto hex = value.is_string() ? trust::base64_to_hex(value.get<std::string>())
                                 : Result<std::string>(fail(ErrorCode::malformed_response, ""));
    if (!hex || hex->size() != 64) {
      return malformed("digest of '" + trust::sanitize_for_message(path) +
                       "' is not a base64 sha256");
    }
    out.emplace(path, std::move(*hex));
  }
  return out;
}

}  // namespace

Result<VariantMetadata> parse_variant_metadata(std::string_view text) {
  if (text.size() > trust::kMaxMetadataBytes) {
    return fail(ErrorCode::too_large, "metadata.json is larger than 1 MiB");
  }
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return malformed("not a JSON object");
  VariantMetadata out;
  out.fields.id = string_field(doc, "id");
  out.fields.name = string_field(doc, "name");
  if (const auto it = doc.find("version"); it != doc.end()) {
    if (it->is_number_integer()) out.fields.version = std::to_string(it->get<std::int64_t>());
    if (it->is_string()) out.fields.version = it->get<std::string>();
  }
  if (const auto it = doc.find("digest"); it != doc.end() && !it->is_null()) {
    auto digest = parse_digest(*it);
    KH_TRY(digest);
    out.sha256_hex = std::move(*digest);
  }
  return out;
}

Result<std::string> read_small_fd(int fd, std::size_t limit, std::string_view what) {
  std::string text;
  char buffer[1 << 14];
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return fail(ErrorCode::io, "cannot read " + std::string(what) + ": " + std::strerror(errno));
    }
    if (n == 0) return text;
    if (text.size() + static_cast<std::size_t>(n) > limit) {
      return fail(ErrorCode::too_large,
                  std::string(what) + " is larger than " + std::to_string(limit) + " bytes");
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace kernelhub::loader::detail
