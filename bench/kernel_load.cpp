// Load time of one kernel through the loader: open beneath the variant folder, hash every
// file, scan, dlopen, look up an op. One load per process (a namespace loads once), so
// bench/attention_bench.py runs this several times.
//   kh_kernel_load <variant-or-build-dir> <op>
// Prints JSON: {"bytes": N, "open_ns": ..., "load_ns": ..., "lookup_ns": ..., "total_ns": ...}
#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/loader/kernel_ops.hpp"

namespace {
double since_ns(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kh_kernel_load <variant-or-build-dir> <op>\n");
    return 2;
  }
  namespace loader = kernelhub::loader;
  const auto start = std::chrono::steady_clock::now();
  auto source = loader::open_local_kernel(argv[1], "bench", loader::current_runtime());
  if (!source) {
    std::fprintf(stderr, "kh_kernel_load: %s\n", source.error().message.c_str());
    return 1;
  }
  const double open_ns = since_ns(start);
  long long bytes = 0;
  for (const auto& file : source->files) {
    struct stat st {};
    if (fstat(file.fd.get(), &st) == 0) bytes += st.st_size;
  }
  const auto load_start = std::chrono::steady_clock::now();
  auto kernel = loader::load_kernel(std::move(*source));
  if (!kernel) {
    std::fprintf(stderr, "kh_kernel_load: %s\n", kernel.error().message.c_str());
    return 1;
  }
  const double load_ns = since_ns(load_start);
  const auto lookup_start = std::chrono::steady_clock::now();
  auto op = loader::KernelOp::find(**kernel, argv[2]);
  if (!op) {
    std::fprintf(stderr, "kh_kernel_load: %s\n", op.error().message.c_str());
    return 1;
  }
  const double lookup_ns = since_ns(lookup_start);
  std::printf(
      "{\"bytes\": %lld, \"open_ns\": %.0f, \"load_ns\": %.0f, \"lookup_ns\": %.0f, "
      "\"total_ns\": %.0f}\n",
      bytes, open_ns, load_ns, lookup_ns, since_ns(start));
  return 0;
}
