// The CLI against outside input that is not what it claims to be (issue 21): a FIFO or a
// device where a file is expected is refused at once, naming the path and what it is (a
// FIFO's open used to wait for a writer forever); an oversized lockfile is reported with its
// real size; a lockfile's hostile repo id reaches the terminal escaped; verify-blob's --help
// says what its exit codes mean. Each command runs with a timeout, so a hang fails fast.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/process.hpp"

namespace fs = std::filesystem;
using kernelhub::testing::CommandResult;
using kernelhub::testing::run_command;
using kernelhub::testing::TempDir;

namespace {

const std::string kBin = std::string(KH_BIN_DIR) + "/kernelhub";
constexpr std::chrono::seconds kHang{10};

// The CLI in-process, offline, with no daemon and nothing of the caller's environment.
CommandResult cli(const std::vector<std::string>& args, kernelhub::testing::EnvOverrides env = {}) {
  std::vector<std::string> argv{kBin};
  argv.insert(argv.end(), args.begin(), args.end());
  env.insert({{"KERNELHUB_SOCKET", "/nonexistent/kh.sock"},
              {"KERNELHUB_REQUIRE_DAEMON", ""},
              {"KERNELHUB_POLICY", ""},
              {"HF_HUB_OFFLINE", "1"},
              {"HF_TOKEN", ""},
              {"HF_TOKEN_PATH", ""},
              {"KERNELHUB_TORCH_VERSION", "2.8"}});
  return run_command(argv, env, kHang);
}

fs::path make_fifo(const fs::path& path) {
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
  return path;
}

// The bytes of `text` below 0x20 other than the newline that ends each line, and DEL.
std::size_t raw_controls(const std::string& text) {
  std::size_t n = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n') || c == 0x7f) ++n;
  }
  return n;
}

void check_refused_fifo(const CommandResult& result, const fs::path& fifo, int exit_code) {
  INFO(result.err);
  CHECK(result.exit_code == exit_code);
  CHECK_THAT(result.err, Catch::Contains(fifo.string() + " is a FIFO, not a regular file"));
}

}  // namespace

TEST_CASE("a FIFO given where a file is expected is refused at once, naming it", "[cli][files]") {
  TempDir dir;
  const fs::path fifo = make_fifo(dir.path() / "fifo");
  const fs::path cache = dir.path() / "cache";
  const std::vector<std::string> relu{"kernels-community/relu",
                                      "--version",
                                      "1",
                                      "--backend",
                                      "cpu",
                                      "--cache-dir",
                                      cache.string()};

  SECTION("--lockfile") {
    check_refused_fifo(
        cli({"download", "--lockfile", fifo.string(), "--cache-dir", cache.string()}), fifo, 2);
  }
  SECTION("verify-blob FILE, --bundle and --trusted-root") {
    const fs::path file = dir.path() / "file";
    std::ofstream(file) << "{}";
    const std::vector<std::string> signer{"--certificate-identity", "x",
                                          "--certificate-oidc-issuer", "y"};
    auto args = std::vector<std::string>{"verify-blob", fifo.string(), "--bundle", file.string()};
    args.insert(args.end(), signer.begin(), signer.end());
    check_refused_fifo(cli(args), fifo, 2);
    args = {"verify-blob", file.string(), "--bundle", fifo.string()};
    args.insert(args.end(), signer.begin(), signer.end());
    check_refused_fifo(cli(args), fifo, 2);
    args = {"verify-blob", file.string(),    "--bundle",
            file.string(), "--trusted-root", fifo.string()};
    args.insert(args.end(), signer.begin(), signer.end());
    check_refused_fifo(cli(args), fifo, 2);
  }
  SECTION("bundle import FILE") {
    check_refused_fifo(cli({"bundle", "import", fifo.string(), "--cache-dir", cache.string()}),
                       fifo, 2);
  }
  SECTION("--policy, and the policy's [signatures] trusted_root") {
    auto args = std::vector<std::string>{"download"};
    args.insert(args.end(), relu.begin(), relu.end());
    args.insert(args.end(), {"--policy", fifo.string()});
    check_refused_fifo(cli(args), fifo, 2);
    const fs::path policy = dir.path() / "policy.toml";
    std::ofstream(policy) << "[signatures]\nmode = \"warn\"\ntrusted_root = \"" << fifo.string()
                          << "\"\n";
    args.back() = policy.string();
    // Checked when the policy is loaded, before any fetch could need the root.
    check_refused_fifo(cli(args), fifo, 2);
  }
  SECTION("a FIFO in the cache: a ref, a token file") {
    const fs::path refs = cache / "kernels--kernels-community--relu" / "refs";
    fs::create_directories(refs);
    make_fifo(refs / "v1");
    auto args = std::vector<std::string>{"download"};
    args.insert(args.end(), relu.begin(), relu.end());
    const auto offline = cli(args);
    INFO(offline.err);
    CHECK(offline.exit_code == 6);
    CHECK_THAT(offline.err, Catch::Contains("offline_not_cached"));
    const auto listed = cli({"ls", "--cache-dir", cache.string()});
    CHECK(listed.exit_code == 0);
    // HF_TOKEN_PATH is read whenever the Hub is asked: a FIFO there is no token.
    const auto token = cli(args, {{"HF_TOKEN_PATH", fifo.string()}});
    CHECK(token.exit_code == 6);
  }
}

