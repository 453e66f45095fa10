// The embedded Python runtime, started once per process on the first Python kernel:
// find the user's Python, check it runs this process's torch, load its libpython and the
// bridge, start the interpreter (or attach to the host's, when the process already runs
// Python). Nothing of it is mapped before.
#pragma once

#include "bridge_api.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {

inline constexpr const char* kBridgeFile = "libkernelhub_python_bridge.so";

// The started bridge. The first call starts it; its outcome, success or not, is kept for
// the process (a Python that failed to start cannot be started again).
Result<Bridge*> started_bridge(const util::Environment& env);

}  // namespace kernelhub::python::detail
