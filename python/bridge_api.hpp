// The interface between kh_python (linked into apps, no Python headers) and
// kernelhub_python_bridge (dlopen'ed on first use, the only code that includes Python.h).
// Both sides are built from this header by the same build, with the same compiler and
// libtorch; kBridgeAbi catches a bridge from another build.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {

inline constexpr int kBridgeAbi = 1;
inline constexpr const char* kBridgeFactorySymbol = "kh_python_bridge_v1";

// How to start an interpreter of our own (ignored when the process already runs Python).
struct InterpreterSetup {
  std::string executable;  // sys.executable: the user's python binary
  std::string prefix;
  std::string exec_prefix;
  std::string base_prefix;
  std::string base_exec_prefix;
  std::vector<std::string> module_search_paths;  // sys.path, in order
  std::string torch_dir;  // the torch package this process's libtorch belongs to
};

// A Python exception, as the C++ side reports it.
struct PythonFailure {
  std::string type;     // "ValueError", or "package.module.Error"
  std::string message;  // str(exception)
  std::string file;     // innermost frame (a SyntaxError: where the error is)
  int line = 0;
  std::string function;
  std::string traceback;  // the formatted traceback, for logs
};

// One verified file of a variant: its path relative to the variant folder and its bytes
// (already checked against the hand-out's digest).
struct SourceFile {
  std::string path;
  std::string bytes;
};

// A strong reference to a Python object, owned by the caller: give it back with release().
using ObjectRef = void*;

// A kernel this one depends on (metadata.json `kernel-depends`), loaded before it: the
// imported module of a Python-only kernel, or the ops namespace of a compiled one (which the
// kernel sees as a module with `ops`).
struct Dependency {
  std::string repo;  // "org/name", the key of kernels.get_kernel_dep
  ObjectRef module = nullptr;
  std::string ops_namespace;  // when module is null
};

// A kernel package to import from memory.
struct PackageSpec {
  std::string module_name;  // metadata.json `id`: the name the package gets in sys.modules
  std::string root;         // "" or "<python_name>/": where __init__.py is in the variant
  std::string display_dir;  // the variant folder on disk, for __file__ only (never read)
  std::string origin;       // "kernels-community/x (torch-cpu)", for messages
  std::vector<SourceFile> files;
  std::vector<Dependency> dependencies;
};

struct CallArguments {
  const std::vector<c10::IValue>* args = nullptr;
  const std::vector<std::pair<std::string, c10::IValue>>* kwargs = nullptr;
};

// Every method takes the interpreter lock itself and releases it before returning; none is
// called before start() succeeded. Errors are values: a Python exception is
// ErrorCode::python_error with `failure` filled in.
class Bridge {
 public:
  virtual ~Bridge() = default;
  Bridge() = default;
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  virtual int abi() const = 0;
  // Starts the interpreter (or attaches to the host's), imports torch, installs the import
  // hook. Once per process.
  virtual Result<void> start(const InterpreterSetup& setup, PythonFailure& failure) = 0;
  // Import names (importlib.util.find_spec) that this interpreter cannot find.
  virtual Result<std::vector<std::string>> missing_modules(const std::vector<std::string>& names,
                                                           PythonFailure& failure) = 0;
  // Imports a kernel package from its verified bytes; the module, or the one imported
  // before under the same name. A failed import leaves nothing of it in sys.modules.
  virtual Result<ObjectRef> import_package(const PackageSpec& spec, PythonFailure& failure) = 0;
  // importlib.import_module(name): a module of the interpreter's own sys.path.
  virtual Result<ObjectRef> import_module(const std::string& name, PythonFailure& failure) = 0;
  // getattr along a dotted path ("layers.RMSNorm") from `base`.
  virtual Result<ObjectRef> attribute(ObjectRef base, const std::string& path,
                                      PythonFailure& failure) = 0;
  // callable(*args, **kwargs), the result converted to an IValue (tensors shared, not
  // copied; tuples, lists, numbers, strings, None).
  virtual Result<c10::IValue> call(ObjectRef callable, const CallArguments& arguments,
                                   PythonFailure& failure) = 0;
  virtual void release(ObjectRef object) = 0;
  // Whether this bridge started the interpreter (false: the host process runs Python).
  virtual bool owns_interpreter() const = 0;
};

using BridgeFactory = Bridge* (*)();

}  // namespace kernelhub::python::detail
