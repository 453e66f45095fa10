// The one translation unit that includes ProcessGroupGloo.hpp, and with it gloo's headers
// (Debian's libgloo-dev, not the build torch bundles). It only creates gloo devices and
// hands them to torch as shared_ptrs: no gloo object is laid out or touched here, so a
// version difference between the two copies of gloo does not matter.
#define USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <string>
#include <vector>

#include "group.hpp"

namespace kernelhub::parallel {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(const GroupOptions& options) {
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

}  // namespace

ProcessGroup ProcessGroup::gloo(const GroupOptions& options) {
  check_rank(options);
  auto impl = std::make_shared<Impl>();
  impl->rank = options.rank;
  impl->size = options.world_size;
  impl->name = "gloo";
  try {
    const c10::intrusive_ptr<c10d::Store> store = make_store(options);
    const auto gloo = gloo_options(options);
    make_groups<c10d::ProcessGroupGloo>(*impl, store, gloo);
  } catch (const CommunicationError&) {
    throw;
  } catch (const std::exception& error) {
    refuse_group("Gloo", options, error);
  }
  return ProcessGroup(std::move(impl));
}

}  // namespace kernelhub::parallel
