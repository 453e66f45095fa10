// libFuzzer harness: Hub API bodies (tree, refs, commits, revision) through the parsers the fetcher
// uses. The first byte picks the parser (and, for trees, the listed folder). Properties: no
// crash; what is accepted satisfies what the parsers promise (safe paths inside the listed
// folder, hex ids of the right length, consistent sizes).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/safe_path.hpp"

using namespace kernelhub;

namespace {

void check_tree(std::string_view body, std::string_view under) {
  auto tree = hub::parse_tree_json(body, under);
  if (!tree) return;
  for (const auto& entry : *tree) {
    if (!trust::validate_repo_path(entry.path)) __builtin_trap();
    if (!under.empty() && !entry.path.starts_with(std::string(under) + "/")) __builtin_trap();
    if (entry.is_file && !trust::is_lower_hex(entry.oid, 40)) __builtin_trap();
    if (entry.lfs_sha256 && !trust::is_lower_hex(*entry.lfs_sha256, 64)) __builtin_trap();
  }
}

void check_refs(std::string_view body) {
  auto refs = hub::parse_refs_json(body);
  if (!refs) return;
  for (const auto* list : {&refs->branches, &refs->tags}) {
    for (const auto& ref : *list) {
      if (!hub::is_commit_sha(ref.target_commit)) __builtin_trap();
    }
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      check_tree(body, "");
      break;
    case 1:
      check_tree(body, "build");
      break;
    case 2:
      check_refs(body);
      break;
    case 3:
      if (auto ids = hub::parse_commits_json(body)) {
        for (const auto& id : *ids) {
          if (!hub::is_commit_sha(id)) __builtin_trap();
        }
      }
      break;
    default:
      if (auto sha = hub::parse_revision_json(body); sha && !hub::is_commit_sha(*sha))
        __builtin_trap();
      break;
  }
  return 0;
}
