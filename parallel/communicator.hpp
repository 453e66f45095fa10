// One c10d backend seen by the context-parallel algorithms: asynchronous send/recv,
// all-to-all and all-gather whose completion is timed (communication time is what the
// benchmark reports apart) and whose failures become CommunicationError with the peer and
// the operation named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "group.hpp"

namespace kernelhub::parallel {

struct CommCounters {
  double comm_seconds = 0;
  int64_t bytes_sent = 0;
};

// An operation in flight; its buffers stay alive until it is waited for.
struct Pending {
  c10::intrusive_ptr<c10d::Work> work;
  std::vector<at::Tensor> buffers;
  std::string what;  // "receive from rank 2 of the ring group", for errors
};

class Communicator {
 public:
  // `name` says which group this is in errors ("ring group", "Ulysses group").
  Communicator(BackendPtr backend, std::string name, CommCounters& counters);
  int rank() const { return rank_; }
  int size() const { return size_; }

  Pending send(const at::Tensor& tensor, int dst, int tag);
  Pending recv(const at::Tensor& tensor, int src, int tag);
  // Equal splits along dim 0 of both (contiguous) tensors.
  Pending all_to_all(const at::Tensor& out, const at::Tensor& in);
  // out: size() * in.numel() elements, rank i's `in` at slice i.
  Pending all_gather(const at::Tensor& out, const at::Tensor& in);

  // Blocks until `op` completes (or fails: CommunicationError); counts the time waited.
  void wait(Pending& op);

 private:
  template <class Post>
  Pending post(std::string what, std::vector<at::Tensor> buffers, Post post_op);

  BackendPtr backend_;
  std::string name_;
  CommCounters& counters_;
  int rank_;
  int size_;
};

}  // namespace kernelhub::parallel