TEST_CASE("a device given where a file is expected is refused, not read", "[cli][files]") {
  TempDir dir;
  const auto zero =
      cli({"download", "--lockfile", "/dev/zero", "--cache-dir", (dir.path() / "cache").string()});
  INFO(zero.err);
  CHECK_THAT(zero.err, Catch::Contains("/dev/zero is a character device, not a regular file"));
  const auto blob = cli({"verify-blob", "/dev/zero", "--bundle", "/dev/null",
                         "--certificate-identity", "x", "--certificate-oidc-issuer", "y"});
  CHECK(blob.exit_code == 2);
  CHECK_THAT(blob.err, Catch::Contains("/dev/zero is a character device"));
}

TEST_CASE("an oversized lockfile is reported with its real size and the limit", "[cli][files]") {
  TempDir dir;
  const fs::path lock = dir.path() / "kernels.lock";
  std::ofstream(lock).flush();
  fs::resize_file(lock, 5u << 20);  // sparse: nothing is written
  const auto result =
      cli({"download", "--lockfile", lock.string(), "--cache-dir", (dir.path() / "c").string()});
  INFO(result.err);
  CHECK(result.exit_code == 7);
  CHECK_THAT(result.err, Catch::Contains(lock.string() + " is 5242880 bytes, more than the "
                                                         "4194304-byte limit"));
}

TEST_CASE("a lockfile's repo id with ESC and NUL reaches the terminal escaped", "[cli][escape]") {
  TempDir dir;
  const fs::path lock = dir.path() / "kernels.lock";
  // JSON escapes: the parsed repo_id holds a real ESC sequence, a NUL and a newline.
  std::ofstream(lock) << R"([{"repo_id": "kernels-community/re\u001b[2J\u001b]0;owned\u0007lu)"
                      << R"(\u0000\n<4>FORGED", "sha": ")" << std::string(40, 'a')
                      << R"(", "variants": {}}])";
  const auto result =
      cli({"download", "--lockfile", lock.string(), "--cache-dir", (dir.path() / "c").string()});
  INFO(result.err);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Catch::Contains("re\\x1b[2J\\x1b]0;owned\\x07lu\\x00\\x0a<4>FORGED"));
  CHECK(raw_controls(result.err) == 0);
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
}

TEST_CASE("verify-blob --help says what each exit code means, and they hold", "[cli][files]") {
  const auto help = cli({"verify-blob", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("exit 1 when it fails") == std::string::npos);
  CHECK_THAT(help.out, Catch::Contains("0 verified") &&
                           Catch::Contains("1 the bundle does not verify") &&
                           Catch::Contains("2 bad arguments") &&
                           Catch::Contains("3 the bundle cannot be opened") &&
                           Catch::Contains("7 the file is over its size limit"));

  TempDir dir;
  const fs::path file = dir.path() / "file";
  std::ofstream(file) << "{}";
  const std::vector<std::string> signer{"--certificate-identity", "x", "--certificate-oidc-issuer",
                                        "y"};
  const auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "verify-blob");
    args.insert(args.end(), signer.begin(), signer.end());
    return cli(args);
  };
  CHECK(run({file.string(), "--bundle", file.string()}).exit_code == 1);  // not a bundle
  CHECK(run({(dir.path() / "none").string(), "--bundle", file.string()}).exit_code == 2);
  CHECK(run({file.string(), "--bundle", (dir.path() / "none").string()}).exit_code == 3);
  const fs::path big = dir.path() / "big";
  std::ofstream(big).flush();
  fs::resize_file(big, 65u << 20);
  const auto over = run({big.string(), "--bundle", file.string()});
  CHECK(over.exit_code == 7);
  CHECK_THAT(over.err, Catch::Contains("is 68157440 bytes, more than the 67108864-byte limit"));
  const auto big_bundle = run({file.string(), "--bundle", big.string()});
  CHECK(big_bundle.exit_code == 1);  // a bundle over its 1 MiB does not verify
  CHECK_THAT(big_bundle.err, Catch::Contains("signature_invalid: bundle: "));
}
