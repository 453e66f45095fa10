#include "support/fault_hub/fault_hub.hpp"

#include "support/fault_hub/fault_hooks.hpp"

namespace kernelhub::testing {

FaultHub::FaultHub(hub::server::ServerOptions options, bool test_endpoints)
    : hooks_(std::make_shared<FaultHooks>(options.root, test_endpoints)) {
  options.hooks = hooks_;
  server_ = std::make_unique<hub::server::HubServer>(std::move(options));
}

FaultHub::~FaultHub() { stop(); }

Result<void> FaultHub::start() { return server_->start(); }
Result<void> FaultHub::run() { return server_->run(); }
void FaultHub::stop() { server_->stop(); }
int FaultHub::port() const { return server_->port(); }
std::string FaultHub::endpoint() const { return server_->endpoint(); }

void FaultHub::set_faults(const FaultPlan& plan) { hooks_->set_plan(plan); }
std::vector<RequestRecord> FaultHub::requests() const { return hooks_->records(); }
void FaultHub::reset_requests() { hooks_->reset_records(); }
std::uint64_t FaultHub::paced_bytes() const { return hooks_->paced_bytes(); }

std::size_t FaultHub::count(const std::string& method, const std::string& path_part) const {
  return hooks_->count_records(method, path_part);
}

bool FaultHub::wait_for(const std::string& method, const std::string& path_part, std::size_t n,
                        std::chrono::milliseconds timeout) const {
  return hooks_->wait_records(method, path_part, n, timeout);
}

std::size_t FaultHub::count_status(int status, const std::string& path_part) const {
  std::size_t n = 0;
  for (const auto& r : hooks_->records()) {
    if (r.status == status && r.path.find(path_part) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace kernelhub::testing
