#include "loader/loader_test_support.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

namespace kernelhub::testing {

namespace fs = std::filesystem;

fs::path fixture_kernel_dir(const std::string& name, int version) {
  return fs::path(KH_BUILD_DIR) / "fixtures" / "src" / (name + "-v" + std::to_string(version));
}

fs::path fixture_variant_dir(const std::string& name, int version) {
  return fixture_kernel_dir(name, version) / "build" / KH_FIXTURE_VARIANT;
}

fs::path fixture_cuda_variant_dir(const std::string& name, int version) {
  INFO("the CUDA fixture variants were not built (" KH_FIXTURE_CUDA_WHY
       "); configure with -DKERNELHUB_CUDA_FIXTURES=OFF to leave their tests out");
  REQUIRE(std::string(KH_FIXTURE_CUDA_VARIANT) != "");
  auto dir = fixture_kernel_dir(name, version) / "build" / KH_FIXTURE_CUDA_VARIANT;
  INFO(dir.string());
  REQUIRE(fs::is_regular_file(dir / "metadata.json"));
  return dir;
}

fs::path only_shared_object(const fs::path& variant_dir) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(variant_dir)) {
    if (entry.path().extension() == ".so") found.push_back(entry.path());
  }
  REQUIRE(found.size() == 1);
  return found.front();
}

std::string metadata_id(const fs::path& variant_dir) {
  std::ifstream in(variant_dir / "metadata.json");
  REQUIRE(in);
  return nlohmann::json::parse(in).at("id").get<std::string>();
}

void copy_variant(const fs::path& from, const fs::path& destination) {
  fs::create_directories(destination);
  for (const auto& entry : fs::directory_iterator(from)) {
    if (!entry.is_regular_file()) continue;
    const auto target = destination / entry.path().filename();
    fs::copy_file(entry.path(), target);
    fs::permissions(target, entry.path().extension() == ".so" ? fs::perms(0755) : fs::perms(0644));
  }
}

std::vector<std::string> dispatcher_ops(const std::string& ops_namespace) {
  std::vector<std::string> names;
  for (const auto& op : c10::Dispatcher::singleton().getAllOpNames()) {
    if (op.name.rfind(ops_namespace + "::", 0) == 0) names.push_back(op.name);
  }
  return names;
}

std::shared_ptr<const loader::LoadedKernel> load_local(const fs::path& dir,
                                                       const std::string& repo) {
  auto source = loader::open_local_kernel(dir, repo, loader::current_runtime());
  INFO((source ? std::string() : source.error().message));
  REQUIRE(source);
  auto kernel = loader::load_kernel(std::move(*source));
  INFO((kernel ? std::string() : kernel.error().message));
  REQUIRE(kernel);
  return *kernel;
}

}  // namespace kernelhub::testing
