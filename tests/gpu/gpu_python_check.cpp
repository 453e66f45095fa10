// The backends whose kernels are Python, in kh_gpu_check: their fixture kernels (flash-attn4,
// sage-blackwell) beside the others in LOCAL_KERNELS, the host Python's own sageattention
// when it has one >= 2.1.1 (else the fixture package), and, when the host's Python has
// flash-attn-4 with nvidia-cutlass-dsl, the real FA4 against SDPA on the GPU.
#include <ATen/TensorOperators.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include <cstdlib>
#include <string>

#include "gpu/gpu_check.hpp"
#include "kernelhub/attention/requirements.hpp"
#include "kernelhub/provider/local_kernels.hpp"
#include "kernelhub/python/import_kernel.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/variant/python_probe.hpp"

namespace kernelhub::gpu_check {
namespace {

namespace kpy = kernelhub::python;

// What the host's python says to `code` (stdout, trimmed), or empty when it fails.
std::string ask_python(const std::string& code) {
  const auto env = util::Environment::from_process();
  const auto python = variant::find_python(env);
  if (!python) return {};
  auto said = variant::run_python(*python, {"-c", code}, env, std::chrono::seconds(60), 4096);
  if (!said) return {};
  std::string text = *said;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

void point_python_backends(Report& report, const std::filesystem::path& fixtures, bool rehearse) {
  const std::string sage = ask_python(
      "import importlib.metadata as m\n"
      "try: print(m.version('sageattention'))\n"
      "except Exception: print('')\n");
  if (!sage.empty() && provider::version_at_least(sage, "2.1.1")) {
    report.add("python", "sageattention", Status::info, "the host's " + sage);
  } else {
    ::setenv("KERNELHUB_PYTHONPATH", (fixtures / "python-site").c_str(), 1);
    report.add("python", "sageattention", Status::info,
               "the fixture package (the host's Python has " +
                   (sage.empty() ? std::string("none") : sage) + ", Diffusers needs >= 2.1.1)");
  }
  if (rehearse) {
    // Triton's interpreter runs @triton.jit kernels on CPU tensors; the Python backends'
    // CUDA requirement is relaxed for the rehearsal only.
    ::setenv("TRITON_INTERPRET", "1", 1);
    attention::detail::relax_device_requirements(true);
  }
}

void check_real_flash_attn4(Report& report, c10::Device device) {
  const std::string subject = "flash-attn-4 (the host's, not a fixture)";
  if (device.is_cpu()) {
    report.add("python", subject, Status::not_applicable, "needs a GPU (sm90+)");
    return;
  }
  const std::string found = ask_python(
      "import importlib.util as u\n"
      "print('yes' if u.find_spec('flash_attn') and u.find_spec('cutlass') else '')\n");
  if (found.empty()) {
    report.add("python", subject, Status::not_applicable,
               "the host's Python has no flash-attn-4 with nvidia-cutlass-dsl (pip install "
               "flash-attn-4 nvidia-cutlass-dsl)");
    return;
  }
  try {
    const auto fa4 = kpy::import_installed("flash_attn.cute");
    const auto options = at::TensorOptions().device(device).dtype(at::kBFloat16);
    const auto q = at::randn({2, 256, 8, 128}, options);
    const auto k = at::randn({2, 256, 8, 128}, options);
    const auto v = at::randn({2, 256, 8, 128}, options);
    const auto result = fa4.call("flash_attn_func", {q, k, v}, {{"causal", true}});
    const auto out =
        result.isTuple() ? result.toTupleRef().elements()[0].toTensor() : result.toTensor();
    const auto reference = at::scaled_dot_product_attention(
                               q.transpose(1, 2).to(at::kFloat), k.transpose(1, 2).to(at::kFloat),
                               v.transpose(1, 2).to(at::kFloat), {}, 0.0, true)
                               .transpose(1, 2);
    const auto max = (out.to(at::kFloat) - reference).abs().max().item<double>();
    report.add("python", subject, max <= 2e-2 ? Status::pass : Status::fail,
               "bf16 causal, max " + format_number(max, 3) + " (bound 0.02)");
  } catch (const std::exception& error) {
    report.add("python", subject, Status::fail, error_text(error));
  }
}

}  // namespace kernelhub::gpu_check
