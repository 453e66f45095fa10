// `kernelhub download` as a child process against an in-process HubServer: output, JSON,
// one-line errors and the documented exit codes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "hub/fetch_fixture.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

CommandResult download(const FetchFixture& fx, std::vector<std::string> args,
                       EnvOverrides env = {}) {
  std::vector<std::string> argv{std::string(KH_BIN_DIR) + "/kernelhub", "download"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.emplace_back("--cache-dir");
  argv.push_back(fx.cache_root.string());
  env.emplace("HF_ENDPOINT", fx.server->endpoint());
  env.emplace("KERNELHUB_RETRY_BASE_MS", "1");
  env.emplace("HF_HUB_OFFLINE", "");
  env.emplace("KERNELHUB_POLICY", "");
  env.emplace("DIFFUSERS_TRUST_REMOTE_KERNELS", "");
  env.emplace("DIFFUSERS_DISABLE_REMOTE_CODE", "");
  return run_command(argv, env);
}

}  // namespace

TEST_CASE("kernelhub download prints the variant path, or JSON with every file") {
  FetchFixture fx;
  auto plain =
      download(fx, {"kernels-community/demo-fetch", "--version", "1", "--variant", kCpuVariant});
  REQUIRE(plain.exit_code == 0);
  const auto variant_dir = fx.cache_root / "kernels--kernels-community--demo-fetch" / "snapshots" /
                           fx.commit / "build" / kCpuVariant;
  CHECK(plain.out == variant_dir.string() + "\n");

  auto json = download(fx, {"kernels-community/demo-fetch", "--revision", "main", "--torch-version",
                            "2.15", "--backend", "cpu", "--json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["repo"] == "kernels-community/demo-fetch");
  CHECK(doc["commit"] == fx.commit);
  CHECK(doc["variant"] == kCpuVariant);
  CHECK(doc["path"] == variant_dir.string());
  CHECK(doc["files"].size() == 5);
  for (const auto& f : doc["files"]) CHECK(f["sha256"].get<std::string>().size() == 64);
}

TEST_CASE("kernelhub download reports failures on one line with a per-class exit code") {
  FetchFixture fx;
  const auto check = [](const CommandResult& r, int code, const std::string& name) {
    CHECK(r.exit_code == code);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("kernelhub: " + name + ": ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  check(download(fx, {"kernels-community/demo-fetch"}), 2, "invalid_argument");
  check(download(fx, {"evil-org/demo-fetch", "--version", "1"}), 3, "untrusted_publisher");
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1"},
                 {{"DIFFUSERS_DISABLE_REMOTE_CODE", "1"}}),
        3, "remote_code_disabled");
  CHECK(fx.server->requests().empty());
  check(download(fx, {"kernels-community/demo-fetch", "--version", "9"}), 4, "version_not_found");
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1", "--variant", "nope"}), 5,
        "no_matching_variant");
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1"}, {{"HF_HUB_OFFLINE", "1"}}),
        6, "offline_not_cached");
  testing::FaultPlan plan;
  plan.corrupt_one_byte = true;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1", "--variant", kCpuVariant}),
        7, "hash_mismatch");
}

TEST_CASE("kernelhub download: an anonymous 401 is repo_not_found with the HF_TOKEN hint",
          "[realism][401]") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.anonymous_401 = true;
  fx.server->set_faults(plan);
  auto r = download(fx,
                    {"kernels-community/no-such-kernel", "--version", "1", "--torch-version",
                     "2.15", "--backend", "cpu"},
                    {{"HF_TOKEN", ""},
                     {"HUGGING_FACE_HUB_TOKEN", ""},
                     {"HF_TOKEN_PATH", ""},
                     {"HF_HOME", ""},
                     {"XDG_CACHE_HOME", ""},
                     {"HOME", ""}});
  std::size_t kernel_401 = 0;
  std::size_t model_401 = 0;
  for (const auto& req : fx.server->requests()) {
    kernel_401 += req.status == 401 && req.path.starts_with("/api/kernels/") ? 1 : 0;
    model_401 += req.status == 401 && req.path.starts_with("/api/models/") ? 1 : 0;
  }
  CHECK(kernel_401 == 1);  // the fault happened
  CHECK(model_401 == 1);   // and the legacy model-type fallback was taken
  CHECK(r.exit_code == 4);
  CHECK(r.err.rfind("kernelhub: repo_not_found: ", 0) == 0);
  CHECK(r.err.find("set HF_TOKEN") != std::string::npos);
}

TEST_CASE("kernelhub download: a failing revision lookup serves the cache and says so",
          "[realism][fallback]") {
  FetchFixture fx;
  const std::vector<std::string> args{
      "kernels-community/demo-fetch", "--revision", "main", "--variant", kCpuVariant, "--json"};
  auto warm = download(fx, args);
  REQUIRE(warm.exit_code == 0);
  CHECK(nlohmann::json::parse(warm.out)["cache_fallback"].is_null());
  testing::FaultPlan plan;
  plan.fail_status = 503;
  plan.fail_count = 1000;
  plan.fail_path_filter = "/revision/";
  fx.server->set_faults(plan);
  fx.server->reset_requests();
  auto r = download(fx, args, {{"KERNELHUB_RETRY_BASE_MS", "1000"}});
  std::size_t failed = 0;
  for (const auto& req : fx.server->requests()) failed += req.status == 503 ? 1 : 0;
  CHECK(failed == 1);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["from_cache"] == true);
  REQUIRE(doc["cache_fallback"].is_string());
  CHECK(doc["cache_fallback"].get<std::string>().find("HTTP 503") != std::string::npos);
  CHECK(r.err.find("using the cached snapshot") != std::string::npos);
}

