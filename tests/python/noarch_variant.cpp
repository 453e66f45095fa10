#include "noarch_variant.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "kernelhub/trust/digest.hpp"

namespace kernelhub::testing {

std::filesystem::path write_noarch_kernel(const std::filesystem::path& root,
                                          const NoarchKernel& kernel) {
  auto variant = root / "build" / ("torch-" + kernel.backend);
  std::filesystem::create_directories(variant);
  nlohmann::json digests = nlohmann::json::object();
  trust::Sha256 all;
  for (const auto& [path, content] : kernel.files) {
    const auto file = variant / path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    trust::Sha256 one;
    one.update(content);
    digests[path] = one.final_base64();
    all.update(path);
    all.update(content);
  }
  std::string python_name = kernel.name;
  for (char& c : python_name) c = c == '-' ? '_' : c;
  const std::string id = !kernel.id.empty() ? kernel.id
                                            : "_" + python_name + "_" + kernel.backend + "_" +
                                                  all.final_hex().substr(0, 7);
  nlohmann::json depends = nlohmann::json::array();
  for (const auto& [repo, version] : kernel.kernel_depends) {
    depends.push_back({{"repo-id", repo}, {"version", version}});
  }
  const nlohmann::json metadata = {
      {"name", kernel.name},
      {"id", id},
      {"version", 1},
      {"license", "Apache-2.0"},
      {"python-depends", kernel.python_depends},
      {"backend", {{"type", kernel.backend}}},
      {"kernel-depends", depends},
      {"digest", {{"algorithm", "sha256"}, {"files", digests}}},
  };
  std::ofstream(variant / "metadata.json") << metadata.dump(2);
  return variant;
}

NoarchKernel ops_kernel() {
  NoarchKernel kernel;
  kernel.name = "py-ops";
  kernel.files["__init__.py"] = R"(
import sys
from .sub.helpers import twice
from ._impl import fail, add_

MARK = "original"

def identity(x):
    return x

def echo(*args, **kwargs):
    return (args, tuple(sorted(kwargs.items())))

def mark():
    return MARK

def lazy_mark():
    from . import lazy
    return lazy.MARK

def source_of_twice():
    import inspect
    return inspect.getsource(twice)

def module_name():
    return __name__

def loaded_with_prefix(prefix):
    return sorted(k for k in sys.modules if k.startswith(prefix))

def can_import(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None

def flags():
    return (sys.flags.isolated, sys.flags.no_user_site, sys.dont_write_bytecode,
            [p for p in sys.path if p in ("", ".")], sys.flags.ignore_environment)
)";
  kernel.files["_impl.py"] = R"(
from .sub import deep

def add_(x, y):
    return x.add_(y)

def fail(message):
    deep.raise_value_error(message)
)";
  kernel.files["lazy.py"] = "MARK = 'lazy original'\n";
  kernel.files["sub/__init__.py"] = "";
  kernel.files["sub/helpers.py"] = "def twice(x):\n    return 2 * x\n";
  kernel.files["sub/deep.py"] = "def raise_value_error(message):\n    raise ValueError(message)\n";
  return kernel;
}

}  // namespace kernelhub::testing
