// kernels.lock in both formats: the test vector of the legacy hash, byte-exact writing in
// the `kernels` order, and strict reading that names the bad entry.
#include <catch2/catch.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/trust/project_manifest.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;

namespace {

const std::string kA(40, 'a');
const std::string kB(40, 'b');

RepoId repo(std::string_view text) { return *RepoId::parse(text); }

LockEntry kernels_entry(std::string_view name, std::variant<std::uint64_t, std::string> pin,
                        const std::string& commit) {
  return LockEntry{repo(name), KernelDependency{repo(name), std::move(pin)}, commit, {}};
}

std::string one_entry(const std::string& dependency, const std::string& lock) {
  return R"([{"dependency":)" + dependency + R"(,"lock":)" + lock + "}]";
}

}  // namespace

TEST_CASE("git_lfs_concat reproduces the research test vector", "[lockfile]") {
  const std::string init = "from ._ops import ops\n";
  const std::string ops = "import torch\nops = torch.ops._relu_cuda_abc1234\n";
  std::string so =
      "\x7f"
      "ELF";
  so.append(60, '\0');
  // The object ids themselves are what git and the Hub compute for these bytes.
  REQUIRE(git_blob_sha1_hex(init) == "1cec5723464b586acbda5ab039a6248d38255033");
  REQUIRE(git_blob_sha1_hex(ops) == "487adeb9a88f2fa3c2df3fe262c178bd3c8aa8bb");
  REQUIRE(sha256_hex(so) == "cc9d6fac1f314ccbd3003c6a0e788a426958609b1312422d8fed40a08ee0bb51");
  const auto hash = git_lfs_concat_hash({{"_relu_cuda_abc1234.abi3.so", sha256_hex(so)},
                                         {"__init__.py", git_blob_sha1_hex(init)},
                                         {"_ops.py", git_blob_sha1_hex(ops)}});
  CHECK(hash == "sha256-bb5636555bbb925b23d32d2ae2fdaf3db2203ec81dfd242c327eb1be6ba9fd50");
}

TEST_CASE("the kernels format is written in the kernels order, byte for byte", "[lockfile]") {
  Lockfile lock;
  lock.entries.push_back(kernels_entry("b/x", std::string("main"), kB));
  lock.entries.push_back(kernels_entry("b/x", std::uint64_t{10}, kA));
  lock.entries.push_back(kernels_entry("b/x", std::uint64_t{2}, kA));
  lock.entries.push_back(kernels_entry("a/x", std::uint64_t{10}, kB));
  // "a-b/x" sorts before "a/x" as a string ('-' < '/'), though "a" < "a-b" as an org.
  lock.entries.push_back(kernels_entry("a-b/x", std::uint64_t{1}, kA));
  auto text = write_lockfile(lock, LockFormat::kernels);
  REQUIRE(text);
  const std::string entry_a =
      "  {\n    \"dependency\": {\n      \"repo-id\": \"a-b/x\",\n"
      "      \"version\": 1\n    },\n    \"lock\": {\n"
      "      \"commit\": \"" +
      kA + "\"\n    }\n  }";
  CHECK(text->rfind("[\n" + entry_a + ",\n", 0) == 0);
  CHECK(text->back() == ']');  // no final newline, as `kernels lock` writes it
  std::vector<std::string> order;
  auto parsed = parse_lockfile(*text);
  REQUIRE(parsed);
  for (const auto& e : parsed->entries) order.push_back(e.dependency->describe());
  CHECK(order == std::vector<std::string>{"a-b/x version 1", "a/x version 10", "b/x version 2",
                                          "b/x version 10", "b/x revision main"});
  auto again = write_lockfile(*parsed, LockFormat::kernels);
  REQUIRE(again);
  CHECK(*again == *text);
}

