// The CLI against hostile outside input (issue 21): a lockfile's repo id holding ESC, NUL
// and a newline reaches the terminal escaped. Each command runs with a timeout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/support/process.hpp"

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

// The bytes of `text` below 0x20 other than the newline that ends each line, and DEL.
std::size_t raw_controls(const std::string& text) {
  std::size_t n = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n') || c == 0x7f) ++n;
  }
  return n;
}

}  // namespace

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
