// Detection of what this process can run: torch version (flags, environment, the active
// virtualenv, or the torch of the Python on PATH), compute backend, CPU and OS. Runs in the
// client; the daemon selects for what the client detected and never looks at its own torch.
#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "kernelhub/util/strings.hpp"
#include "kernelhub/variant/python_probe.hpp"
#include "kernelhub/variant/variant.hpp"
#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::variant {
namespace fs = std::filesystem;

namespace {

constexpr const char* kNvidiaDriverFile = "/proc/driver/nvidia/version";

struct TorchInfo {
  int major = 0;
  int minor = 0;
  std::optional<std::string> cuda_token;  // "cu132" when this torch was built with CUDA
};

std::optional<std::string> cuda_token_from_version(const std::string& cuda) {
  static const std::regex kCuda(R"((\d+)\.(\d+)(?:\..*)?)");
  std::smatch m;
  if (!std::regex_match(cuda, m, kCuda)) return std::nullopt;
  return "cu" + m[1].str() + m[2].str();
}

// "2.15", "2.15.0", "2.15.0+cu132", "2.16.0a0+git1234": major.minor, plus CUDA from a
// "+cuXYZ" local tag.
std::optional<TorchInfo> parse_torch_version(const std::string& text) {
  static const std::regex kVersion(R"((\d+)\.(\d+)(?:[.a-z][0-9a-z.]*)?(?:\+([0-9A-Za-z.]+))?)");
  std::smatch m;
  if (!std::regex_match(text, m, kVersion)) return std::nullopt;
  TorchInfo info;
  try {
    info.major = std::stoi(m[1].str());
    info.minor = std::stoi(m[2].str());
  } catch (const std::exception&) {  // out of range: not a version we can use
    return std::nullopt;
  }
  static const std::regex kCuTag(R"(cu\d{2,})");
  if (m[3].matched && std::regex_match(m[3].str(), kCuTag)) info.cuda_token = m[3].str();
  return info;
}

// torch/version.py: `__version__ = '2.15.0+cu132'` and `cuda: Optional[str] = '13.2'` (or None).
Result<TorchInfo> read_torch_version_file(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return fail(ErrorCode::io, "cannot read " + file.string());
  static const std::regex kVersionLine(R"(__version__\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]\s*)");
  static const std::regex kCudaLine(R"(cuda\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]\s*)");
  std::optional<TorchInfo> info;
  std::optional<std::string> cuda;
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, kVersionLine)) info = parse_torch_version(m[1].str());
    if (std::regex_match(line, m, kCudaLine)) cuda = cuda_token_from_version(m[1].str());
  }
  if (!info) {
    return fail(ErrorCode::invalid_argument,
                "no torch __version__ in " + file.string() +
                    "; set KERNELHUB_TORCH_VERSION or pass --torch-version");
  }
  if (cuda) info->cuda_token = cuda;  // the authoritative field; the local tag is a fallback
  return *info;
}

// <venv>/lib/python3*/site-packages/torch/version.py, if any.
std::optional<fs::path> find_torch_version_file(const fs::path& venv) {
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(venv / "lib", ec)) {
    const auto name = entry.path().filename().string();
    if (!name.starts_with("python3")) continue;
    const auto file = entry.path() / "site-packages" / "torch" / "version.py";
    if (fs::is_regular_file(file, ec)) candidates.push_back(file);
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end());
  return candidates.back();  // the newest python3.x wins when several exist
}

