// KernelMapping: kernels' register_kernel_mapping and selection rules (devices, the smallest
// capability interval, the mode fallback chain, replacement on re-registration), the file
// form, and the built-in mapping.
#include <array>
#include <fstream>

#include "kernelhub/kernelize.hpp"
#include "support/process.hpp"

#include <catch2/catch.hpp>

namespace kl = kernelhub::layers;
using Outcome = kl::Selection::Outcome;
using kl::Mode;

namespace {

kl::LayerRepository repo(const std::string& name, std::uint64_t version = 1) {
  return kl::hub_layer("org/" + name, "Layer", version);
}

std::string chosen(const kl::KernelMapping& mapping, std::string_view layer,
                   std::string_view device, std::optional<int> capability, Mode mode) {
  const auto selection = mapping.select(layer, device, capability, mode);
  if (selection.outcome != Outcome::found) return std::string(kl::to_string(selection.outcome));
  return selection.repository->repo;
}

}  // namespace

TEST_CASE("selection walks layer, device, capability and mode as kernels does", "[mapping]") {
  kl::KernelMapping mapping;
  mapping.add("RMSNorm", {"cuda"}, repo("any-cuda"));
  mapping.add("RMSNorm", {"cuda", kl::CapabilityRange{80, 90}}, repo("ampere-hopper"));
  mapping.add("RMSNorm", {"cuda", kl::CapabilityRange{86, 89}}, repo("ada"));
  mapping.add("RMSNorm", {"rocm", kl::CapabilityRange{90, 95}}, repo("mi300"));
  mapping.add("RMSNorm", {"cpu"}, {{Mode::inference, repo("cpu-inference")}});

  CHECK(chosen(mapping, "LayerNorm", "cuda", 80, Mode::inference) == "no_layer");
  CHECK(chosen(mapping, "RMSNorm", "xpu", std::nullopt, Mode::inference) == "no_device");
  // The smallest interval holding the capability wins.
  CHECK(chosen(mapping, "RMSNorm", "cuda", 75, Mode::inference) == "org/any-cuda");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 80, Mode::inference) == "org/ampere-hopper");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 86, Mode::inference) == "org/ada");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 90, Mode::inference) == "org/ampere-hopper");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 100, Mode::inference) == "org/any-cuda");
  // Unknown capability (no CUDA runtime to ask): only an interval over every capability.
  CHECK(chosen(mapping, "RMSNorm", "cuda", std::nullopt, Mode::inference) == "org/any-cuda");
  CHECK(chosen(mapping, "RMSNorm", "rocm", 80, Mode::inference) == "no_compatible_properties");
  CHECK(chosen(mapping, "RMSNorm", "rocm", 94, Mode::inference) == "org/mi300");
  // cpu holds inference only: training finds no mode.
  CHECK(chosen(mapping, "RMSNorm", "cpu", std::nullopt, Mode::inference) == "org/cpu-inference");
  CHECK(chosen(mapping, "RMSNorm", "cpu", std::nullopt, Mode::training) == "no_compatible_mode");
}

TEST_CASE("the mode chain is kernels' _MODE_FALLBACK_PRIORITY", "[mapping]") {
  const std::array<Mode, 5> all = {Mode::inference, Mode::inference | Mode::torch_compile,
                                   Mode::training, Mode::training | Mode::torch_compile,
                                   Mode::fallback};
  // Register every mode, then drop them one by one from the front of each chain: the next
  // in the chain answers.
  struct Case {
    Mode requested;
    std::vector<Mode> chain;
  };
  const std::vector<Case> cases = {
      {Mode::inference,
       {Mode::inference, Mode::inference | Mode::torch_compile, Mode::training,
        Mode::training | Mode::torch_compile, Mode::fallback}},
      {Mode::training, {Mode::training, Mode::training | Mode::torch_compile, Mode::fallback}},
      {Mode::inference | Mode::torch_compile,
       {Mode::inference | Mode::torch_compile, Mode::training | Mode::torch_compile,
        Mode::fallback}},
      {Mode::training | Mode::torch_compile,
       {Mode::training | Mode::torch_compile, Mode::fallback}},
  };
  for (const auto& c : cases) {
    for (std::size_t skip = 0; skip <= c.chain.size(); ++skip) {
      kl::ModeRepositories repositories;
      for (const Mode mode : all) {
        const bool dropped = std::find(c.chain.begin(), c.chain.begin() + static_cast<long>(skip),
                                       mode) != c.chain.begin() + static_cast<long>(skip);
        if (!dropped) {
          repositories.emplace_back(mode, repo("m" + std::to_string(static_cast<unsigned>(mode))));
        }
      }
      kl::KernelMapping mapping;
      mapping.add("L", {"cpu"}, repositories);
      const auto selection = mapping.select("L", "cpu", std::nullopt, c.requested);
      INFO("requested " << kl::to_string(c.requested) << ", first " << skip
                        << " of its chain dropped");
      if (skip == c.chain.size()) {
        CHECK(selection.outcome == Outcome::no_compatible_mode);
      } else {
        REQUIRE(selection.outcome == Outcome::found);
        CHECK(selection.repository_mode == c.chain[skip]);
      }
    }
  }
  kl::KernelMapping mapping;
  CHECK_THROWS_AS(mapping.select("L", "cpu", std::nullopt, Mode::fallback), kl::MappingError);
}