TEST_CASE("the legacy format round-trips and writes Python's json.dump layout", "[lockfile]") {
  Lockfile lock;
  lock.format = LockFormat::legacy;
  LockEntry entry{repo("kernels-community/activation"), std::nullopt, kA, {}};
  entry.variant_hashes["torch29-metal-aarch64-darwin"] = "sha256-" + std::string(64, '9');
  entry.variant_hashes["torch210-cu128-x86_64-windows"] = "sha256-" + std::string(64, 'c');
  lock.entries.push_back(entry);
  auto text = write_lockfile(lock, LockFormat::legacy);
  REQUIRE(text);
  CHECK(*text == "[\n  {\n    \"repo_id\": \"kernels-community/activation\",\n    \"sha\": \"" +
                     kA +
                     "\",\n    \"variants\": {\n      \"torch210-cu128-x86_64-windows\": {\n"
                     "        \"hash\": \"sha256-" +
                     std::string(64, 'c') +
                     "\",\n        \"hash_type\": \"git_lfs_concat\"\n      },\n"
                     "      \"torch29-metal-aarch64-darwin\": {\n        \"hash\": \"sha256-" +
                     std::string(64, '9') +
                     "\",\n        \"hash_type\": \"git_lfs_concat\"\n      }\n    }\n  }\n]");
  auto parsed = parse_lockfile(*text);
  REQUIRE(parsed);
  CHECK(parsed->format == LockFormat::legacy);
  REQUIRE(parsed->entries.size() == 1);
  CHECK(parsed->entries[0].variant_hashes == entry.variant_hashes);
  CHECK_FALSE(parsed->entries[0].dependency);
  // A legacy entry names no version: it cannot be written in the kernels format.
  CHECK(write_lockfile(*parsed, LockFormat::kernels).error().code == ErrorCode::invalid_argument);
}

TEST_CASE("reading refuses what kernels refuses, naming the entry", "[lockfile]") {
  const std::string dep = R"({"repo-id":"a/b","version":1})";
  const std::string lock = R"({"commit":")" + kA + R"("})";
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"{}", "top level must be an array"},
      {"[1]", "entry 1"},
      {one_entry(dep, R"({"commit":"zz"})"), "not a git object id"},
      {one_entry(R"({"repo-id":"a/b","version":1,"revision":"x"})", lock), "exactly one"},
      {one_entry(R"({"repo-id":"a/b"})", lock), "exactly one"},
      {one_entry(R"({"repo-id":"a/b","version":-1})", lock), "non-negative"},
      {one_entry(R"({"repo-id":"a/b","version":1.5})", lock), "non-negative"},
      {one_entry(R"({"repo-id":"../b","version":1})", lock), "entry 1"},
      {one_entry(dep, R"({"commit":")" + kA + R"(","x":1})"), "unknown member 'x'"},
      {one_entry(R"({"repo-id":"a/b","version":1,"extra":2})", lock), "unknown member 'extra'"},
      {R"([{"dependency":)" + dep + R"(,"lock":)" + lock + R"(,"more":1}])", "unknown member"},
      {"[" + one_entry(dep, lock).substr(1, one_entry(dep, lock).size() - 2) + "," +
           one_entry(dep, R"({"commit":")" + kB + R"("})").substr(1),
       "entry 2: duplicate dependency a/b version 1"},
      {R"([{"repo_id":"a/b","sha":")" + kA +
           R"(","variants":{"v":{"hash":"sha256-x","hash_type":"git_lfs_concat"}}}])",
       "sha256-<64 hex digits>"},
      {R"([{"repo_id":"a/b","sha":")" + kA +
           R"(","variants":{"../v":{"hash":"x","hash_type":"y"}}}])",
       "not a variant folder name"},
      {std::string(64, '[') + std::string(64, ']'), "kernels.lock"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_lockfile(c.text);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::malformed_lockfile);
    CHECK_THAT(parsed.error().message, Catch::Contains(c.says));
  }
  CHECK(parse_lockfile(std::string(kMaxLockfileBytes + 1, ' ')).error().code ==
        ErrorCode::too_large);
  // Uppercase hex is a commit too; kept lowercase, as kernels keeps it.
  std::string upper = kA;
  for (auto& c : upper) c = 'A';
  auto parsed = parse_lockfile(one_entry(dep, R"({"commit":")" + upper + R"("})"));
  REQUIRE(parsed);
  CHECK(parsed->entries[0].commit == kA);
  CHECK(parsed->find(repo("a/b")) == &parsed->entries[0]);
  CHECK(parsed->find(repo("a/c")) == nullptr);
}

