#include "interpreter_probe.hpp"

#include <nlohmann/json.hpp>

#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/variant/python_probe.hpp"

namespace kernelhub::python::detail {
namespace {

constexpr std::size_t kMaxAnswer = std::size_t{256} * 1024;
constexpr std::chrono::milliseconds kProbeTimeout{10000};

// -I: what the interpreter computes for itself, without PYTHON* variables, the user site or
// the current directory. find_spec locates torch without importing it.
constexpr const char* kScript = R"(
import importlib.util, json, os, sys, sysconfig
spec = importlib.util.find_spec("torch")
libdir = sysconfig.get_config_var("LIBDIR") or ""
libpython = ""
for name in (sysconfig.get_config_var("INSTSONAME"), sysconfig.get_config_var("LDLIBRARY")):
    if name and ".so" in name and os.path.isfile(os.path.join(libdir, name)):
        libpython = os.path.join(libdir, name)
        break
print(json.dumps({
    "version": [sys.version_info[0], sys.version_info[1]],
    "executable": sys.executable,
    "prefix": sys.prefix, "exec_prefix": sys.exec_prefix,
    "base_prefix": sys.base_prefix, "base_exec_prefix": sys.base_exec_prefix,
    "path": [p for p in sys.path if p],
    "libpython": libpython,
    "torch": spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else "",
}))
)";

std::vector<std::string> extra_paths(const util::Environment& env) {
  std::vector<std::string> out;
  const std::string value = env.get(kExtraPathVariable).value_or("");
  std::size_t start = 0;
  while (start < value.size()) {
    const auto colon = value.find(':', start);
    std::string entry = value.substr(start, colon == std::string::npos ? colon : colon - start);
    if (!entry.empty() && entry.front() == '/') out.push_back(std::move(entry));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

Result<PythonInstall> parse_answer(const std::string& text, const std::filesystem::path& python) {
  const auto malformed = [&](const std::string& why) {
    return fail(ErrorCode::malformed_response,
                python.string() + " gave an answer kernelhub cannot read: " + why);
  };
  KH_TRY_ASSIGN(const auto doc, util::parse_bounded_json(text, util::kMetadataJson));
  try {
    PythonInstall install;
    install.python = python;
    install.major = doc.at("version").at(0).get<int>();
    install.minor = doc.at("version").at(1).get<int>();
    install.executable = doc.at("executable").get<std::string>();
    install.prefix = doc.at("prefix").get<std::string>();
    install.exec_prefix = doc.at("exec_prefix").get<std::string>();
    install.base_prefix = doc.at("base_prefix").get<std::string>();
    install.base_exec_prefix = doc.at("base_exec_prefix").get<std::string>();
    install.path = doc.at("path").get<std::vector<std::string>>();
    install.libpython = doc.at("libpython").get<std::string>();
    if (auto torch = doc.at("torch").get<std::string>(); !torch.empty()) install.torch_dir = torch;
    return install;
  } catch (const nlohmann::json::exception& error) {
    return malformed(error.what());
  }
}

}  // namespace

Result<PythonInstall> probe_python(const util::Environment& env) {
  const auto python = variant::find_python(env);
  if (!python) {
    return fail(ErrorCode::load_failed,
                "no Python found to run a Python kernel: set KERNELHUB_PYTHON to the python of "
                "the environment whose torch this process runs");
  }
  KH_TRY_ASSIGN(const auto answer, variant::run_python(*python, {"-I", "-c", kScript}, env,
                                                       kProbeTimeout, kMaxAnswer));
  KH_TRY_ASSIGN(auto install, parse_answer(answer, *python));
  auto extra = extra_paths(env);
  install.path.insert(install.path.begin(), extra.begin(), extra.end());
  return install;
}

}  // namespace kernelhub::python::detail
