// detect_platform: torch version and backend from flags, environment and a virtualenv's torch.
#include <stdlib.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "kernelhub/variant/python_probe.hpp"
#include "kernelhub/variant/variant.hpp"

namespace fs = std::filesystem;
using kernelhub::ErrorCode;
using kernelhub::util::Environment;
using kernelhub::variant::detect_platform;
using kernelhub::variant::PlatformOverrides;
using Vars = std::map<std::string, std::string, std::less<>>;

namespace {

// A throwaway virtualenv holding only lib/python3.11/site-packages/torch/version.py.
class FakeVenv {
 public:
  explicit FakeVenv(const std::string& version_py) {
    std::string pattern = (fs::temp_directory_path() / "kh-venv-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
    const auto torch = root_ / "lib" / "python3.11" / "site-packages" / "torch";
    fs::create_directories(torch);
    std::ofstream(torch / "version.py") << version_py;
  }
  ~FakeVenv() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  FakeVenv(const FakeVenv&) = delete;
  FakeVenv& operator=(const FakeVenv&) = delete;
  std::string path() const { return root_.string(); }

 private:
  fs::path root_;
};

constexpr const char* kCudaTorch =
    "from typing import Optional\n"
    "__version__ = '2.15.0+cu132'\n"
    "debug = False\n"
    "cuda: Optional[str] = '13.2'\n"
    "hip: Optional[str] = None\n";

bool nvidia_driver_present() { return fs::exists("/proc/driver/nvidia/version"); }

}  // namespace

TEST_CASE("torch version and CUDA come from the active virtualenv", "[platform]") {
  const FakeVenv venv(kCudaTorch);
  const Environment env(Vars{{"VIRTUAL_ENV", venv.path()}});
  const auto p = detect_platform(env, {});
  REQUIRE(p);
  CHECK(p->torch_major == 2);
  CHECK(p->torch_minor == 15);
  // CUDA only when a driver is present too; otherwise the CPU build is what can run.
  CHECK(p->backend == (nvidia_driver_present() ? "cu132" : "cpu"));
  CHECK(p->os == "linux");
  CHECK(p->cxx11_abi);
  CHECK((p->arch == "x86_64" || p->arch == "aarch64"));
}

TEST_CASE("backend override cuda uses torch's CUDA version", "[platform]") {
  const FakeVenv venv(kCudaTorch);
  const Environment env(Vars{{"VIRTUAL_ENV", venv.path()}});
  PlatformOverrides overrides;
  overrides.backend = "cuda";
  const auto p = detect_platform(env, overrides);
  REQUIRE(p);
  CHECK(p->backend == "cu132");

  const auto from_env = detect_platform(
      Environment(Vars{{"VIRTUAL_ENV", venv.path()}, {"KERNELHUB_BACKEND", "cu126"}}), {});
  REQUIRE(from_env);
  CHECK(from_env->backend == "cu126");
}

TEST_CASE("CPU-only torch never selects CUDA by itself", "[platform]") {
  const FakeVenv venv("__version__ = '2.14.1+cpu'\ncuda: Optional[str] = None\n");
  const auto p = detect_platform(Environment(Vars{{"VIRTUAL_ENV", venv.path()}}), {});
  REQUIRE(p);
  CHECK(p->torch_minor == 14);
  CHECK(p->backend == "cpu");

  PlatformOverrides overrides;
  overrides.backend = "cuda";
  const auto refused = detect_platform(Environment(Vars{{"VIRTUAL_ENV", venv.path()}}), overrides);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::invalid_argument);
}

TEST_CASE("torch version override beats the environment, which beats the venv", "[platform]") {
  const FakeVenv venv(kCudaTorch);
  Environment env(Vars{{"VIRTUAL_ENV", venv.path()}, {"KERNELHUB_TORCH_VERSION", "2.13"}});
  const auto from_env = detect_platform(env, {});
  REQUIRE(from_env);
  CHECK(from_env->torch_minor == 13);

  PlatformOverrides overrides;
  overrides.torch_version = "2.16.0+cu130";
  overrides.backend = "cuda";
  const auto from_flag = detect_platform(env, overrides);
  REQUIRE(from_flag);
  CHECK(from_flag->torch_minor == 16);
  CHECK(from_flag->backend == "cu130");  // the CUDA of the named torch build
}

TEST_CASE("malformed overrides are invalid arguments", "[platform]") {
  PlatformOverrides bad_version;
  bad_version.torch_version = "two.fifteen";
  const auto v = detect_platform(Environment{}, bad_version);
  REQUIRE_FALSE(v);
  CHECK(v.error().code == ErrorCode::invalid_argument);
  CHECK_THAT(v.error().message, Catch::Contains("two.fifteen"));

  const auto b = detect_platform(
      Environment(Vars{{"KERNELHUB_TORCH_VERSION", "2.15"}, {"KERNELHUB_BACKEND", "gpu"}}), {});
  REQUIRE_FALSE(b);
  CHECK(b.error().code == ErrorCode::invalid_argument);
  CHECK_THAT(b.error().message, Catch::Contains("KERNELHUB_BACKEND"));
}

