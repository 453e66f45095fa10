// Which Python the runtime embeds, asked of that Python: the one the loader already finds
// torch with (KERNELHUB_PYTHON, else python3/python on PATH; a venv's bin/ on PATH is an
// active venv), run once in isolated mode for its sys.path, prefixes, libpython and torch.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {

struct PythonInstall {
  std::filesystem::path python;  // what was run (may be a venv's symlink or a pyenv shim)
  int major = 0;
  int minor = 0;
  std::string executable;  // sys.executable
  std::string prefix;
  std::string exec_prefix;
  std::string base_prefix;
  std::string base_exec_prefix;
  std::vector<std::string> path;    // sys.path of `python -I`, then KERNELHUB_PYTHONPATH's
  std::filesystem::path libpython;  // the shared libpython, empty when it has none
  std::optional<std::filesystem::path> torch_dir;  // the torch package, not imported
};

// KERNELHUB_PYTHONPATH: extra sys.path entries (':'-separated, absolute), put first; the only
// way a path reaches the embedded sys.path besides the interpreter's own (PYTHONPATH and the
// other PYTHON* variables are ignored).
inline constexpr const char* kExtraPathVariable = "KERNELHUB_PYTHONPATH";

// load_failed when no Python is found; what
// variant::run_python returns when it misbehaves; malformed_response for an answer that is
// not the probe's JSON.
Result<PythonInstall> probe_python(const util::Environment& env);

}  // namespace kernelhub::python::detail
