// Context parallelism for the kernelhub attention dispatcher (Diffusers' enable_parallelism
// with a ContextParallelConfig): each process holds a contiguous slice of the sequence, and
// attention over the whole sequence is computed by exchanging key/value blocks (ring) or by
// re-sharding from sequence to heads and back (Ulysses), or both on a 2-D grid (unified).
//
//   #include <kernelhub/context_parallel.hpp>
//   namespace kp = kernelhub::parallel;
//   kp::ProcessGroup group = kp::ProcessGroup::gloo({.store_host = "10.0.0.1", .store_port = 29500,
//                                                    .rank = rank, .world_size = 4});
//   auto cp = kp::make_context_parallel({.ring_degree = 2, .ulysses_degree = 2}, group);
//   kp::enable_parallelism(model, cp);          // every Attention layer of `model`
//   at::Tensor x_local = cp->shard(x);           // this rank's slice of dim split_dim
//   ... model->forward(x_local) ...
//   at::Tensor y = cp->gather(y_local);          // the whole sequence on every rank
//
// Or for plain dispatch_attention calls in a scope:
//   kernelhub::attention::ParallelismGuard guard(cp);
//
// Every rank of the group must make the same calls in the same order (they are collective).
// Communication failures (a peer died, a timeout) throw CommunicationError on every
// surviving rank within the group's timeout; the group cannot be used after that.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "kernelhub/attention_parallelism.hpp"

namespace torch::nn {
class Module;
}

namespace kernelhub::parallel {

// Diffusers' ContextParallelConfig. ring_degree * ulysses_degree must equal the group's size
// and one of them must exceed 1. The mesh is (ring, ulysses), row-major like Diffusers'
// DeviceMesh: rank = ring_index * ulysses_degree + ulysses_index, and the sequence is split
// over the flattened mesh in rank order.
struct ContextParallelConfig {
  int ring_degree = 1;
  int ulysses_degree = 1;
  // The dimension shard() splits and gather() concatenates (a model's hidden states
  // (B, S, C): 1). Attention inputs are always (B, S, H, D): their sequence is dim 1.
  int64_t split_dim = 1;
  // Merge the ring's partial outputs in float32 (Diffusers' convert_to_fp32).
  bool convert_to_fp32 = true;
  // One small all-gather per call that compares every rank's shapes first, so uneven or
  // mismatched shards fail with UnevenShards on every rank instead of inside a collective.
  bool check_shards = true;
};

// How the ranks meet: a TCPStore that rank 0 hosts. bind_address is Gloo's alone.
struct GroupOptions {
  std::string store_host = "127.0.0.1";  // rank 0's address, reachable by every rank
  int store_port = 29500;
  int rank = 0;
  int world_size = 1;
  // The address (or host name) this process's Gloo connections bind to. Empty: 127.0.0.1
  // when store_host is a loopback address, else the address this host's name resolves to
  // (Gloo's default device). Set it on hosts with several interfaces.
  std::string bind_address;
  std::chrono::milliseconds timeout{60'000};  // every collective and the rendezvous
  // Rank 0 only: an already listening socket for the store (race-free port choice).
  int store_listen_fd = -1;
};

// Counters of a ContextParallel, summed over its calls.
struct CommStats {
  int64_t calls = 0;
  double comm_seconds = 0;   // waiting for sends/receives/all-to-alls to complete
  double total_seconds = 0;  // whole forward calls
  int64_t bytes_sent = 0;
};

// A process group: the world this rank belongs to, and how to make sub-groups of it.
class ProcessGroup {
 public:
  static ProcessGroup gloo(const GroupOptions& options);
  // CUDA tensors over NCCL: declared in <kernelhub/context_parallel_nccl.hpp>, in the
  // kh_parallel_nccl library (built when the NCCL headers are found).
  int rank() const;
  int size() const;
  std::string backend_name() const;  // "gloo", "nccl"

  struct Impl;  // c10d objects; see parallel/group.hpp
  explicit ProcessGroup(std::shared_ptr<Impl> impl);
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

class ContextParallel : public attention::AttentionParallelism {
 public:
  // Collective: every rank of `group` constructs it with the same config (sub-groups of the
  // unified mode are created here). Throws InvalidConfig when the degrees do not fit.
  ContextParallel(ContextParallelConfig config, const ProcessGroup& group);
  ~ContextParallel() override;
  ContextParallel(const ContextParallel&) = delete;
  ContextParallel& operator=(const ContextParallel&) = delete;

  // Attention over the whole sequence for this rank's query slice; query/key/value are this
  // rank's slices (B, S_local, H, D). options.backend unset: the active backend.
  at::Tensor forward(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                     const attention::AttentionOptions& options) override;

  // This rank's contiguous slice of `full` along split_dim; UnevenShards unless the world
  // size divides its length (pad the sequence yourself and mask nothing: see docs/cpp-api.md).
  at::Tensor shard(const at::Tensor& full) const;
  // The slices of every rank concatenated along split_dim (collective).
  at::Tensor gather(const at::Tensor& local);

  // Refuses (UnsupportedArgument, with the reason) a backend this config cannot run on:
  // ring and unified need return_lse.
  void check_backend(const std::string& backend) const;

  const ContextParallelConfig& config() const;
  int rank() const;
  int world_size() const;
  CommStats stats() const;
  void reset_stats();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::shared_ptr<ContextParallel> make_context_parallel(ContextParallelConfig config,
                                                       const ProcessGroup& group);

// Diffusers' model.enable_parallelism: checks that the backend of every Attention layer of
// `model` (its own, else the active one) can run under `cp`, then makes each run through it.
void enable_parallelism(torch::nn::Module& model, std::shared_ptr<ContextParallel> cp);
// Back to plain attention on every Attention layer of `model`.
void disable_parallelism(torch::nn::Module& model);

// A config the group cannot take (degrees, world size, split dimension).
class InvalidConfig : public attention::InvalidInput {
 public:
  using attention::InvalidInput::InvalidInput;
};
// The ranks' slices differ in length (or shape): refused, never padded.
class UnevenShards : public attention::InvalidInput {
 public:
  using attention::InvalidInput::InvalidInput;
};
// A collective failed: a peer exited or stalled past the timeout, or the network failed.
class CommunicationError : public attention::AttentionError {
 public:
  using attention::AttentionError::AttentionError;
};

}  // namespace kernelhub::parallel
