// The one translation unit that includes ProcessGroupGloo.hpp, and with it gloo's headers
// (Debian's libgloo-dev, not the build torch bundles). It only creates gloo devices and
// hands them to torch as shared_ptrs: no gloo object is laid out or touched here, so a
// version difference between the two copies of gloo does not matter.
#define USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <exception>
#include <string>
#include <vector>

#include "client/parallel/group.hpp"

namespace kernelhub::parallel {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(const GlooGroupOptions& options) {
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout);
  if (!options.bind_address.empty()) {
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.bind_address));
  } else if (is_loopback(options.store_host)) {
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return gloo;
}

[[noreturn]] void refuse(const GlooGroupOptions& options, const std::exception& error) {
  throw CommunicationError(
      "Could not form the Gloo group (rank " + std::to_string(options.rank) + " of " +
      std::to_string(options.world_size) + ", store " + options.store_host + ":" +
      std::to_string(options.store_port) + ", timeout " + std::to_string(options.timeout.count()) +
      " ms): " + error.what() +
      " Start every rank with the same store address and world size, make the store's host "
      "reachable from each rank, and set bind_address to this host's address on the network "
      "the ranks share.");
}

}  // namespace

ProcessGroup ProcessGroup::gloo(const GlooGroupOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    throw InvalidConfig("Gloo group: rank " + std::to_string(options.rank) +
                        " is not in [0, world_size = " + std::to_string(options.world_size) +
                        "). Pass each process its own rank below the world size.");
  }
  auto impl = std::make_shared<Impl>();
  impl->rank = options.rank;
  impl->size = options.world_size;
  impl->name = "gloo";
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(options.store_port);
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = options.world_size;
    store_options.waitWorkers = false;  // the group's rendezvous below waits for everyone
    store_options.timeout = options.timeout;
    if (options.rank == 0 && options.store_listen_fd >= 0) {
      store_options.masterListenFd = options.store_listen_fd;
    }
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::TCPStore>(options.store_host, store_options);
    const auto gloo = gloo_options(options);
    impl->world = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("kh_world", store), options.rank, options.world_size,
        gloo);
    const int rank = options.rank;
    impl->subgroup = [store, gloo, rank](const std::string& prefix,
                                         const std::vector<int>& ranks) -> BackendPtr {
      int index = 0;
      while (index < static_cast<int>(ranks.size()) && ranks[index] != rank) ++index;
      return c10::make_intrusive<c10d::ProcessGroupGloo>(
          c10::make_intrusive<c10d::PrefixStore>(prefix, store), index,
          static_cast<int>(ranks.size()), gloo);
    };
  } catch (const CommunicationError&) {
    throw;
  } catch (const std::exception& error) {
    refuse(options, error);
  }
  return ProcessGroup(std::move(impl));
}

}  // namespace kernelhub::parallel
