// A kernel-like repo (two build variants, a > 1 MiB LFS .so, metadata.json with correct
// digests) published into a temp store and served by an in-process HubServer, plus an
// empty cache and a Fetcher configured for fast retries and short timeouts.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "support/fault_hub/fault_hub.hpp"
#include "support/process.hpp"

namespace kernelhub::testing {

inline const trust::RepoId kKernelRepo{"kernels-community", "demo-fetch"};
inline const std::string kCpuVariant = "torch215-cxx11-cpu-x86_64-linux";
inline const std::string kCudaVariant = "torch215-cxx11-cu130-x86_64-linux";
inline const std::string kSoName = "_x_cpu_abc1234.abi3.so";

// Variant-relative path -> content of the CPU variant (metadata.json included).
std::map<std::string, std::string> cpu_variant_files();
// Writes a variant folder and its metadata.json (base64 sha256 of every other file).
void write_variant(const std::filesystem::path& dir,
                   const std::map<std::string, std::string>& files);

struct FetchFixture {
  FetchFixture();
  ~FetchFixture();

  TempDir tmp;
  std::filesystem::path store;
  std::filesystem::path cache_root;
  std::string commit;  // head of main and v1
  std::unique_ptr<testing::FaultHub> server;

  // HF_ENDPOINT = the server, 1 ms retry unit, short timeouts.
  util::Environment env() const;
  hub::HubConfig config() const { return hub::HubConfig::from(env()); }
  static fetch::Request request();  // version 1 of kKernelRepo, for the CPU platform
  static variant::Platform cpu_platform();
  Result<hub::FetchResult> fetch(const fetch::Request& request, const hub::HubConfig& config,
                                 trust::TrustEnvironment trust_env = {});
  Result<hub::FetchResult> fetch() { return fetch(request(), config()); }
  std::size_t file_gets() const;  // artifact GETs (/resolve/, LFS objects) since the last reset
};

}  // namespace kernelhub::testing
