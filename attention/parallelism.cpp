#include "parallelism.hpp"

#include <atomic>
#include <mutex>
#include <utility>

#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/dispatch.hpp"

namespace kernelhub::attention::detail {
namespace {

// Process-wide like BackendGuard. Every dispatch asks for it, so the common case (no guard)
// is one relaxed-cost atomic load; the mutex is taken only while a guard is set.
std::atomic<bool> guard_set{false};
std::mutex& guard_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::shared_ptr<AttentionParallelism>& guarded() {
  static std::shared_ptr<AttentionParallelism> parallelism;
  return parallelism;
}
thread_local bool inside_parallelism = false;

std::shared_ptr<AttentionParallelism> exchange_guarded(std::shared_ptr<AttentionParallelism> next) {
  const std::lock_guard lock(guard_mutex());
  guard_set.store(next != nullptr, std::memory_order_release);
  return std::exchange(guarded(), std::move(next));
}

}  // namespace

std::shared_ptr<AttentionParallelism> parallelism_for_call() {
  if (inside_parallelism || !guard_set.load(std::memory_order_acquire)) return nullptr;
  const std::lock_guard lock(guard_mutex());
  return guarded();
}

at::Tensor run_parallel(AttentionParallelism& parallelism, const at::Tensor& query,
                        const at::Tensor& key, const at::Tensor& value,
                        const AttentionOptions& options) {
  struct HookOff {
    HookOff() { inside_parallelism = true; }
    ~HookOff() { inside_parallelism = false; }
    HookOff(const HookOff&) = delete;
    HookOff& operator=(const HookOff&) = delete;
  } hook_off;
  return parallelism.forward(query, key, value, options);
}

}  // namespace kernelhub::attention::detail

namespace kernelhub::attention {

ParallelismGuard::ParallelismGuard(std::shared_ptr<AttentionParallelism> parallelism)
    : previous_(detail::exchange_guarded(std::move(parallelism))) {}

ParallelismGuard::~ParallelismGuard() { detail::exchange_guarded(std::move(previous_)); }

void require_return_lse(std::string_view backend) {
  detail::require_lse(detail::find_backend(backend));
}

}  // namespace kernelhub::attention
