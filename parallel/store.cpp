// The rendezvous every backend shares: a TCPStore served by rank 0.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <string>

#include "group.hpp"

namespace kernelhub::parallel {

void check_rank(const GroupOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    throw InvalidConfig("Process group: rank " + std::to_string(options.rank) +
                        " is not in [0, world_size = " + std::to_string(options.world_size) +
                        "). Pass each process its own rank below the world size.");
  }
}

c10::intrusive_ptr<c10d::Store> make_store(const GroupOptions& options) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options.store_port);
  store_options.isServer = options.rank == 0;
  store_options.numWorkers = options.world_size;
  store_options.waitWorkers = false;  // the group's own rendezvous waits for everyone
  store_options.timeout = options.timeout;
  if (options.rank == 0 && options.store_listen_fd >= 0) {
    store_options.masterListenFd = options.store_listen_fd;
  }
  return c10::make_intrusive<c10d::TCPStore>(options.store_host, store_options);
}

void refuse_group(const std::string& backend, const GroupOptions& options,
                  const std::exception& error) {
  throw CommunicationError(
      "Could not form the " + backend + " group (rank " + std::to_string(options.rank) + " of " +
      std::to_string(options.world_size) + ", store " + options.store_host + ":" +
      std::to_string(options.store_port) + ", timeout " + std::to_string(options.timeout.count()) +
      " ms): " + error.what() +
      " Start every rank with the same store address and world size, make the store's host "
      "reachable from each rank, and (Gloo) set bind_address to this host's address on the "
      "network the ranks share.");
}

}  // namespace kernelhub::parallel
