#include "transparency_log.hpp"

#include <bit>
#include <vector>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::trust::sigstore {
namespace {

constexpr std::size_t kSha256Bytes = 32;

Unexpected log_error(std::string_view check, std::string message) {
  return fail(ErrorCode::signature_invalid, std::string(check) + ": " + std::move(message));
}

std::string sha256(std::string_view a, std::string_view b = {}, std::string_view c = {}) {
  Sha256 hasher;
  hasher.update(a);
  hasher.update(b);
  hasher.update(c);
  const std::vector<unsigned char> out = hasher.final_bytes();
  return {reinterpret_cast<const char*>(out.data()), out.size()};
}

std::string hash_children(std::string_view left, std::string_view right) {
  return sha256(std::string_view("\x01", 1), left, right);
}

const LogKey* entry_log(const TlogEntry& entry, std::span<const LogKey> logs) {
  return find_log_key(logs, entry.log_id);
}

}  // namespace

Result<void> verify_inclusion_proof(const TlogEntry& entry) {
  constexpr std::string_view kCheck = "inclusion proof";
  const InclusionProof& proof = entry.proof;
  if (proof.tree_size <= 0 || proof.log_index < 0 || proof.log_index >= proof.tree_size) {
    return log_error(kCheck, "log index " + std::to_string(proof.log_index) +
                                 " is outside a tree of size " + std::to_string(proof.tree_size));
  }
  // The path splits where the paths to `index` and to the last leaf diverge: `inner`
  // hashes below that point, then `border` hashes along the right border (RFC 9162 §2.1.3.2).
  const auto index = static_cast<std::uint64_t>(proof.log_index);
  const auto last = static_cast<std::uint64_t>(proof.tree_size - 1);
  const auto inner = static_cast<std::size_t>(std::bit_width(index ^ last));
  const auto border = static_cast<std::size_t>(std::popcount(index >> inner));
  if (proof.hashes.size() != inner + border) {
    return log_error(kCheck, "expected " + std::to_string(inner + border) + " hashes, found " +
                                 std::to_string(proof.hashes.size()));
  }
  for (const std::string& hash : proof.hashes) {
    if (hash.size() != kSha256Bytes) return log_error(kCheck, "a hash is not SHA-256");
  }
  std::string node = sha256(std::string_view("\0", 1), entry.canonicalized_body);
  for (std::size_t i = 0; i < inner; ++i) {
    node = ((index >> i) & 1U) == 0 ? hash_children(node, proof.hashes[i])
                                    : hash_children(proof.hashes[i], node);
  }
  for (std::size_t i = inner; i < proof.hashes.size(); ++i) {
    node = hash_children(proof.hashes[i], node);
  }
  if (node != proof.root_hash) {
    return log_error(kCheck, "the audit path does not lead to the root hash");
  }
  return {};
}

Result<void> verify_checkpoint(const TlogEntry& entry, std::span<const LogKey> logs) {
  constexpr std::string_view kCheck = "checkpoint";
  const std::string_view text = entry.proof.checkpoint;
  // A signed note: the text, one blank line, then "— <name> <base64(hint || signature)>\n"
  // lines. The signed bytes are the text up to and including its last newline.
  const std::size_t separator = text.find("\n\n");
  if (separator == std::string_view::npos ||
      text.find("\n\n", separator + 1) != std::string_view::npos) {
    return log_error(kCheck, "not a signed note (needs exactly one blank line)");
  }
  const std::string_view note = text.substr(0, separator + 1);
  std::string_view signatures = text.substr(separator + 2);
  if (signatures.empty() || signatures.back() != '\n') {
    return log_error(kCheck, "the signature block must end with a newline");
  }
  const LogKey* log = entry_log(entry, logs);
  if (log == nullptr) return log_error(kCheck, "the entry's log is not in the trusted root");
  constexpr std::string_view kDash = "\xE2\x80\x94 ";  // U+2014 and a space
  bool signed_by_log = false;
  while (!signatures.empty()) {
    const std::size_t end = signatures.find('\n');
    std::string_view line = signatures.substr(0, end);
    signatures.remove_prefix(end + 1);
    if (!line.starts_with(kDash)) return log_error(kCheck, "malformed signature line");
    line.remove_prefix(kDash.size());
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0) {
      return log_error(kCheck, "malformed signature line");
    }
    auto blob = from_base64(line.substr(space + 1));
    if (!blob || blob->size() < 5) return log_error(kCheck, "malformed signature");
    const std::string_view hint(reinterpret_cast<const char*>(blob->data()), 4);
    if (entry.log_id.size() < 4 || hint != std::string_view(entry.log_id).substr(0, 4)) continue;
    const std::string_view signature(reinterpret_cast<const char*>(blob->data()) + 4,
                                     blob->size() - 4);
    if (!verify_signature(log->key.get(), log->algorithm, note, signature)) {
      return log_error(kCheck, "the log's signature does not verify");
    }
    signed_by_log = true;
    break;
  }
  if (!signed_by_log) return log_error(kCheck, "no signature by the entry's log");
  // The note's body: origin, tree size, base64 root hash, optional extension lines.
  std::vector<std::string_view> lines;
  for (std::string_view rest = note; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    lines.push_back(rest.substr(0, end));
    rest.remove_prefix(end + 1);
  }
  if (lines.size() < 3 || lines[0].empty()) return log_error(kCheck, "too few lines");
  if (lines[1] != std::to_string(entry.proof.tree_size)) {
    return log_error(kCheck, "its tree size differs from the inclusion proof's");
  }
  auto root = from_base64(lines[2]);
  if (!root || std::string_view(reinterpret_cast<const char*>(root->data()), root->size()) !=
                   entry.proof.root_hash) {
    return log_error(kCheck, "its root hash differs from the inclusion proof's");
  }
  return {};
}

Result<void> verify_inclusion_promise(const TlogEntry& entry, std::span<const LogKey> logs) {
  constexpr std::string_view kCheck = "inclusion promise (SET)";
  if (!entry.signed_entry_timestamp || !entry.integrated_time) {
    return log_error(kCheck, "missing");
  }
  const LogKey* log = entry_log(entry, logs);
  if (log == nullptr) return log_error(kCheck, "the entry's log is not in the trusted root");
  // RFC 8785 of this object: keys sorted, no whitespace; base64 and hex need no escaping.
  const auto* body = reinterpret_cast<const unsigned char*>(entry.canonicalized_body.data());
  const auto* log_id = reinterpret_cast<const unsigned char*>(entry.log_id.data());
  const std::string payload = R"({"body":")" + to_base64({body, entry.canonicalized_body.size()}) +
                              R"(","integratedTime":)" + std::to_string(*entry.integrated_time) +
                              R"(,"logID":")" + util::to_hex({log_id, entry.log_id.size()}) +
                              R"(","logIndex":)" + std::to_string(entry.log_index) + "}";
  if (!verify_signature(log->key.get(), log->algorithm, payload, *entry.signed_entry_timestamp)) {
    return log_error(kCheck, "the log's signature does not verify");
  }
  return {};
}

}  // namespace kernelhub::trust::sigstore
