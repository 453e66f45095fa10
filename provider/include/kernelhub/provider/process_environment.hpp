// What the provider reads from its process: the environment, once (trust variables,
// LOCAL_KERNELS, KERNELHUB_LOCKFILE, the daemon socket), and the app's override of
// KERNELHUB_LOCKFILE.
#pragma once

#include <optional>
#include <string>

#include "kernelhub/util/environment.hpp"

namespace kernelhub::provider {

// The process environment as the provider sees it (read on first use).
const util::Environment& process_environment();
// Reads it again, drops the parsed lockfile and, once no fetch is in flight, the kept daemon
// connection (both follow the old environment). For tests, which change variables.
void reload_process_environment();

// set_kernel_lockfile's state: nullopt = follow KERNELHUB_LOCKFILE; {nullopt} = no lock.
void set_lockfile_override(std::optional<std::optional<std::string>> path);

}  // namespace kernelhub::provider
