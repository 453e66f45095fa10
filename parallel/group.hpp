// What a ProcessGroup holds: the c10d backend of the world and a way to make sub-groups
// (the unified mode's ring and Ulysses groups). Only kh_parallel's sources see it; gloo's
// and NCCL's own headers stay in gloo_group.cpp / nccl_group.cpp.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "kernelhub/context_parallel.hpp"

namespace kernelhub::parallel {

using BackendPtr = c10::intrusive_ptr<c10d::Backend>;

struct ProcessGroup::Impl {
  BackendPtr world;
  int rank = 0;
  int size = 1;
  std::string name;  // "gloo", "nccl"
  // A backend over `ranks` (world ranks, this one among them), rendezvous under `prefix` in
  // the world's store. Collective over `ranks` only.
  std::function<BackendPtr(const std::string& prefix, const std::vector<int>& ranks)> subgroup;
};

// The TCPStore of options (rank 0 serves it), under the group's timeout.
c10::intrusive_ptr<c10d::Store> make_store(const GroupOptions& options);
// InvalidConfig unless 0 <= rank < world_size.
void check_rank(const GroupOptions& options);
// CommunicationError saying which group could not form and what to check.
[[noreturn]] void refuse_group(const std::string& backend, const GroupOptions& options,
                               const std::exception& error);

// The world group and the sub-group factory for one c10d backend type (ProcessGroupGloo,
// ProcessGroupNCCL): every group rendezvous under its own prefix of the one store.
template <class Backend, class BackendOptions>
void make_groups(ProcessGroup::Impl& impl, const c10::intrusive_ptr<c10d::Store>& store,
                 const BackendOptions& backend_options) {
  impl.world =
      c10::make_intrusive<Backend>(c10::make_intrusive<c10d::PrefixStore>("kh_world", store),
                                   impl.rank, impl.size, backend_options);
  impl.subgroup = [store, backend_options, rank = impl.rank](
                      const std::string& prefix, const std::vector<int>& ranks) -> BackendPtr {
    int index = 0;  // this rank's place in the sub-group
    while (index < static_cast<int>(ranks.size()) && ranks[index] != rank) ++index;
    return c10::make_intrusive<Backend>(c10::make_intrusive<c10d::PrefixStore>(prefix, store),
                                        index, static_cast<int>(ranks.size()), backend_options);
  };
}

}  // namespace kernelhub::parallel
