// An op of a kernel that is provided (fetched, verified, loaded) on first activation and
// then kept for the process; hub and local-library backends share it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kernelhub/attention_dispatch.hpp"
#include "kernelhub/loader/kernel_ops.hpp"

namespace kernelhub::attention::detail {

using KernelProvider = std::function<std::shared_ptr<const loader::LoadedKernel>()>;

class LazyOp {
 public:
  LazyOp(std::string backend, KernelProvider provide, std::string op)
      : backend_(std::move(backend)), provide_(std::move(provide)), op_name_(std::move(op)) {}

  // Idempotent and thread-safe; a failure leaves nothing cached, so a later activation
  // (after the user fixed the cause) tries again.
  void activate() {
    std::lock_guard lock(mutex_);
    if (op_) return;
    auto kernel = provide_();
    auto op = loader::KernelOp::find(*kernel, op_name_);
    if (!op) {
      throw BackendUnavailable(backend_ + ": the kernel " + kernel->repo +
                               " does not provide the op it needs: " + op.error().message);
    }
    kernel_ = std::move(kernel);
    op_.emplace(std::move(*op));
  }

  // Valid after activate(); the dispatcher activates a backend before its first call.
  const loader::KernelOp& op() const { return *op_; }

 private:
  std::string backend_;
  KernelProvider provide_;
  std::string op_name_;
  std::mutex mutex_;
  std::shared_ptr<const loader::LoadedKernel> kernel_;
  std::optional<loader::KernelOp> op_;
};

}  // namespace kernelhub::attention::detail