TEST_CASE("kernelhub download: ~ and $VAR in HF_HOME and HF_TOKEN_PATH find the token and cache",
          "[realism][env]") {
  FetchFixture fx;
  testing::FaultPlan plan;  // the repo answers only with a token: proves the token was read
  plan.anonymous_401 = true;
  plan.private_repos = {"kernels-community/demo-fetch"};
  fx.server->set_faults(plan);
  const auto home = fx.tmp.path() / "home";
  std::filesystem::create_directories(home / "hf");
  std::ofstream(home / "hf" / "token") << "hf_from_home\n";
  std::ofstream(fx.tmp.path() / "other-token") << "hf_from_path\n";
  const auto run = [&](EnvOverrides env) {
    env.emplace("HF_ENDPOINT", fx.server->endpoint());
    env.emplace("KERNELHUB_RETRY_BASE_MS", "1");
    env.emplace("HOME", home.string());
    env.emplace("KH_TEST_ROOT", fx.tmp.path().string());
    for (const char* unset :
         {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "KERNELS_CACHE",
          "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "HF_HUB_OFFLINE", "KERNELHUB_POLICY",
          "HF_HUB_DISABLE_IMPLICIT_TOKEN", "KERNELHUB_SOCKET"})
      env.emplace(unset, "");
    return run_command({std::string(KH_BIN_DIR) + "/kernelhub", "download",
                        "kernels-community/demo-fetch", "--version", "1", "--variant", kCpuVariant},
                       env);
  };
  auto anonymous = run({{"HF_HOME", (fx.tmp.path() / "nowhere").string()}});
  CHECK(anonymous.exit_code == 4);  // the fault happened: no token, no access

  auto tilde = run({{"HF_HOME", "~/hf"}});
  INFO(tilde.err);
  CHECK(tilde.exit_code == 0);
  CHECK(tilde.out.rfind((home / "hf" / "hub").string(), 0) == 0);

  auto braces = run({{"HF_HOME", "${KH_TEST_ROOT}/home/hf"}});
  INFO(braces.err);
  CHECK(braces.exit_code == 0);
  CHECK(braces.out.rfind((home / "hf" / "hub").string(), 0) == 0);

  auto token_path =
      run({{"HF_HOME", "$KH_TEST_ROOT/elsewhere"}, {"HF_TOKEN_PATH", "$KH_TEST_ROOT/other-token"}});
  INFO(token_path.err);
  CHECK(token_path.exit_code == 0);
  CHECK(token_path.out.rfind((fx.tmp.path() / "elsewhere" / "hub").string(), 0) == 0);
}

TEST_CASE("kernelhub download: a whitespace-only HF_TOKEN sends no Authorization",
          "[realism][token]") {
  FetchFixture fx;
  const std::vector<std::string> args{"kernels-community/demo-fetch", "--version", "1", "--variant",
                                      kCpuVariant};
  const auto authorized = [&] {
    std::size_t n = 0;
    for (const auto& req : fx.server->requests()) n += req.authorization ? 1 : 0;
    return n;
  };
  auto real = download(fx, args, {{"HF_TOKEN", "hf_real"}});
  REQUIRE(real.exit_code == 0);
  CHECK(authorized() > 0);  // the capture sees a token when one is sent
  fx.server->reset_requests();
  auto blank = download(fx, args,
                        {{"HF_TOKEN", " \t "},
                         {"HUGGING_FACE_HUB_TOKEN", ""},
                         {"HF_TOKEN_PATH", (fx.tmp.path() / "none").string()}});
  REQUIRE(blank.exit_code == 0);
  CHECK_FALSE(fx.server->requests().empty());
  CHECK(authorized() == 0);
}

TEST_CASE("kernelhub download: a full cache is disk_full, names the cache and says what to do",
          "[enospc]") {
  FetchFixture fx;
  std::filesystem::create_directories(fx.cache_root);
  // The cache on a 256 KiB tmpfs of a private mount namespace: the 1.5 MiB .so cannot fit.
  std::vector<std::string> argv{
      "unshare",
      "-m",
      "/bin/sh",
      "-c",
      R"(mount -t tmpfs -o size=256k tmpfs "$0" || exit 99; shift; exec "$@")",
      fx.cache_root.string(),
      "--",
      std::string(KH_BIN_DIR) + "/kernelhub",
      "download",
      "kernels-community/demo-fetch",
      "--version",
      "1",
      "--variant",
      kCpuVariant,
      "--cache-dir",
      fx.cache_root.string()};
  const auto r = run_command(argv, {{"HF_ENDPOINT", fx.server->endpoint()},
                                    {"KERNELHUB_RETRY_BASE_MS", "1"},
                                    {"HF_HUB_OFFLINE", ""},
                                    {"KERNELHUB_POLICY", ""}});
  INFO(r.err);
  REQUIRE(r.exit_code != 99);  // no tmpfs: the ENOSPC path is not exercised, a failure
  CHECK(r.exit_code == 8);
  CHECK(r.err.rfind("kernelhub: disk_full: ", 0) == 0);
  CHECK_THAT(r.err, Catch::Contains("No space left on device") &&
                        Catch::Contains("The cache at " + fx.cache_root.string()) &&
                        Catch::Contains("free space") && Catch::Contains("kernelhub gc"));
  CHECK(fx.server->count("GET", "/lfs-objects/") == 1);  // the download that did not fit
}
