// kernelhub::provider: where a hub kernel's files come from. LOCAL_KERNELS and the local
// libraries, the spec's one-of rule, and a revision fetched from the fixture Hub store (the
// test Hub, fetched in-process) with and without a lockfile in force. Nothing is loaded.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "attention/hub_environment.hpp"
#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/provider/local_kernels.hpp"
#include "kernelhub/provider/process_environment.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/util/error_table.hpp"
#include "support/process.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace fs = std::filesystem;
namespace kp = kernelhub::provider;
using kernelhub::ErrorCode;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::local_fixture;
using kernelhub::testing::set_dispatcher_env;
using kernelhub::testing::TempDir;

namespace {

constexpr const char* kRelu = "kernels-community/relu";

// A kernels-format lockfile with one entry for `repo`, pinned by `pin` (a version or a
// revision) at `commit`.
fs::path write_lock(const fs::path& dir, const std::string& repo, const nlohmann::json& pin,
                    const std::string& commit) {
  nlohmann::json dependency = {{"repo-id", repo}};
  dependency[pin.is_number() ? "version" : "revision"] = pin;
  const nlohmann::json lock =
      nlohmann::json::array({{{"dependency", dependency}, {"lock", {{"commit", commit}}}}});
  fs::path path = dir / "kernels.lock";
  std::ofstream(path) << lock.dump(2);
  return path;
}

kp::HubKernelSpec relu_at(const std::string& revision) {
  return {.user = "python kernel", .repo = kRelu, .revision = revision};
}

bool has_file(const kp::ProvidedKernel& kernel, const std::string& suffix) {
  for (const auto& file : kernel.source.files) {
    if (file.path.ends_with(suffix)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("provider: LOCAL_KERNELS is key=path entries and a malformed one is named") {
  auto parsed = kp::parse_local_kernels("a/b=/x:flash-attn=/y/z::");
  REQUIRE(parsed);
  CHECK(*parsed == kp::LocalKernels{{"a/b", "/x"}, {"flash-attn", "/y/z"}});
  CHECK(kp::parse_local_kernels("")->empty());
  for (const char* bad : {"a/b", "=/x", "a/b="}) {
    INFO(bad);
    auto refused = kp::parse_local_kernels(std::string("ok=/p:") + bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::invalid_argument);
    CHECK_THAT(refused.error().message,
               Catch::Contains(std::string("LOCAL_KERNELS entry '") + bad + "'"));
  }
}

TEST_CASE("provider: version_at_least orders releases and pre-releases") {
  CHECK(kp::version_at_least("2.8.3", "2.6.3"));
  CHECK(kp::version_at_least("2.6.3", "2.6.3"));
  CHECK_FALSE(kp::version_at_least("2.5.0", "2.6.3"));
  CHECK(kp::version_at_least("0.0.32", "0.0.29"));
  CHECK_FALSE(kp::version_at_least("3.0.0b1", "3.0.0"));
  CHECK(kp::version_at_least("3.0", "3.0.0"));
}

TEST_CASE("provider: a hub kernel spec names a version or a revision, exactly one") {
  set_dispatcher_env({{"LOCAL_KERNELS", ""}, {"KERNELHUB_LOCKFILE", ""}});
  const kp::HubKernelSpec neither{.user = "test", .repo = kRelu};
  const kp::HubKernelSpec both{.user = "test", .repo = kRelu, .version = 1, .revision = "v1"};
  for (const auto& spec : {neither, both}) {
    auto refused = kp::provide_hub_source(spec);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::invalid_argument);
    CHECK_THAT(refused.error().message,
               Catch::StartsWith("test: cannot use kernels-community/relu"));
    CHECK_THAT(refused.error().message, Catch::Contains("exactly one"));
  }
  auto bad_revision = kp::provide_hub_source(relu_at("a..b"));
  REQUIRE_FALSE(bad_revision);
  CHECK(bad_revision.error().code == ErrorCode::invalid_argument);
}

TEST_CASE("provider: LOCAL_KERNELS gives a local build's files, with its variant folder") {
  const fs::path dir = local_fixture("flash-attn");
  set_dispatcher_env(
      {{"LOCAL_KERNELS", std::string(kRelu) + "=" + dir.string()}, {"KERNELHUB_LOCKFILE", ""}});
  auto kernel = kp::provide_hub_source({.user = "test", .repo = kRelu, .version = 7});
  REQUIRE(kernel);
  CHECK(kernel->local);
  CHECK(kernel->commit.empty());
  CHECK(kernel->source.repo == "local:" + dir.string());
  CHECK(kernel->variant_dir == fs::absolute(dir / "build" / kernel->source.variant));
  CHECK(has_file(*kernel, ".so"));
  CHECK(kernel->context == "test: local kernel kernels-community/relu at " + dir.string());

  // A load failure is told in the same context, without a Hub fix.
  const auto told = kp::explain_use_error({.user = "test", .repo = kRelu, .version = 7}, *kernel,
                                          {ErrorCode::incompatible_kernel, "too new"});
  CHECK(told.message == kernel->context + ": too new");
}

TEST_CASE("provider: a local library must be in LOCAL_KERNELS and meet its pin") {
  const kp::LibrarySpec flash{"flash", "flash-attn", "2.6.3", "flash-attn>=2.6.3"};
  set_dispatcher_env({{"LOCAL_KERNELS", ""}});
  auto missing = kp::provide_local_library_source(flash);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::entry_not_found);
  CHECK_FALSE(kernelhub::is_refused(missing.error().code));
  CHECK_THAT(missing.error().message,
             Catch::StartsWith("Backend 'flash' is not usable because of missing package or the "
                               "version is too old: no flash-attn in LOCAL_KERNELS."));

  set_dispatcher_env({{"LOCAL_KERNELS", "flash-attn=" + local_fixture("flash-attn-old").string()}});
  auto old = kp::provide_local_library_source(flash);
  REQUIRE_FALSE(old);
  CHECK(old.error().code == ErrorCode::incompatible_kernel);
  CHECK_FALSE(kernelhub::is_refused(old.error().code));
  CHECK_THAT(old.error().message, Catch::Contains("is version 2.5.0, it needs flash-attn>=2.6.3"));

  set_dispatcher_env({{"LOCAL_KERNELS", "flash-attn=" + local_fixture("flash-attn").string()}});
  auto good = kp::provide_local_library_source(flash);
  REQUIRE(good);
  CHECK(good->local);
  CHECK(has_file(*good, "metadata.json"));
}

TEST_CASE("provider: a revision is fetched with its commit and the snapshot's variant folder") {
  const HubEnvironment hub;
  kp::set_lockfile_override(std::nullopt);  // a SECTION before this one may have set one
  const TempDir locks;
  auto kernel = kp::provide_hub_source(relu_at("v1"));
  INFO((kernel ? std::string() : kernel.error().message));
  REQUIRE(kernel);
  CHECK_FALSE(kernel->local);
  CHECK(kernelhub::trust::is_git_object_id(kernel->commit));
  CHECK(kernel->source.repo == kRelu);
  CHECK(kernel->variant_dir.filename() == kernel->source.variant);
  CHECK(kernel->variant_dir.parent_path().filename() == "build");
  CHECK(kernel->variant_dir.parent_path().parent_path().filename() == kernel->commit);
  CHECK(fs::is_directory(kernel->variant_dir));
  CHECK(has_file(*kernel, ".so"));
  CHECK(kernel->context == "python kernel: cannot use kernels-community/relu @v1");

  // Offline, a revision not in the cache: the error names it and how to prefetch it.
  set_dispatcher_env({{"HF_HUB_OFFLINE", "1"}});
  auto offline = kp::provide_hub_source(relu_at("no-such-branch"));
  REQUIRE_FALSE(offline);
  CHECK_THAT(
      offline.error().message,
      Catch::StartsWith("python kernel: cannot use kernels-community/relu @no-such-branch: "));
  CHECK_THAT(
      offline.error().message,
      Catch::Contains("`kernelhub download kernels-community/relu --revision no-such-branch`"));
}

TEST_CASE("provider: under a lockfile a revision is fetched at the locked commit, if locked") {
  const HubEnvironment hub;
  kp::set_lockfile_override(std::nullopt);  // a SECTION before this one may have set one
  const TempDir locks;
  auto unlocked = kp::provide_hub_source(relu_at("v1"));
  REQUIRE(unlocked);
  const std::string commit = unlocked->commit;

  SECTION("a repo the lock does not name is not_locked, with how to lock it") {
    kp::set_lockfile_override(std::optional<std::string>(
        write_lock(locks.path(), "kernels-community/flash-attn2", 3, commit).string()));
    auto refused = kp::provide_hub_source(relu_at("v1"));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::not_locked);
    CHECK_THAT(refused.error().message,
               Catch::Contains("kernels-community/relu is not in the lockfile"));
    CHECK_THAT(refused.error().message,
               Catch::Contains("Lock kernels-community/relu at revision v1"));
  }
  SECTION("a lock of another revision is not_locked") {
    kp::set_lockfile_override(
        std::optional<std::string>(write_lock(locks.path(), kRelu, "v2", commit).string()));
    auto refused = kp::provide_hub_source(relu_at("v1"));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::not_locked);
    CHECK_THAT(refused.error().message,
               Catch::Contains("locks kernels-community/relu revision v2, python kernel asks for "
                               "revision v1"));
  }
  SECTION("a lock of the same revision, or of a version, pins the commit") {
    const nlohmann::json pin = GENERATE(nlohmann::json("v1"), nlohmann::json(1));
    kp::set_lockfile_override(
        std::optional<std::string>(write_lock(locks.path(), kRelu, pin, commit).string()));
    auto locked = kp::provide_hub_source(relu_at("v1"));
    INFO((locked ? std::string() : locked.error().message));
    REQUIRE(locked);
    CHECK(locked->commit == commit);
  }
  SECTION("a lock pinning a commit the Hub does not have is what is fetched") {
    kp::set_lockfile_override(std::optional<std::string>(
        write_lock(locks.path(), kRelu, "v1", std::string(40, 'e')).string()));
    auto missing = kp::provide_hub_source(relu_at("v1"));
    REQUIRE_FALSE(missing);
    CHECK_FALSE(kernelhub::is_refused(missing.error().code));
    CHECK_THAT(missing.error().message, Catch::Contains(std::string(40, 'e')));
  }
}
