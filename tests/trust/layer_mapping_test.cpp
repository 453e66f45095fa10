// The layer mapping file (trust/layer_mapping.hpp): both formats to one shape, every source
// form, kernels' mode rules, and refusals that name the entry and the fix.
#include "kernelhub/trust/layer_mapping.hpp"

#include <fstream>

#include <catch2/catch.hpp>

#include "support/process.hpp"

using namespace kernelhub::trust;
using kernelhub::ErrorCode;

namespace {

constexpr const char* kToml = R"(
[[layers]]
name = "RMSNorm"
device = "cuda"
capability = [80, 90]
mode = "inference"
repo = "kernels-community/layer-norm"
layer = "LlamaRMSNorm"
version = 1

[[layers]]
name = "RMSNorm"
device = "cuda"
capability = [80, 90]
mode = "training"
repo = "kernels-community/liger-kernels"
layer = "LigerRMSNorm"
revision = "v3"

[[layers]]
name = "SiluAndMul"
device = "cpu"
repo = "kernels-community/activation"
layer = "SiluAndMul"
lockfile = "kernels.lock"

[[layers]]
name = "rotary_pos_emb"
device = "cpu"
mode = "inference+torch_compile"
repo = "kernels-community/rotary"
layer = "apply_rotary_transformers"
locked = true

[[layers]]
name = "GeLU"
device = "xpu"
path = "/opt/builds/activation"
layer = "Gelu"
)";

std::string error_of(std::string_view toml) {
  auto parsed = parse_layer_mapping_toml(toml, "/etc/app", "layers.toml");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().code == ErrorCode::invalid_argument);
  return parsed.error().message;
}

std::string entry(std::string_view extra) {
  return "[[layers]]\nname = \"SiLU\"\ndevice = \"cuda\"\nrepo = \"kernels-community/activation\"\n"
         "layer = \"Silu\"\n" +
         std::string(extra);
}

}  // namespace

TEST_CASE("a TOML mapping gives every source form and mode", "[layer_mapping]") {
  auto parsed = parse_layer_mapping_toml(kToml, "/etc/app", "layers.toml");
  REQUIRE(parsed);
  const auto& entries = parsed->entries;
  REQUIRE(entries.size() == 5);

  CHECK(entries[0].name == "RMSNorm");
  CHECK(entries[0].device == "cuda");
  REQUIRE(entries[0].capability);
  CHECK(*entries[0].capability == CapabilityRange{80, 90});
  CHECK(entries[0].mode == LayerMode::inference);
  CHECK(entries[0].source.kind == LayerSource::Kind::hub);
  CHECK(entries[0].source.repo->str() == "kernels-community/layer-norm");
  CHECK(entries[0].source.version == 1u);
  CHECK(entries[0].source.layer == "LlamaRMSNorm");

  CHECK(entries[1].mode == LayerMode::training);
  CHECK(entries[1].source.revision == "v3");
  CHECK_FALSE(entries[1].source.version);

  CHECK(entries[2].source.kind == LayerSource::Kind::locked);
  CHECK(entries[2].source.lockfile == std::filesystem::path("/etc/app/kernels.lock"));
  CHECK(entries[2].mode == LayerMode::fallback);
  CHECK_FALSE(entries[2].capability);

  CHECK(entries[3].source.kind == LayerSource::Kind::locked);
  CHECK_FALSE(entries[3].source.lockfile);
  CHECK(entries[3].mode == (LayerMode::inference | LayerMode::torch_compile));

  CHECK(entries[4].source.kind == LayerSource::Kind::local);
  CHECK(entries[4].source.path == std::filesystem::path("/opt/builds/activation"));
  CHECK_FALSE(entries[4].source.repo);
  CHECK(entries[4].source.layer == "Gelu");
}

TEST_CASE("the JSON form parses to the same entries", "[layer_mapping]") {
  const std::string json = R"({"layers": [
    {"name": "RMSNorm", "device": "cuda", "capability": [80, 90], "mode": "inference",
     "repo": "kernels-community/layer-norm", "layer": "LlamaRMSNorm", "version": 1},
    {"name": "SiluAndMul", "device": "cpu", "repo": "kernels-community/activation",
     "layer": "SiluAndMul", "lockfile": "kernels.lock"}]})";
  auto from_json = parse_layer_mapping_json(json, "/etc/app", "layers.json");
  auto from_toml = parse_layer_mapping_toml(kToml, "/etc/app", "layers.toml");
  REQUIRE(from_json);
  REQUIRE(from_toml);
  REQUIRE(from_json->entries.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& a = from_json->entries[i];
    const auto& b = from_toml->entries[i * 2];
    CHECK(a.name == b.name);
    CHECK(a.device == b.device);
    CHECK(a.capability == b.capability);
    CHECK(a.mode == b.mode);
    CHECK(a.source == b.source);
  }
}

TEST_CASE("read_layer_mapping picks the format by extension and resolves paths beside the file",
          "[layer_mapping]") {
  kernelhub::testing::TempDir dir;
  const auto toml = dir.path() / "layers.toml";
  std::ofstream(toml) << entry("lockfile = \"locks/kernels.lock\"\n");
  auto parsed = read_layer_mapping(toml);
  REQUIRE(parsed);
  CHECK(parsed->entries.at(0).source.lockfile == dir.path() / "locks/kernels.lock");

  const auto other = dir.path() / "layers.yaml";
  std::ofstream(other) << "layers: []\n";
  auto refused = read_layer_mapping(other);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("ends in .toml or .json"));
  CHECK_FALSE(read_layer_mapping(dir.path() / "missing.toml"));
}

