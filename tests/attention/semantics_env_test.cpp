// DIFFUSERS_ATTN_BACKEND and DIFFUSERS_ATTN_CHECKS as read at start-up by a fresh process
// (kh_attention_env_probe).
#include <catch2/catch.hpp>

#include <string>

#include "support/process.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string probe(const kernelhub::testing::EnvOverrides& env) {
  const auto result =
      kernelhub::testing::run_command({std::string(KH_BIN_DIR) + "/kh_attention_env_probe"}, env);
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return result.out;
}

std::string line(const std::string& out, const std::string& key) {
  const auto start = out.find(key + "=");
  if (start == std::string::npos) return "<missing>";
  const auto end = out.find('\n', start);
  return out.substr(start + key.size() + 1, end - start - key.size() - 1);
}

}  // namespace

TEST_CASE("without DIFFUSERS_ATTN_BACKEND the backend is native", "[attention][env]") {
  const auto out = probe({{"DIFFUSERS_ATTN_BACKEND", ""}, {"DIFFUSERS_ATTN_CHECKS", ""}});
  CHECK(line(out, "active") == "native");
  CHECK(line(out, "checks") == "0");
  CHECK(line(out, "dispatch") == "ok");
  CHECK(line(out, "layer") == "ok");
}

TEST_CASE("DIFFUSERS_ATTN_BACKEND sets the start-up backend of dispatches and unset layers",
          "[attention][env]") {
  const auto out = probe({{"DIFFUSERS_ATTN_BACKEND", "_native_flash"}});
  CHECK(line(out, "active") == "_native_flash");
  CHECK_THAT(line(out, "dispatch"),
             StartsWith("UnsupportedArgument: `attn_mask` is not supported for native flash"));
  CHECK_THAT(line(out, "layer"), StartsWith("UnsupportedArgument:"));
}

TEST_CASE("DIFFUSERS_ATTN_BACKEND is case-sensitive and an unknown value fails at first use",
          "[attention][env]") {
  const auto out = probe({{"DIFFUSERS_ATTN_BACKEND", "NATIVE"}});
  CHECK_THAT(line(out, "dispatch"),
             StartsWith("UnknownBackend: DIFFUSERS_ATTN_BACKEND=NATIVE: Backend NATIVE is not "
                        "registered.") &&
                 Contains("Did you mean native?"));
  CHECK_THAT(line(out, "layer"), StartsWith("UnknownBackend: DIFFUSERS_ATTN_BACKEND=NATIVE"));
  // A call that names its backend is not affected.
  CHECK_THAT(line(out, "mixed_dtypes"), StartsWith("other: native failed:"));
}

TEST_CASE("the start-up backend is activated on first use", "[attention][env]") {
  const auto out = probe({{"DIFFUSERS_ATTN_BACKEND", "_native_xla"}});
  CHECK(line(out, "active") == "_native_xla");
  CHECK_THAT(line(out, "dispatch"), StartsWith("BackendUnavailable: _native_xla needs"));
}

TEST_CASE("DIFFUSERS_ATTN_CHECKS takes 1/ON/YES/TRUE in any case", "[attention][env]") {
  for (const std::string value : {"1", "on", "Yes", "TRUE", "true"}) {
    CAPTURE(value);
    const auto out = probe({{"DIFFUSERS_ATTN_CHECKS", value}});
    CHECK(line(out, "checks") == "1");
    CHECK(line(out, "mixed_dtypes") ==
          "InvalidInput: Query, key, and value must have the same dtype.");
  }
  for (const std::string value : {"0", "y", "t", "no", "enabled"}) {
    CAPTURE(value);
    const auto out = probe({{"DIFFUSERS_ATTN_CHECKS", value}});
    CHECK(line(out, "checks") == "0");
    CHECK_THAT(line(out, "mixed_dtypes"), StartsWith("other: native failed:"));
  }
}
