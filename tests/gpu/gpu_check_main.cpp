// kh_gpu_check: loader, dispatcher and timings on a CUDA GPU, as one Markdown table.
//   kh_gpu_check --fixtures <build/fixtures> --table <out.md> [--no-timings] [--rehearse-on-cpu]
// scripts/gpu-check.sh builds and runs it on a GPU host. --rehearse-on-cpu runs the same
// loader and backend checks on CPU tensors and the CPU fixture builds, with no timings: the
// way to test this program where there is no GPU. Exit status: 0 when every check passed, 1
// when one failed, 2 when it cannot run (no GPU, bad arguments).
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>

#include "gpu/gpu_check.hpp"

namespace {

namespace fs = std::filesystem;
namespace gc = kernelhub::gpu_check;

struct Arguments {
  fs::path fixtures;
  fs::path table;
  bool timings = true;
  bool rehearse_on_cpu = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "kh_gpu_check: %s\nusage: kh_gpu_check --fixtures <build/fixtures> --table "
               "<out.md> [--no-timings] [--rehearse-on-cpu]\n",
               problem.c_str());
  std::exit(2);
}

Arguments parse(int argc, char** argv) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--no-timings") {
      args.timings = false;
    } else if (arg == "--rehearse-on-cpu") {
      args.rehearse_on_cpu = true;
      args.timings = false;
    } else if ((arg == "--fixtures" || arg == "--table") && i + 1 < argc) {
      (arg == "--fixtures" ? args.fixtures : args.table) = argv[++i];
    } else {
      usage("unknown argument '" + std::string(arg) + "'");
    }
  }
  if (args.fixtures.empty() || args.table.empty()) usage("--fixtures and --table are required");
  if (!fs::is_directory(args.fixtures / "src")) {
    usage(args.fixtures.string() + " holds no fixture builds (src/): build the fixtures first");
  }
  return args;
}

// The hub and library backends find the fixture builds as a user's local builds would.
void point_local_kernels(const fs::path& fixtures) {
  const std::string src = (fixtures / "src").string();
  const std::string local = (fixtures / "local").string();
  const std::string value = "kernels-community/flash-attn2=" + src + "/flash-attn2-v3" +
                            ":kernels-community/flash-attn3=" + src + "/flash-attn3-v1" +
                            ":SageAttention/sage-attention=" + src + "/sage-attention-v3" +
                            ":kernels-community/flash-attn4=" + src + "/flash-attn4-v0" +
                            ":SageAttention/sage-blackwell=" + src + "/sage-blackwell-v1" +
                            ":flash-attn=" + local + "/flash-attn" + ":flash-attn3=" + local +
                            "/flash-attn3" + ":sageattention=" + local + "/sageattention" +
                            ":xformers=" + local + "/xformers";
  ::setenv("LOCAL_KERNELS", value.c_str(), 1);
  ::setenv("DIFFUSERS_TRUST_REMOTE_KERNELS", "1", 1);  // SageAttention is not kernels-community
}

bool write_table(const fs::path& path, const gc::Report& report) {
  std::ofstream out(path);
  out << report.markdown();
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments args = parse(argc, argv);
  gc::Report report;
  point_local_kernels(args.fixtures);
  gc::point_python_backends(report, args.fixtures, args.rehearse_on_cpu);
  try {
    if (args.rehearse_on_cpu) {
      report.add("host", "device", gc::Status::info,
                 "CPU rehearsal (no timings), torch " TORCH_VERSION);
      gc::check_loader(report, args.fixtures, c10::Device(c10::kCPU));
      gc::check_backends(report, 0, c10::Device(c10::kCPU));
      gc::check_layers(report, args.fixtures, c10::Device(c10::kCPU), 0);
      gc::check_real_flash_attn4(report, c10::Device(c10::kCPU));
    } else if (!at::hasCUDA()) {
      report.add("host", "CUDA device", gc::Status::fail,
                 "no CUDA device is visible to this process (torch " TORCH_VERSION
                 " with CUDA, but at::hasCUDA() is false): run this on a GPU host, or pass "
                 "--rehearse-on-cpu");
      write_table(args.table, report);
      return 2;
    } else {
      const auto* device = at::cuda::getCurrentDeviceProperties();
      const int sm = device->major * 10 + device->minor;
      report.add("host", "device", gc::Status::info,
                 std::string(device->name) + ", sm" + std::to_string(sm) + ", " +
                     std::to_string(device->multiProcessorCount) + " SMs, torch " TORCH_VERSION);
      const c10::Device cuda(c10::kCUDA, 0);
      gc::check_loader(report, args.fixtures, cuda);
      gc::check_backends(report, sm, cuda);
      gc::check_layers(report, args.fixtures, cuda, sm);
      gc::check_real_flash_attn4(report, cuda);
      if (args.timings) {
        gc::time_dispatch_overhead(report);
        gc::time_realistic_shape(report);
      }
    }
  } catch (const std::exception& error) {
    report.add("host", "unexpected error", gc::Status::fail, gc::error_text(error));
  }
  if (!write_table(args.table, report)) {
    std::fprintf(stderr, "kh_gpu_check: cannot write %s\n", args.table.c_str());
    return 2;
  }
  std::fprintf(stderr, "kh_gpu_check: table written to %s\n", args.table.c_str());
  return report.failed() ? 1 : 0;
}