TEST_CASE("modes follow kernels' rules", "[layer_mapping]") {
  CHECK(parse_layer_mode("fallback").value() == LayerMode::fallback);
  CHECK(parse_layer_mode("training+torch_compile").value() ==
        (LayerMode::training | LayerMode::torch_compile));
  CHECK(to_string(LayerMode::inference | LayerMode::torch_compile) == "inference+torch_compile");
  CHECK_THAT(parse_layer_mode("inference+training").error().message,
             Catch::Contains("exclude each other"));
  CHECK_THAT(parse_layer_mode("fallback+inference").error().message,
             Catch::Contains("cannot be combined"));
  CHECK_THAT(parse_layer_mode("torch_compile").error().message,
             Catch::Contains("needs inference or training"));
  CHECK_THAT(parse_layer_mode("eval").error().message, Catch::Contains("unknown mode 'eval'"));
  CHECK(check_layer_mode(LayerMode::training | LayerMode::torch_compile));
  CHECK_THAT(check_layer_mode(static_cast<LayerMode>(0)).error().message,
             Catch::Contains("not a mode"));
  CHECK_THAT(check_layer_mode(LayerMode::inference | LayerMode::training).error().message,
             Catch::Contains("exclude each other"));
}

TEST_CASE("bad entries are refused with the entry and the fix", "[layer_mapping]") {
  CHECK_THAT(error_of(entry("")), Catch::Contains("layers entry 1 (SiLU): give exactly one of"));
  CHECK_THAT(error_of(entry("version = 1\nrevision = \"main\"\n")),
             Catch::Contains("exactly one of"));
  CHECK_THAT(error_of(entry("version = -1\n")), Catch::Contains("non-negative integer"));
  CHECK_THAT(error_of(entry("version = 1\ncapability = [90, 80]\n")),
             Catch::Contains("0 <= min <= max"));
  CHECK_THAT(error_of(entry("version = 1\ncapability = [80]\n")),
             Catch::Contains("two integers of major*10+minor"));
  CHECK_THAT(error_of(entry("version = 1\nmode = \"training+inference\"\n")),
             Catch::Contains("exclude each other"));
  CHECK_THAT(error_of(entry("version = 1\ncolour = \"red\"\n")),
             Catch::Contains("unknown key `colour`"));
  CHECK_THAT(error_of(entry("revision = \"a..b\"\n")), Catch::Contains("`revision`"));
  CHECK_THAT(error_of(entry("locked = false\n")), Catch::Contains("may only be true"));
  CHECK_THAT(error_of(entry("path = \"/x\"\n")), Catch::Contains("a local `path` takes no `repo`"));
  CHECK_THAT(error_of("[[layers]]\nname = \"SiLU\"\ndevice = \"gpu\"\nrepo = \"a/b\"\nlayer = "
                      "\"Silu\"\nversion = 1\n"),
             Catch::Contains("unsupported device type 'gpu'"));
  CHECK_THAT(error_of("[[layers]]\nname = \"SiLU\"\ndevice = \"cpu\"\ncapability = [80, 90]\n"
                      "repo = \"a/b\"\nlayer = \"Silu\"\nversion = 1\n"),
             Catch::Contains("applies to cuda and rocm only"));
  CHECK_THAT(error_of("[[layers]]\nname = \"SiLU\"\ndevice = \"cpu\"\nrepo = \"a/b\"\nlayer = "
                      "\"os.system\"\nversion = 1\n"),
             Catch::Contains("Python identifier"));
  CHECK_THAT(error_of("[[layers]]\nname = \"bad name\"\ndevice = \"cpu\"\n"),
             Catch::Contains("`name` must be"));
  CHECK_THAT(error_of("[[layers]]\nname = \"SiLU\"\ndevice = \"cpu\"\nrepo = \"no-slash\"\nlayer = "
                      "\"Silu\"\nversion = 1\n"),
             Catch::Contains("`repo`"));
  CHECK_THAT(error_of("layers = 3\n"), Catch::Contains("array of tables"));
  CHECK_THAT(error_of("extra = 1\n"), Catch::Contains("unknown key `extra`"));
  CHECK_THAT(error_of("[[layers]\n"), Catch::Contains("invalid TOML"));
  // The same slot twice is a mistake, not an override.
  CHECK_THAT(error_of(entry("version = 1\n") + entry("version = 2\n")),
             Catch::Contains("layers entry 2: maps SiLU on cuda in mode fallback a second time"));
}

TEST_CASE("mapping files are bounded", "[layer_mapping]") {
  std::string many;
  for (std::size_t i = 0; i <= kMaxLayerMappingEntries; ++i) {
    many += R"({"name": "L)" + std::to_string(i) +
            R"(", "device": "cpu", "repo": "a/b", "layer": "X", "version": 1},)";
  }
  many.pop_back();
  auto too_many = parse_layer_mapping_json(R"({"layers": [)" + many + "]}", "", "m.json");
  REQUIRE_FALSE(too_many);
  CHECK_THAT(too_many.error().message, Catch::Contains("more than 4096 entries"));

  auto too_deep =
      parse_layer_mapping_json(std::string(64, '[') + std::string(64, ']'), "", "m.json");
  REQUIRE_FALSE(too_deep);
  CHECK_THAT(too_deep.error().message, Catch::Contains("nested deeper"));

  auto too_big =
      parse_layer_mapping_json(std::string(kMaxLayerMappingBytes + 1, ' '), "", "m.json");
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == ErrorCode::invalid_argument);
}
