// The small published kernel repo the HTTP-server fuzz harnesses serve: kernels-community/relu
// on main and v1, one file large enough for LFS.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"

namespace kernelhub::fuzzing {

namespace fs = std::filesystem;
using hub::server::kLfsThreshold;
using hub::server::publish_directory;
using hub::server::PublishRequest;

inline void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline void make_store(const fs::path& root, const fs::path& source) {
  const std::string variant = "build/torch-universal/relu/";
  write_file(source / (variant + "__init__.py"), "from ._ops import ops\n");
  write_file(source / (variant + "_ops.py"), "ops = None\n");
  write_file(source / (variant + "metadata.json"), R"({"python-depends": []})");
  write_file(source / "build/torch29-cxx11-cpu-x86_64-linux/relu/_relu.abi3.so",
             std::string(kLfsThreshold + 17, '\x7f'));
  write_file(source / "README.md", "# relu\n");
  auto repo = trust::RepoId::parse("kernels-community/relu");
  if (!repo) std::abort();
  for (const char* branch : {"main", "v1"}) {
    PublishRequest request;
    request.root = root;
    request.repo = *repo;
    request.branch = branch;
    request.message = "fuzz seed";
    request.source = source;
    request.timestamp = 1'700'000'000;
    if (!publish_directory(request)) std::abort();
  }
}

}  // namespace kernelhub::fuzzing
