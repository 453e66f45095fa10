#include "kernelhub/provider/process_environment.hpp"

#include <mutex>

#include "kernel_fetch.hpp"
#include "lock_in_force.hpp"

namespace kernelhub::provider {
namespace {

std::mutex g_environment_mutex;
std::optional<util::Environment> g_environment;  // guarded by g_environment_mutex

}  // namespace

const util::Environment& process_environment() {
  std::lock_guard lock(g_environment_mutex);
  if (!g_environment) g_environment = util::Environment::from_process();
  return *g_environment;
}

void reload_process_environment() {
  reset_hub_connection([] {
    {
      std::lock_guard lock(g_environment_mutex);
      g_environment = util::Environment::from_process();
    }
    // Not under g_environment_mutex: locked_entry takes the lock mutex, then this one.
    forget_parsed_lockfile();
  });
}

}  // namespace kernelhub::provider