Result<TorchInfo> detect_torch(const util::Environment& env, const PlatformOverrides& overrides) {
  const auto from_text = [](const std::string& text,
                            const std::string& source) -> Result<TorchInfo> {
    if (auto info = parse_torch_version(text)) return *info;
    return fail(ErrorCode::invalid_argument,
                "invalid torch version '" + text + "' from " + source +
                    " (expected MAJOR.MINOR, e.g. 2.15 or 2.15.0+cu132)");
  };
  if (overrides.torch_version) return from_text(*overrides.torch_version, "--torch-version");
  if (const auto value = env.get("KERNELHUB_TORCH_VERSION"))
    return from_text(*value, "KERNELHUB_TORCH_VERSION");
  if (const auto venv = env.get("VIRTUAL_ENV"); venv && !venv->empty()) {
    if (const auto file = find_torch_version_file(*venv)) return read_torch_version_file(*file);
  }
  const auto python = find_python(env);
  if (python) {
    // A virtualenv's python (<venv>/bin/python, as given: not resolved): its own torch is
    // read without starting it; only when that fails is the interpreter asked.
    const auto venv = python->parent_path().parent_path();
    std::error_code ec;
    if (fs::is_regular_file(venv / "pyvenv.cfg", ec)) {
      if (const auto file = find_torch_version_file(venv)) return read_torch_version_file(*file);
    }
    KH_TRY_ASSIGN(auto file, probe_torch_version_file(*python, env));
    if (file) return read_torch_version_file(*file);
  }
  return fail(ErrorCode::invalid_argument,
              "no torch found (" +
                  (python ? python->string() + " has no torch"
                          : std::string("no python3 or python on PATH")) +
                  "): pass --torch-version, set KERNELHUB_TORCH_VERSION, activate the virtualenv "
                  "that has torch, or set KERNELHUB_PYTHON to its python");
}

Result<std::string> detect_backend(const util::Environment& env, const PlatformOverrides& overrides,
                                   const TorchInfo& torch) {
  std::optional<std::string> requested = overrides.backend;
  std::string source = "--backend";
  if (!requested) {
    requested = env.get("KERNELHUB_BACKEND");
    source = "KERNELHUB_BACKEND";
  }
  if (!requested) {
    std::error_code ec;
    const bool driver = fs::exists(kNvidiaDriverFile, ec);
    return torch.cuda_token && driver ? *torch.cuda_token : std::string("cpu");
  }
  if (*requested == "cuda") {
    if (torch.cuda_token) return *torch.cuda_token;
    return fail(
        ErrorCode::invalid_argument,
        source +
            "=cuda, but the detected torch has no CUDA version; give the CUDA token, e.g. cu132");
  }
  if (parse_backend_token(*requested)) return *requested;
  return fail(ErrorCode::invalid_argument,
              "invalid backend '" + *requested + "' from " + source +
                  " (expected cpu, cuda, cuXY, rocmXY, xpuYYYYN, cannXY, metal, "
                  "neuron or tpu)");
}

}  // namespace

std::string Platform::describe() const {
  std::ostringstream out;
  out << "torch " << torch_major << "." << torch_minor << ", ";
  if (os == "linux") out << (cxx11_abi ? "cxx11 ABI, " : "pre-cxx11 ABI, ");
  out << backend << ", " << arch << "-" << os;
  return out.str();
}

Result<Platform> detect_platform(const util::Environment& env, const PlatformOverrides& overrides) {
  KH_TRY_ASSIGN(auto torch, detect_torch(env, overrides));
  KH_TRY_ASSIGN(auto backend, detect_backend(env, overrides, torch));

  utsname uts{};
  if (uname(&uts) != 0) return fail(ErrorCode::internal, "uname failed");
  Platform platform;
  platform.torch_major = torch.major;
  platform.torch_minor = torch.minor;
  platform.backend = std::move(backend);
  platform.os = util::ascii_lower(uts.sysname);
  platform.arch = uts.machine;
  if (platform.arch == "amd64" || platform.arch == "AMD64") platform.arch = "x86_64";
  if (platform.arch == "arm64") platform.arch = "aarch64";
  // Torch wheels for Linux have used the cxx11 ABI since 2.7; the tag means nothing elsewhere.
  platform.cxx11_abi = platform.os == "linux";
  return platform;
}

}  // namespace kernelhub::variant
