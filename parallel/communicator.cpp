#include "communicator.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include <torch/csrc/distributed/c10d/Work.hpp>

namespace kernelhub::parallel {
namespace {

[[noreturn]] void fail(const std::string& what, double seconds, const std::exception& error) {
  std::string cause = error.what();
  while (!cause.empty() && (cause.back() == '\n' || cause.back() == ' ')) cause.pop_back();
  if (!cause.empty() && cause.back() != '.') cause += '.';
  throw CommunicationError(
      "Context parallelism: " + what + " failed after " + std::to_string(seconds) + " s: " + cause +
      " A peer process has probably exited or stalled (see its log), or the ranks did not "
      "make the same attention calls in the same order. Every rank of the group must call "
      "together; the group cannot be used after this error: rebuild it.");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Communicator::Communicator(BackendPtr backend, std::string name, CommCounters& counters)
    : backend_(std::move(backend)),
      name_(std::move(name)),
      counters_(counters),
      rank_(backend_->getRank()),
      size_(backend_->getSize()) {}

template <class Post>
Pending Communicator::post(std::string what, std::vector<at::Tensor> buffers, Post post_op) {
  Pending op{nullptr, std::move(buffers), std::move(what)};
  const auto start = std::chrono::steady_clock::now();
  try {
    op.work = post_op(op.buffers);
  } catch (const std::exception& error) {
    fail(op.what, seconds_since(start), error);
  }
  counters_.comm_seconds += seconds_since(start);
  return op;
}

Pending Communicator::send(const at::Tensor& tensor, int dst, int tag) {
  counters_.bytes_sent += static_cast<int64_t>(tensor.nbytes());
  return post("send to rank " + std::to_string(dst) + " of the " + name_, {tensor},
              [&](std::vector<at::Tensor>& b) { return backend_->send(b, dst, tag); });
}

Pending Communicator::recv(const at::Tensor& tensor, int src, int tag) {
  return post("receive from rank " + std::to_string(src) + " of the " + name_, {tensor},
              [&](std::vector<at::Tensor>& b) { return backend_->recv(b, src, tag); });
}

Pending Communicator::all_to_all(const at::Tensor& out, const at::Tensor& in) {
  counters_.bytes_sent += static_cast<int64_t>(in.nbytes()) * (size_ - 1) / size_;
  return post("all-to-all over the " + name_, {out, in}, [&](std::vector<at::Tensor>& b) {
    std::vector<int64_t> equal_splits;
    return backend_->alltoall_base(b[0], b[1], equal_splits, equal_splits);
  });
}

Pending Communicator::all_gather(const at::Tensor& out, const at::Tensor& in) {
  counters_.bytes_sent += static_cast<int64_t>(in.nbytes());
  return post("all-gather over the " + name_, {out, in},
              [&](std::vector<at::Tensor>& b) { return backend_->_allgather_base(b[0], b[1]); });
}

void Communicator::wait(Pending& op) {
  const auto start = std::chrono::steady_clock::now();
  try {
    op.work->wait();
  } catch (const std::exception& error) {
    fail(op.what, seconds_since(start), error);
  }
  counters_.comm_seconds += seconds_since(start);
  op.work.reset();
}

}  // namespace kernelhub::parallel