TEST_CASE("no torch anywhere is an error that says what to set, not a guess", "[platform]") {
  std::string pattern = (fs::temp_directory_path() / "kh-empty-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  // A venv without torch and no python on PATH: nothing compiled in is consulted.
  const auto p =
      detect_platform(Environment(Vars{{"VIRTUAL_ENV", pattern}, {"PATH", pattern}}), {});
  fs::remove_all(pattern);
  REQUIRE_FALSE(p);
  CHECK(p.error().code == ErrorCode::invalid_argument);
  CHECK_THAT(p.error().message, Catch::Contains("KERNELHUB_TORCH_VERSION") &&
                                    Catch::Contains("--torch-version") &&
                                    Catch::Contains("KERNELHUB_PYTHON"));
}

namespace {

// A directory put on PYTHONPATH holding only torch/__init__.py and torch/version.py.
class FakeTorchPath {
 public:
  explicit FakeTorchPath(const std::string& version_py) {
    std::string pattern = (fs::temp_directory_path() / "kh-pypath-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "torch");
    std::ofstream(root_ / "torch" / "__init__.py") << "raise ImportError('never imported')\n";
    std::ofstream(root_ / "torch" / "version.py") << version_py;
  }
  ~FakeTorchPath() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  FakeTorchPath(const FakeTorchPath&) = delete;
  FakeTorchPath& operator=(const FakeTorchPath&) = delete;
  const fs::path& path() const { return root_; }

 private:
  fs::path root_;
};

Environment process_env_with(const Vars& extra) {
  auto vars = Environment::from_process().vars();
  for (const char* name : {"VIRTUAL_ENV", "KERNELHUB_TORCH_VERSION", "KERNELHUB_BACKEND",
                           "KERNELHUB_PYTHON", "PYTHONPATH"})
    vars.erase(std::string(name));
  for (const auto& [k, v] : extra) vars[k] = v;
  return Environment(std::move(vars));
}

}  // namespace

TEST_CASE("the torch of the python on PATH or KERNELHUB_PYTHON is found at run time",
          "[platform]") {
  const FakeTorchPath torch("__version__ = '2.13.1+cpu'\ncuda = None\n");
  const auto python = kernelhub::variant::find_python(process_env_with({}));
  REQUIRE(python);  // a test that cannot run here fails: python3 is a build requirement
  SECTION("python3 on PATH") {
    const auto p = detect_platform(process_env_with({{"PYTHONPATH", torch.path().string()}}), {});
    INFO((p ? "" : p.error().message));
    REQUIRE(p);
    CHECK(p->torch_minor == 13);
    CHECK(p->backend == "cpu");
  }
  SECTION("KERNELHUB_PYTHON wins over a broken python3 first on PATH") {
    const fs::path broken = torch.path() / "bin" / "python3";
    fs::create_directories(broken.parent_path());
    std::ofstream(broken) << "#!/bin/sh\nexit 3\n";
    fs::permissions(broken, fs::perms::owner_all);
    const std::string path =
        broken.parent_path().string() + ":" + Environment::from_process().get("PATH").value_or("");
    const auto on_path = detect_platform(
        process_env_with({{"PYTHONPATH", torch.path().string()}, {"PATH", path}}), {});
    REQUIRE_FALSE(on_path);  // proves the broken one is what PATH finds first
    CHECK(on_path.error().code == ErrorCode::io);
    const auto p = detect_platform(process_env_with({{"PYTHONPATH", torch.path().string()},
                                                     {"KERNELHUB_PYTHON", python->string()},
                                                     {"PATH", path}}),
                                   {});
    INFO((p ? "" : p.error().message));
    REQUIRE(p);
    CHECK(p->torch_minor == 13);
  }
}

TEST_CASE("a python that hangs is killed at the bound with a typed timeout", "[platform]") {
  std::string pattern = (fs::temp_directory_path() / "kh-hang-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const fs::path script = fs::path(pattern) / "python3";
  std::ofstream(script) << "#!/bin/sh\nexec sleep 30\n";
  fs::permissions(script, fs::perms::owner_all);
  const auto started = std::chrono::steady_clock::now();
  const auto r = kernelhub::variant::probe_torch_version_file(script, Environment{},
                                                              std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - started;
  fs::remove_all(pattern);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::timeout);
  CHECK(took < std::chrono::seconds(3));
}

TEST_CASE("a virtualenv's python is read, not run", "[platform]") {
  const FakeVenv venv("__version__ = '2.14.0+cpu'\ncuda = None\n");
  const fs::path python = fs::path(venv.path()) / "bin" / "python";
  fs::create_directories(python.parent_path());
  // Running it would fail: only reading <venv>/lib/python3*/site-packages can succeed.
  std::ofstream(python) << "#!/bin/sh\nexit 3\n";
  fs::permissions(python, fs::perms::owner_all);
  const auto run = kernelhub::variant::probe_torch_version_file(python, Environment{});
  REQUIRE_FALSE(run);  // proves the interpreter itself is of no use

  SECTION("without pyvenv.cfg it is not a virtualenv: the interpreter is asked, and fails") {
    const auto p = detect_platform(process_env_with({{"KERNELHUB_PYTHON", python.string()}}), {});
    REQUIRE_FALSE(p);
  }
  SECTION("with pyvenv.cfg its site-packages answer") {
    std::ofstream(fs::path(venv.path()) / "pyvenv.cfg") << "home = /usr/bin\n";
    const auto p = detect_platform(process_env_with({{"KERNELHUB_PYTHON", python.string()}}), {});
    INFO((p ? "" : p.error().message));
    REQUIRE(p);
    CHECK(p->torch_minor == 14);
  }
}
