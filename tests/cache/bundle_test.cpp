// Bundles without a Hub: a bundle written from a cache imports into another byte for byte,
// and every hostile archive the issue lists (names outside the tree, links, devices, FIFOs,
// duplicates, strays, wrong sizes, terabyte manifests, truncated or garbage streams, a zstd
// bomb, an untrusted publisher, bytes or digests that do not match) ends in a typed error
// with nothing published.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernelhub/cache/bundle/bundle_import.hpp"
#include "kernelhub/cache/bundle/bundle_writer.hpp"
#include "kernelhub/trust/digest.hpp"
#include "support/bundle_builder.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::cache;
using namespace kernelhub::cache::bundle;
using kernelhub::testing::ArchiveBuilder;
using kernelhub::testing::TempDir;

namespace {

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kVariant = "torch215-cxx11-cpu-x86_64-linux";
const trust::RepoId kRepo{"kernels-community", "relu"};

std::string b64_sha256(const std::string& content) {
  trust::Sha256 h;
  h.update(content);
  return h.final_base64();
}

// A small variant: a python file (git blob id), a shared object (LFS sha256) and
// metadata.json with the digest of both.
struct Variant {
  std::map<std::string, std::string> files;
  Variant() {
    files["__init__.py"] = "from ._ops import ops\n";
    files["_relu.abi3.so"] = std::string(
                                 "\x7f"
                                 "ELF",
                                 4) +
                             std::string(4096, '\x01');
    nlohmann::json meta = {{"name", "relu"}, {"id", "_relu"}, {"version", 1}};
    meta["digest"] = {{"algorithm", "sha256"},
                      {"files",
                       {{"__init__.py", b64_sha256(files["__init__.py"])},
                        {"_relu.abi3.so", b64_sha256(files["_relu.abi3.so"])}}}};
    files["metadata.json"] = meta.dump();
  }
};

BundledRepo manifest_repo(const Variant& variant) {
  BundledRepo repo{kRepo, kCommit, {"v1"}, {kVariant}, {}};
  const std::string prefix = "build/" + kVariant + "/";
  for (const auto& [name, content] : variant.files) {
    const bool lfs = name.ends_with(".so");
    repo.files.push_back({prefix + name, content.size(),
                          lfs ? trust::sha256_hex(content) : trust::git_blob_sha1_hex(content),
                          trust::sha256_hex(content)});
  }
  return repo;
}

void write_blobs(ArchiveBuilder& b, const BundledRepo& repo, const Variant& variant) {
  for (const auto& f : repo.files) {
    b.file(blob_entry_name(repo.repo, f.etag),
           variant.files.at(f.path.substr(("build/" + kVariant + "/").size())));
  }
}

Result<std::vector<ImportedRepo>> import_file(const fs::path& bundle, const KernelCache& cache,
                                              const ImportOptions& options = {}) {
  const int fd = ::open(bundle.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto result = import_bundle(fd, cache, options);
  ::close(fd);
  return result;
}

// Nothing of the repo is visible: no folder at all (the import made it and removed it).
void check_nothing_published(const KernelCache& cache) {
  CHECK_FALSE(fs::exists(cache.repo_dir(kRepo)));
}

}  // namespace

TEST_CASE("a bundle written from open files imports byte for byte", "[bundle]") {
  TempDir dir;
  const Variant variant;
  const auto repo = manifest_repo(variant);
  BundleSource source{repo, {}};
  for (const auto& f : repo.files) {
    const fs::path path = dir.path() / ("src-" + f.etag);
    std::ofstream(path, std::ios::binary) << variant.files.at(f.path.substr(f.path.rfind('/') + 1));
    source.fds.emplace_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  std::vector<BundleSource> sources;
  sources.push_back(std::move(source));
  auto stats = write_bundle(dir.path() / "b.tar.zst", sources);
  REQUIRE(stats);
  CHECK(stats->blobs == 3);
  CHECK(stats->archive_bytes > 0);
  // No partial file is left beside it.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  CHECK(entries == 4);

  const KernelCache cache(dir.path() / "cache");
  auto imported = import_file(dir.path() / "b.tar.zst", cache);
  REQUIRE(imported);
  REQUIRE(imported->size() == 1);
  CHECK((*imported)[0].refs_written == std::vector<std::string>{"v1"});
  CHECK(cache.read_ref(kRepo, "v1") == kCommit);
  // A claim, not an acceptance: the rollback guard's state is only ever written by the Hub.
  CHECK_FALSE(cache.read_version_state(kRepo, 1));
  for (const auto& [name, content] : variant.files) {
    const fs::path file = cache.snapshot_dir(kRepo, kCommit) / "build" / kVariant / name;
    CHECK(fs::is_symlink(file));
    CHECK(testing::slurp(file) == content);
  }

  // A bundle whose bytes changed in the cache since they were verified is not written.
  std::ofstream(dir.path() / ("src-" + repo.files[0].etag), std::ios::app) << "x";
  std::vector<BundleSource> changed;
  changed.push_back({repo, {}});
  for (const auto& f : repo.files) {
    changed[0].fds.emplace_back(
        ::open((dir.path() / ("src-" + f.etag)).c_str(), O_RDONLY | O_CLOEXEC));
  }
  auto refused = write_bundle(dir.path() / "c.tar.zst", changed);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::size_mismatch);
  CHECK_FALSE(fs::exists(dir.path() / "c.tar.zst"));
}

TEST_CASE("hostile bundles are refused with a typed error and nothing published", "[bundle]") {
  TempDir dir;
  const Variant variant;
  const auto repo = manifest_repo(variant);
  const BundleManifest good{{repo}};
  const fs::path bundle = dir.path() / "hostile.tar.zst";
  const KernelCache cache(dir.path() / "cache");
  const std::string first_blob = blob_entry_name(kRepo, repo.files[0].etag);

  struct Case {
    const char* name;
    ErrorCode code;
    std::function<void(ArchiveBuilder&)> build;
  };
  const std::vector<Case> cases = {
      {"a ../ name", ErrorCode::unsafe_path,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.file("../evil", "x");
       }},
      {"an absolute name", ErrorCode::unsafe_path,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.file("/etc/evil", "x");
       }},
      {"a symlink", ErrorCode::unsafe_path,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.special(first_blob, AE_IFLNK, "/etc/passwd");
       }},
      {"a hard link", ErrorCode::unsafe_path,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.hardlink(first_blob, "kernelhub-bundle.json");
       }},
      {"a device", ErrorCode::unsafe_path,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.special(first_blob, AE_IFCHR);
       }},
      {"a FIFO", ErrorCode::unsafe_path,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.special(first_blob, AE_IFIFO);
       }},
      {"a duplicate entry", ErrorCode::malformed_response,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         write_blobs(b, repo, variant);
         b.file(first_blob, variant.files.begin()->second);
       }},
      {"an entry not in the manifest", ErrorCode::malformed_response,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.file("blobs/kernels-community/relu/" + std::string(40, 'a'), "stray");
       }},
      {"an entry longer than declared", ErrorCode::size_mismatch,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.file(first_blob, variant.files.at("__init__.py") + "more");
       }},
      {"an entry shorter than declared", ErrorCode::size_mismatch,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         b.file(first_blob, "short");
       }},
      {"a missing blob", ErrorCode::entry_not_found, [&](ArchiveBuilder& b) { b.manifest(good); }},
      {"bytes that differ from the manifest", ErrorCode::hash_mismatch,
       [&](ArchiveBuilder& b) {
         b.manifest(good);
         std::string other = variant.files.at("__init__.py");
         other[0] = 'F';
         b.file(first_blob, other);
       }},
      {"a manifest declaring terabytes", ErrorCode::too_large,
       [&](ArchiveBuilder& b) {
         auto huge = good;
         huge.repos[0].files[0].size = std::uint64_t{5} << 40;
         b.manifest(huge);
       }},
      {"a manifest claiming more than 64 refs", ErrorCode::too_large,
       [&](ArchiveBuilder& b) {
         auto many = good;
         for (int i = 0; i < 64; ++i) many.repos[0].refs.push_back("r" + std::to_string(i));
         b.manifest(many);
       }},
      {"no manifest first", ErrorCode::malformed_response,
       [&](ArchiveBuilder& b) { write_blobs(b, repo, variant); }},
      {"a manifest that is not one", ErrorCode::malformed_response,
       [&](ArchiveBuilder& b) { b.file(std::string(kManifestName), R"({"format":"zip"})"); }},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    fs::remove(bundle);
    {
      ArchiveBuilder builder(bundle);
      c.build(builder);
      builder.close();
    }
    auto result = import_file(bundle, cache);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == c.code);
    CHECK_THAT(result.error().message, Catch::Contains("nothing was imported"));
    check_nothing_published(cache);
  }

  SECTION("metadata.json digests that do not match the files") {
    Variant tampered;
    tampered.files["_relu.abi3.so"].back() = '\x02';  // the manifest follows, the digest does not
    const auto tampered_repo = manifest_repo(tampered);
    {
      ArchiveBuilder builder(bundle);
      builder.manifest({{tampered_repo}});
      write_blobs(builder, tampered_repo, tampered);
      builder.close();
    }
    auto result = import_file(bundle, cache);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::hash_mismatch);
    CHECK_THAT(result.error().message, Catch::Contains("_relu.abi3.so"));
    check_nothing_published(cache);
  }
  SECTION("an untrusted publisher, before any blob is read") {
    auto other = repo;
    other.repo = trust::RepoId{"SageAttention", "relu"};
    {
      ArchiveBuilder builder(bundle);
      builder.manifest({{other}});
      builder.file("../never-read", "x");  // would be unsafe_path if it were reached
      builder.close();
    }
    auto result = import_file(bundle, cache);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::untrusted_publisher);
    CHECK_FALSE(fs::exists(cache.repo_dir(other.repo)));
    ImportOptions opted_in;
    opted_in.trust_env.trust_remote_kernels = true;
    CHECK(import_file(bundle, cache, opted_in).error().code == ErrorCode::unsafe_path);
  }
  SECTION("a truncated stream and garbage") {
    {
      ArchiveBuilder builder(bundle);
      builder.manifest(good);
      write_blobs(builder, repo, variant);
      builder.close();
    }
    const std::string whole = testing::slurp(bundle);
    std::ofstream(bundle, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() / 2);
    auto truncated = import_file(bundle, cache);
    REQUIRE_FALSE(truncated);
    CHECK(truncated.error().code == ErrorCode::malformed_response);
    check_nothing_published(cache);
    std::ofstream(bundle, std::ios::binary | std::ios::trunc) << std::string(4096, '\x5a');
    CHECK(import_file(bundle, cache).error().code == ErrorCode::malformed_response);
    check_nothing_published(cache);
  }
  SECTION("a zstd bomb is refused at its header, never inflated") {
    {
      ArchiveBuilder builder(bundle);
      builder.manifest(good);
      builder.zeros(first_blob, std::size_t{512} << 20);  // 512 MiB of zeros, a few KiB packed
      builder.close();
    }
    CHECK(fs::file_size(bundle) < (std::size_t{1} << 20));
    const auto start = std::chrono::steady_clock::now();
    auto result = import_file(bundle, cache);
    const auto took = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::size_mismatch);
    CHECK(took < std::chrono::seconds(2));
    check_nothing_published(cache);
  }
}