TEST_CASE("registering again replaces the device's or interval's repositories", "[mapping]") {
  kl::KernelMapping mapping;
  mapping.add("SiLU", {"cpu"}, {{Mode::inference, repo("a")}, {Mode::training, repo("b")}});
  mapping.add("SiLU", {"cpu"}, repo("c"));  // replaces both modes, as a new dict does
  CHECK(chosen(mapping, "SiLU", "cpu", std::nullopt, Mode::training) == "org/c");
  CHECK(mapping.select("SiLU", "cpu", std::nullopt, Mode::inference).repository_mode ==
        Mode::fallback);

  mapping.add("SiLU", {"cuda", kl::CapabilityRange{80, 90}}, repo("d"));
  mapping.add("SiLU", {"cuda", kl::CapabilityRange{70, 90}}, repo("e"));
  mapping.add("SiLU", {"cuda", kl::CapabilityRange{80, 90}}, repo("f"));  // same interval
  CHECK(chosen(mapping, "SiLU", "cuda", 85, Mode::inference) == "org/f");
  CHECK(chosen(mapping, "SiLU", "cuda", 75, Mode::inference) == "org/e");

  kl::KernelMapping other;
  other.add("SiLU", {"cuda", kl::CapabilityRange{70, 90}}, repo("g"));
  other.add("GeLU", {"cpu"}, repo("h"));
  mapping.merge(other);
  CHECK(chosen(mapping, "SiLU", "cuda", 75, Mode::inference) == "org/g");
  CHECK(chosen(mapping, "SiLU", "cuda", 85, Mode::inference) == "org/f");
  CHECK(chosen(mapping, "GeLU", "cpu", std::nullopt, Mode::inference) == "org/h");
  // c (cpu), f and g (cuda intervals), h (GeLU): the replaced d and e are gone.
  CHECK(mapping.repositories().size() == 4);
}

TEST_CASE("bad devices, intervals and modes are refused where they are added", "[mapping]") {
  kl::KernelMapping mapping;
  CHECK_THROWS_AS(mapping.add("L", {"gpu"}, repo("a")), kl::MappingError);
  CHECK_THROWS_AS(mapping.add("L", {"cpu", kl::CapabilityRange{80, 90}}, repo("a")),
                  kl::MappingError);
  CHECK_THROWS_AS(mapping.add("L", {"cuda", kl::CapabilityRange{90, 80}}, repo("a")),
                  kl::MappingError);
  CHECK_THROWS_AS(mapping.add("L", {"cpu"}, {{Mode::inference | Mode::training, repo("a")}}),
                  kl::MappingError);
  CHECK_THROWS_AS(kl::hub_layer("not a repo", "L", 1), kl::MappingError);
  CHECK_THROWS_AS(kl::hub_layer_at("org/x", "L", "a..b"), kl::MappingError);
  CHECK(mapping.empty());
}

TEST_CASE("a mapping file groups one layer's modes per device as a dict does", "[mapping]") {
  kernelhub::testing::TempDir dir;
  const auto path = dir.path() / "layers.toml";
  std::ofstream(path) << R"(
[[layers]]
name = "RMSNorm"
device = "cpu"
mode = "inference"
repo = "org/infer"
layer = "RMSNorm"
version = 1

[[layers]]
name = "RMSNorm"
device = "cpu"
mode = "training"
repo = "org/train"
layer = "RMSNorm"
version = 1

[[layers]]
name = "RMSNorm"
device = "cuda"
capability = [80, 89]
repo = "org/cuda"
layer = "LlamaRMSNorm"
version = 2
)";
  const auto mapping = kl::KernelMapping::from_file(path);
  CHECK(chosen(mapping, "RMSNorm", "cpu", std::nullopt, Mode::inference) == "org/infer");
  CHECK(chosen(mapping, "RMSNorm", "cpu", std::nullopt, Mode::training) == "org/train");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 86, Mode::inference) == "org/cuda");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 90, Mode::inference) == "no_compatible_properties");
  CHECK(mapping.repositories().size() == 3);

  std::ofstream(dir.path() / "bad.json") << R"({"layers": [{"name": "X"}]})";
  try {
    kl::KernelMapping::from_file(dir.path() / "bad.json");
    FAIL("a bad mapping file was accepted");
  } catch (const kl::MappingError& error) {
    CHECK_THAT(error.what(), Catch::Contains("bad.json: layers entry 1 (X): `device` is missing"));
  }
}

TEST_CASE("the built-in mapping mirrors transformers' native entries", "[mapping]") {
  const auto mapping = kl::KernelMapping::builtin();
  const auto inference = Mode::inference;
  for (const auto& [name, layer] :
       std::vector<std::pair<std::string, std::string>>{{"SiLU", "Silu"},
                                                        {"GeLU", "Gelu"},
                                                        {"GeluTanh", "GeluTanh"},
                                                        {"FastGELU", "FastGELU"},
                                                        {"NewGELU", "NewGELU"},
                                                        {"QuickGELU", "QuickGELU"}}) {
    const auto selection = mapping.select(name, "cuda", 90, inference);
    REQUIRE(selection.outcome == Outcome::found);
    CHECK(selection.repository->describe() ==
          "kernels-community/activation version 1, layer " + layer);
    CHECK(selection.repository_mode == (Mode::inference | Mode::torch_compile));
    // transformers maps them for inference only: training finds no mode.
    CHECK(mapping.select(name, "cuda", 90, Mode::training).outcome == Outcome::no_compatible_mode);
  }
  CHECK(chosen(mapping, "RMSNorm", "xpu", std::nullopt, inference) == "kernels-community/rmsnorm");
  CHECK(chosen(mapping, "RMSNorm", "cuda", 90, inference) == "no_device");  // liger: Python only
  CHECK(chosen(mapping, "rotary_pos_emb", "cuda", 90, Mode::training) ==
        "kernels-community/rotary");
  CHECK(chosen(mapping, "rotary_pos_emb", "xpu", std::nullopt, Mode::training) ==
        "no_compatible_mode");
}
