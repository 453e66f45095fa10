// `kernelhub --version` and `kernelhubd --version` print the project version (project() in
// the top-level CMakeLists.txt, passed here as KH_PROJECT_VERSION) and exit 0, without a
// subcommand, a daemon socket or a cache.
#include <catch2/catch.hpp>

#include "support/process.hpp"

using kernelhub::testing::run_command;

TEST_CASE("kernelhub --version prints the project version", "[cli][version]") {
  const auto r = run_command({std::string(KH_BIN_DIR) + "/kernelhub", "--version"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("kernelhub ") + KH_PROJECT_VERSION + "\n");
}

TEST_CASE("kernelhubd --version prints the project version", "[cli][version]") {
  const auto r = run_command({std::string(KH_BIN_DIR) + "/kernelhubd", "--version"},
                             {{"KERNELHUB_SOCKET", "/nonexistent/kh.sock"}});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == std::string("kernelhubd ") + KH_PROJECT_VERSION + "\n");
}
