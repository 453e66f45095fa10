// A large cache made fast for the eviction scale test and bench/eviction_bench.cpp: repos ×
// commits × variants × files small blobs, each linked once, every commit named by a ref, each
// variant with a usage marker a minute older than the one before it (so least recent use is
// a known order). Plain writes, no fsync: this is a fixture, not a publish.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/usage.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::cache::test {

struct SyntheticShape {
  int repos = 100;
  int commits = 10;   // per repo
  int variants = 10;  // per commit
  int files = 10;     // per variant, one blob each
  std::size_t file_bytes = 100;
};

struct SyntheticCache {
  std::uint64_t bytes = 0;
  std::size_t blobs = 0;
  std::size_t variants = 0;
};

inline void write_whole(const std::filesystem::path& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0 || ::write(fd, content.data(), content.size()) != static_cast<ssize_t>(content.size()))
    throw std::runtime_error("cannot write " + path.string());
  ::close(fd);
}

inline SyntheticCache make_synthetic_cache(const KernelCache& cache, const SyntheticShape& shape,
                                           WallClock::time_point newest) {
  SyntheticCache made;
  int order = 0;  // the variant's place in use order: 0 is the most recent
  for (int r = 0; r < shape.repos; ++r) {
    const trust::RepoId repo{"kernels-community", "synthetic-" + std::to_string(r)};
    if (!cache.prepare_repo(repo)) throw std::runtime_error("cannot prepare " + repo.str());
    for (int c = 0; c < shape.commits; ++c) {
      const std::string commit =
          trust::sha256_hex(repo.str() + "@" + std::to_string(c)).substr(0, 40);
      write_whole(cache.repo_dir(repo) / "refs" / ("v" + std::to_string(c + 1)), commit);
      for (int v = 0; v < shape.variants; ++v) {
        const std::string variant = "torch2" + std::to_string(v) + "-cxx11-cpu-x86_64-linux";
        const auto folder = cache.snapshot_dir(repo, commit) / "build" / variant;
        std::filesystem::create_directories(folder);
        for (int f = 0; f < shape.files; ++f) {
          // The distinguishing parts first: the content is cut to file_bytes.
          std::string content = std::to_string(f);
          content.append("/").append(variant).append("/").append(commit).append("/");
          content += repo.str();
          content.resize(shape.file_bytes, '.');
          const std::string etag = trust::sha256_hex(content);
          write_whole(cache.blobs_dir(repo) / etag, content);
          const auto link = folder / ("file_" + std::to_string(f) + ".py");
          if (::symlink(("../../../../blobs/" + etag).c_str(), link.c_str()) != 0)
            throw std::runtime_error("cannot link " + link.string());
          made.bytes += content.size();
          ++made.blobs;
        }
        // Spread the uses so that repos and commits interleave in LRU order.
        const int rank = (order * 7919) % (shape.repos * shape.commits * shape.variants);
        ++order;
        if (!record_use(cache, {repo, commit, variant}, newest - std::chrono::minutes(rank)))
          throw std::runtime_error("cannot record a use in " + repo.str());
        ++made.variants;
      }
    }
  }
  return made;
}

}  // namespace kernelhub::cache::test
