// Process-level properties of the Python runtime, each in a fresh kh_python_app process:
// what it maps and when, the app's signal handlers, the off switch, the interpreter's
// isolation, and a native kernel's C-API shim followed by a real libpython.
#include <fstream>
#include <map>
#include <sstream>

#include "noarch_variant.hpp"
#include "support/process.hpp"

#include <catch2/catch.hpp>

using kernelhub::testing::EnvOverrides;
using kernelhub::testing::ops_kernel;
using kernelhub::testing::run_command;
using kernelhub::testing::TempDir;
using kernelhub::testing::write_noarch_kernel;

namespace {

const std::string kApp = std::string(KH_BIN_DIR) + "/kh_python_app";

std::map<std::string, std::string> run_app(const std::vector<std::string>& args,
                                           const EnvOverrides& env = {}) {
  std::vector<std::string> argv{kApp};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto result = run_command(argv, env);
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  std::map<std::string, std::string> said;
  std::istringstream lines(result.out);
  std::string line;
  while (std::getline(lines, line)) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) said[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return said;
}

}  // namespace

TEST_CASE(
    "libpython is mapped only when a Python kernel is first used, and a native kernel's "
    "C-API shim then forwards to it",
    "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  auto said = run_app({"native-then-python", dir.path().string(), KH_NATIVE_VARIANT_DIR});
  CHECK(said["libpython_start"] == "0");
  // The case's premise: the native kernel put the C-API shim in the global scope first.
  CHECK(said["pyshim_start"] == "0");
  REQUIRE(said["pyshim_after_native"] == "1");
  CHECK(said["libpython_after_native"] == "0");
  CHECK(said["libtorch_python_after_native"] == "0");
  CHECK(said["libpython_after_python"] == "1");
  CHECK(said["libtorch_python_after_python"] == "1");
  // PyErr_* went to libpython: the exception arrived whole.
  CHECK(said["error_type"] == "ValueError");
  CHECK(said["error_message"] == "through libpython");
  CHECK(said["after_error"] == "original");
}

TEST_CASE("the app's SIGINT and SIGTERM handlers still fire with the Python runtime running",
          "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  auto said = run_app({"signals", dir.path().string()});
  CHECK(said["mark"] == "original");
  CHECK(said["interrupts"] == "1");
  CHECK(said["terminations"] == "1");
  CHECK(said["sigint_is_ours"] == "1");
  CHECK(said["mark_after"] == "original");
}

TEST_CASE("KERNELHUB_PYTHON=off forbids Python kernels, and nothing of Python is mapped",
          "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path(), ops_kernel());
  auto said = run_app({"try-load", dir.path().string()}, {{"KERNELHUB_PYTHON", "off"}});
  CHECK(said["outcome"] == "unavailable");
  CHECK_THAT(said["message"], Catch::Contains("KERNELHUB_PYTHON=off"));
  CHECK(said["libpython_end"] == "0");
}

TEST_CASE(
    "the embedded interpreter is isolated: no PYTHONPATH, no current directory, no user "
    "site, no bytecode, and KERNELHUB_PYTHONPATH is the named way in",
    "[python]") {
  TempDir dir;
  const auto variant = write_noarch_kernel(dir.path() / "kernel", ops_kernel());
  const auto planted = dir.path() / "planted";
  const auto named = dir.path() / "named";
  std::filesystem::create_directories(planted);
  std::filesystem::create_directories(named);
  std::ofstream(planted / "kh_planted.py") << "X = 1\n";
  std::ofstream(named / "kh_named.py") << "X = 1\n";
  auto said = run_app({"isolation", (dir.path() / "kernel").string(), planted.string()},
                      {{"PYTHONPATH", planted.string()},
                       {"PYTHONUSERBASE", planted.string()},
                       {"PYTHONDONTWRITEBYTECODE", ""},
                       {"KERNELHUB_PYTHONPATH", named.string()}});
  CHECK(said["isolated"] == "1");
  CHECK(said["no_user_site"] == "1");
  CHECK(said["ignore_environment"] == "1");
  CHECK(said["dont_write_bytecode"] == "1");
  CHECK(said["cwd_on_path"] == "0");
  CHECK(said["planted_found"] == "0");  // neither through PYTHONPATH nor the current directory
  CHECK(said["named_found"] == "1");
  // No bytecode was written next to anything it imported or looked at.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    INFO(entry.path());
    CHECK(entry.path().filename() != "__pycache__");
  }
  CHECK(std::filesystem::exists(variant / "__init__.py"));
}

TEST_CASE("a Python whose torch is not this process's libtorch is refused, naming both",
          "[python]") {
  TempDir dir;
  write_noarch_kernel(dir.path() / "kernel", ops_kernel());
  // A python that says its torch is elsewhere: another libtorch_cpu.so file.
  const auto fake_torch = dir.path() / "site" / "torch";
  std::filesystem::create_directories(fake_torch / "lib");
  std::ofstream(fake_torch / "lib" / "libtorch_cpu.so") << "not this process's libtorch";
  const auto fake_python = dir.path() / "python";
  // The real probe's answer, with its torch folder replaced.
  std::ofstream(fake_python) << "#!/bin/sh\n\"" << KH_TEST_PYTHON
                             << R"(" "$@" | sed 's#"torch": "[^"]*"#"torch": ")"
                             << fake_torch.string() << R"("#')"
                             << "\n";
  std::filesystem::permissions(fake_python, std::filesystem::perms::owner_all);
  auto said = run_app({"try-load", (dir.path() / "kernel").string()},
                      {{"KERNELHUB_PYTHON", fake_python.string()}});
  CHECK(said["outcome"] == "unavailable");
  CHECK_THAT(said["message"], Catch::Contains(fake_torch.string()) &&
                                  Catch::Contains("is not the one this process runs"));
  CHECK(said["libpython_end"] == "0");  // refused before libpython was loaded

  // The right Python, but a `torch` package planted first on the embedded sys.path: the
  // import is checked too.
  const auto planted = dir.path() / "planted";
  std::filesystem::create_directories(planted / "torch");
  std::ofstream(planted / "torch" / "__init__.py") << "\n";
  said = run_app({"try-load", (dir.path() / "kernel").string()},
                 {{"KERNELHUB_PYTHONPATH", planted.string()}});
  CHECK(said["outcome"] == "unavailable");
  CHECK_THAT(said["message"],
             Catch::Contains("imported torch from " + (planted / "torch").string()));
}
