// kh_gpu_check: the checks scripts/gpu-check.sh runs on a GPU host, as one table. Each
// section adds rows; a row that fails makes the run fail, one that cannot apply on this
// device says why.
#pragma once

#include <c10/core/Device.h>

#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace kernelhub::gpu_check {

enum class Status { pass, fail, not_applicable, info };

struct Row {
  std::string section;  // "loader", "backend", "overhead", "timing", "host"
  std::string subject;  // what was checked: a backend and case, a variant, a timing
  Status status = Status::info;
  std::string detail;  // the measurement or the reason
};

class Report {
 public:
  void add(std::string section, std::string subject, Status status, std::string detail);
  bool failed() const;
  // A Markdown table, one row per check, then the pass/fail counts.
  std::string markdown() const;
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<Row> rows_;
};

// The fixture variants through the loader: on a GPU the CUDA build is chosen, registers CUDA
// kernels and no CPU kernel, and each op computes what ATen computes there. On the CPU (the
// rehearsal) the same for the CPU build.
void check_loader(Report& report, const std::filesystem::path& fixtures, c10::Device device);

// Every dispatcher backend against ATen SDPA on the same device: fp16 and bf16, plain, GQA,
// causal and a key-padding (varlen) mask. LOCAL_KERNELS must name the fixture builds. `sm`
// is the device's compute capability (90 for sm90; 0 for the CPU rehearsal): it decides
// which backends must run.
void check_backends(Report& report, int sm, c10::Device device);

// The Python-backed backends' environment, set before anything starts Python: the fixture
// `sageattention` on KERNELHUB_PYTHONPATH unless the host's Python has sageattention >=
// 2.1.1 (a row says which); in the rehearsal, TRITON_INTERPRET and the relaxed device
// requirement.
void point_python_backends(Report& report, const std::filesystem::path& fixtures, bool rehearse);

// The host's own flash-attn-4 (CuTe DSL) through kernelhub's Python runtime against SDPA, when
// its Python has flash-attn-4 and nvidia-cutlass-dsl; n/a with the reason otherwise.
void check_real_flash_attn4(Report& report, c10::Device device);

// kernelize on the device: a Llama block bound to the fixture layer kernels' builds for it
// (native adapters and a Python layer) against the same block on ATen, fp32 and bf16. `sm`
// as for check_backends.
void check_layers(Report& report, const std::filesystem::path& fixtures, c10::Device device,
                  int sm);

// Host time dispatch_attention adds over a direct ATen call on tiny CUDA tensors.
void time_dispatch_overhead(Report& report);

// Native flash / cuDNN / efficient through the dispatcher against the same ATen kernels
// called directly, at B=2, S=4096, H=24, D=128 in bf16.
void time_realistic_shape(Report& report);

// Helpers shared by the sections. error_text: what() without torch's C++ backtrace.
std::string error_text(const std::exception& error);
std::string format_ms(double ms);
std::string format_number(double value, int digits);

}  // namespace kernelhub::gpu_check
