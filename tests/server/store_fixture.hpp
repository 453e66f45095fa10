// A small kernel repo published into a temp store, and optionally a HubServer on it.
#pragma once

#include <httplib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "kernelhub/hub/server/store_publisher.hpp"
#include "support/fault_hub/fault_hub.hpp"
#include "support/process.hpp"

namespace kernelhub::testing {

inline const trust::RepoId kTestRepo{"kernels-community", "demo-kernel"};

void write_file(const std::filesystem::path& path, const std::string& content);

// build/torch-cpu/demo/{__init__.py, _ops.so, sub/deep.txt}, build/torch-cpu/weights.dat
// (2 MiB), README.md, plus __pycache__/x.pyc that publish must skip.
void make_source_tree(const std::filesystem::path& dir);

struct StoreFixture {
  StoreFixture();  // publishes the source tree to branches main and v1, tag v1.0.0
  TempDir tmp;
  std::filesystem::path store;
  std::filesystem::path source;
  std::string commit;  // head of main and v1

  hub::server::PublishRequest request(const std::string& branch) const;
};

struct ServerFixture : StoreFixture {
  explicit ServerFixture(std::size_t page_size = 1000, bool test_endpoints = false);
  std::unique_ptr<testing::FaultHub> server;
  httplib::Client client() const;
  std::string host() const;
};

}  // namespace kernelhub::testing