TEST_CASE("a legacy variant hash is checked against the files' object ids", "[lockfile]") {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"build/v1/__init__.py", std::string(40, '1')},
      {"build/v1/x.so", std::string(64, '2')},
      {"build/v2/other.py", std::string(40, '3')}};
  LockEntry entry{repo("a/b"), std::nullopt, kA, {}};
  entry.variant_hashes["v1"] =
      git_lfs_concat_hash({{"__init__.py", std::string(40, '1')}, {"x.so", std::string(64, '2')}});
  CHECK(check_locked_variant(entry, "v1", files));
  CHECK(check_locked_variant(entry, "v2", files).error().code == ErrorCode::not_locked);
  auto changed = files;
  changed[1].second = std::string(64, '4');
  auto bad = check_locked_variant(entry, "v1", changed);
  CHECK(bad.error().code == ErrorCode::hash_mismatch);
  CHECK_THAT(bad.error().message, Catch::Contains("a/b@" + kA + " variant v1"));
  // The kernels format carries no variant hash: nothing to check.
  CHECK(check_locked_variant(LockEntry{repo("a/b"), std::nullopt, kA, {}}, "v9", files));
}

TEST_CASE("project manifests declare versions in [tool.kernels.dependencies]", "[lockfile]") {
  auto deps = parse_project_dependencies(
      "[project]\nname = \"x\"\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n"
      "\"kernels-test/versions\" = 2\n",
      "pyproject.toml");
  REQUIRE(deps);
  REQUIRE(deps->size() == 2);
  CHECK((*deps)[0].describe() == "kernels-community/relu version 1");
  CHECK((*deps)[1].describe() == "kernels-test/versions version 2");
  for (const std::string bad : {"[project]\n", "[tool.kernels.dependencies]\n\"a/b\" = \"1\"\n",
                                "[tool.kernels.dependencies]\n\"a/b\" = -1\n",
                                "[tool.kernels.dependencies]\n\"ab\" = 1\n", "not toml ["}) {
    INFO(bad);
    auto parsed = parse_project_dependencies(bad, "pyproject.toml");
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::invalid_argument);
    CHECK_THAT(parsed.error().message, Catch::StartsWith("pyproject.toml: "));
  }
}

TEST_CASE("metadata.json kernel-depends is parsed strictly", "[lockfile]") {
  auto meta = parse_kernel_metadata(
      R"({"kernel-depends":[{"repo-id":"kernels-community/relu","version":1},{"repo-id":"x/y","revision":"abc"}]})");
  REQUIRE(meta);
  REQUIRE(meta->kernel_depends.size() == 2);
  CHECK(meta->kernel_depends[1].describe() == "x/y revision abc");
  auto bad = parse_kernel_metadata(R"({"kernel-depends":[{"repo-id":"x/y"}]})");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("kernel-depends[0]"));
  CHECK_FALSE(parse_kernel_metadata(R"({"kernel-depends":{}})"));
  CHECK(parse_kernel_metadata(R"({"kernel-depends":[]})"));
}

TEST_CASE("version branch names: v and decimal digits only", "[lockfile]") {
  CHECK(version_of_branch("v1") == 1u);
  CHECK(version_of_branch("v10") == 10u);
  for (const char* other :
       {"v", "1", "main", "v1.0", "v-1", "v+1", "vx", "v1 ", "V1", "v99999999999999999999999"}) {
    INFO(other);
    CHECK_FALSE(version_of_branch(other));
  }
}
