#include "state.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "kernelhub/provider/process_environment.hpp"
#include "registry.hpp"

namespace kernelhub::attention::detail {
namespace {

constexpr const char* kBackendVariable = "DIFFUSERS_ATTN_BACKEND";
constexpr const char* kChecksVariable = "DIFFUSERS_ATTN_CHECKS";

// Diffusers' ENV_VARS_TRUE_VALUES after .upper().
bool env_true(const char* value) {
  if (value == nullptr) return false;
  std::string upper(value);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return upper == "1" || upper == "ON" || upper == "YES" || upper == "TRUE";
}

struct Slot {
  std::string name;                        // guarded by State::mutex
  std::atomic<const Backend*> resolved{};  // set once `name` is found and activated
};

struct State {
  State() {
    // Case-sensitive like Diffusers' AttentionBackendName(os.getenv(...)).
    const char* initial = std::getenv(kBackendVariable);
    active.name = scoped.name = initial != nullptr ? initial : "native";
    checks.store(env_true(std::getenv(kChecksVariable)));
  }
  std::mutex mutex;
  Slot active;
  Slot scoped;
  std::atomic<bool> checks{false};
};

State& state() {
  static State instance;
  return instance;
}

struct Activation {
  std::atomic<bool> done{false};
  std::mutex mutex;
};

Activation& activation(const Backend& backend) {
  static const std::unique_ptr<Activation[]> flags =
      std::make_unique<Activation[]>(backend_count());
  return flags[backend_index(backend)];
}

bool is_activated(const Backend& backend) {
  return activation(backend).done.load(std::memory_order_acquire);
}

// Only the start-up value can name an unknown backend: every setter validates first.
const Backend& resolve_slow(Slot& slot) {
  State& s = state();
  std::string name;
  {
    std::lock_guard lock(s.mutex);
    name = slot.name;
  }
  const Backend* backend = lookup_backend(name);
  if (backend == nullptr) {
    throw UnknownBackend(std::string(kBackendVariable) + "=" + name + ": " +
                         unknown_backend_message(name) + " Set " + kBackendVariable +
                         " to one of them, or unset it for native.");
  }
  ensure_activated(*backend);
  std::lock_guard lock(s.mutex);
  if (slot.name == name) slot.resolved.store(backend, std::memory_order_release);
  return *backend;
}

const Backend& resolve(Slot& slot) {
  if (const Backend* backend = slot.resolved.load(std::memory_order_acquire)) return *backend;
  return resolve_slow(slot);
}

void assign(Slot& slot, std::string_view name, const Backend* backend) {
  slot.name = name;
  slot.resolved.store(backend != nullptr && is_activated(*backend) ? backend : nullptr,
                      std::memory_order_release);
}

}  // namespace

void ensure_activated(const Backend& backend) {
  Activation& flag = activation(backend);
  if (flag.done.load(std::memory_order_acquire)) return;
  std::lock_guard lock(flag.mutex);
  if (flag.done.load(std::memory_order_relaxed)) return;
  backend.activate();
  flag.done.store(true, std::memory_order_release);
}

const Backend& active() { return resolve(state().active); }
const Backend& scoped() { return resolve(state().scoped); }

const Backend& resolve_named(std::string_view name) {
  // One entry per thread: a layer or a loop keeps asking for the same name. Only activated
  // backends enter it.
  thread_local std::string cached_name;
  thread_local const Backend* cached = nullptr;
  if (cached != nullptr && cached_name == name) return *cached;
  const Backend& backend = find_backend(name);
  ensure_activated(backend);
  cached_name = name;
  cached = &backend;
  return backend;
}

std::pair<std::string, std::string> swap_backends(const Backend& backend) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  std::pair<std::string, std::string> previous{s.active.name, s.scoped.name};
  assign(s.active, backend.name, &backend);
  assign(s.scoped, backend.name, &backend);
  return previous;
}

void restore_backends(std::string_view active_name, std::string_view scoped_name) noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  assign(s.active, active_name, lookup_backend(active_name));
  assign(s.scoped, scoped_name, lookup_backend(scoped_name));
}

void set_active(const Backend& backend) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  assign(s.active, backend.name, &backend);
}

}  // namespace kernelhub::attention::detail

namespace kernelhub::attention {

BackendGuard::BackendGuard(std::string_view backend) {
  const detail::Backend& entry = detail::find_backend(backend);
  detail::ensure_activated(entry);
  std::tie(previous_active_, previous_scoped_) = detail::swap_backends(entry);
}

BackendGuard::~BackendGuard() { detail::restore_backends(previous_active_, previous_scoped_); }

std::string active_backend() {
  auto& s = detail::state();
  std::lock_guard lock(s.mutex);
  return s.active.name;
}

std::vector<std::string> list_backends() {
  const auto& names = detail::backend_names();
  return {names.begin(), names.end()};
}

bool checks_enabled() { return detail::state().checks.load(std::memory_order_relaxed); }
void set_checks_enabled(bool enabled) { detail::state().checks.store(enabled); }

void set_kernel_lockfile(const std::string& path) {
  provider::set_lockfile_override(std::optional<std::string>(path));
}

}  // namespace kernelhub::attention
