#include "hub/fetch_fixture.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "kernelhub/hub/server/store_publisher.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::testing {
namespace fs = std::filesystem;

static void put(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::map<std::string, std::string> cpu_variant_files() {
  static const std::string so = [] {
    std::mt19937_64 rng(1234);
    std::string bytes(1536 * 1024, '\0');  // > 1 MiB: stored and served as LFS
    for (auto& c : bytes) c = static_cast<char>(rng());
    return bytes;
  }();
  return {{"__init__.py", "from ._ops import ops\n"},
          {"_ops.py", "import torch\nops = torch.ops._x_cpu_abc1234\n"},
          {kSoName, so},
          {"py.typed", ""}};  // empty files are common in real kernels
}

void write_variant(const fs::path& dir, const std::map<std::string, std::string>& files) {
  std::string digests;
  for (const auto& [rel, content] : files) {
    put(dir / rel, content);
    trust::Sha256 sha;
    sha.update(content);
    digests +=
        std::string(digests.empty() ? "" : ",") + "\"" + rel + "\":\"" + sha.final_base64() + "\"";
  }
  put(dir / "metadata.json",
      "{\"id\":\"_x_cpu_abc1234\",\"name\":\"x\",\"version\":1,"
      "\"digest\":{\"algorithm\":\"sha256\",\"files\":{" +
          digests + "}}}");
}

FetchFixture::FetchFixture() : store(tmp.path() / "store"), cache_root(tmp.path() / "cache") {
  const fs::path source = tmp.path() / "src";
  write_variant(source / "build" / kCpuVariant, cpu_variant_files());
  write_variant(source / "build" / kCudaVariant, {{"__init__.py", "cuda = True\n"}});
  put(source / "README.md", "# demo\n");
  for (const std::string branch : {"main", "v1"}) {
    hub::server::PublishRequest request;
    request.root = store;
    request.repo = kKernelRepo;
    request.branch = branch;
    request.source = source;
    request.message = "build";
    request.timestamp = 1700000000;  // same tree and time: the same commit on both branches
    auto published = hub::server::publish_directory(request);
    REQUIRE(published);
    commit = published->commit;
  }
  hub::server::ServerOptions options;
  options.root = store;
  server = std::make_unique<testing::FaultHub>(options);
  REQUIRE(server->start());
}

FetchFixture::~FetchFixture() {
  if (server) server->stop();
}

util::Environment FetchFixture::env() const {
  util::Environment env;
  env.set("HF_ENDPOINT", server->endpoint() + "/");
  env.set("KERNELHUB_RETRY_BASE_MS", "1");
  env.set("HF_HUB_ETAG_TIMEOUT", "2");
  env.set("HF_HUB_DOWNLOAD_TIMEOUT", "2");
  return env;
}

variant::Platform FetchFixture::cpu_platform() {
  variant::Platform p;
  p.torch_major = 2;
  p.torch_minor = 15;
  p.cxx11_abi = true;
  p.backend = "cpu";
  p.arch = "x86_64";
  p.os = "linux";
  return p;
}

fetch::Request FetchFixture::request() {
  fetch::Request request(kKernelRepo, *fetch::Ref::version(1));
  request.target_platform = cpu_platform();
  return request;
}

Result<hub::FetchResult> FetchFixture::fetch(const fetch::Request& request,
                                             const hub::HubConfig& config,
                                             trust::TrustEnvironment trust_env) {
  cache::KernelCache cache(cache_root);
  hub::CurlHttpClient http(config);
  hub::Fetcher fetcher(config, http, cache, trust::AdminPolicy{}, trust_env);
  return fetcher.fetch(request);
}

std::size_t FetchFixture::file_gets() const {
  // kernel-status.toml is the repo's optional redirect notice, read before any artifact.
  return server->count("GET", "/resolve/") + server->count("GET", "/lfs-objects/") -
         server->count("GET", "/kernel-status.toml");
}

}  // namespace kernelhub::testing
