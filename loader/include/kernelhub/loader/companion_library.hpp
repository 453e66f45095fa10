// Shared libraries kernelhub ships beside the module that holds the loader (the app, or
// libkernelhub.so) and loads only when needed: the Python C-API shim, the Python bridge.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "kernelhub/util/environment.hpp"

namespace kernelhub::loader {

// Where `file` is looked for, in order: $<override_variable> (then the only candidate), the
// directory of the module holding the loader and its ../lib, the install libdir.
std::vector<std::filesystem::path> companion_library_candidates(std::string_view file,
                                                                std::string_view override_variable,
                                                                const util::Environment& env);

}  // namespace kernelhub::loader
