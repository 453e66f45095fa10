#include <catch2/catch.hpp>

#include "kernelhub/fetch/ref.hpp"

using kernelhub::ErrorCode;
using kernelhub::fetch::Ref;

TEST_CASE("a Ref is a version or a revision, exactly one, valid where it is built", "[fetch]") {
  auto v1 = Ref::version(1);
  REQUIRE(v1);
  CHECK(v1->is_version());
  CHECK(v1->version_number() == 1u);
  CHECK_FALSE(v1->revision_name());
  CHECK(v1->ref_name() == "v1");
  CHECK(v1->describe() == "v1");

  auto main = Ref::revision("main");
  REQUIRE(main);
  CHECK_FALSE(main->is_version());
  CHECK(main->revision_name() == "main");
  CHECK(main->ref_name() == "main");
  CHECK(main->describe() == "@main");

  for (const auto& bad : {Ref::version(-1), Ref::version(Ref::kMaxVersion + 1)}) {
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == ErrorCode::invalid_argument);
  }
  CHECK(Ref::version(Ref::kMaxVersion));
  for (const char* bad : {"", "..", "a/../b", "main\n<3>x", "x%2Fy", "refs/heads/"}) {
    INFO(bad);
    CHECK_FALSE(Ref::revision(bad));
  }
}

TEST_CASE("Ref::one_of refuses both and neither, naming the two", "[fetch]") {
  auto both = Ref::one_of(1, "main", "--version or --revision");
  REQUIRE_FALSE(both);
  CHECK(both.error().message == "give exactly one of --version or --revision");
  CHECK_FALSE(Ref::one_of(std::nullopt, std::nullopt, "x or y"));
  CHECK(Ref::one_of(2, std::nullopt, "x or y")->ref_name() == "v2");
  CHECK(Ref::one_of(std::nullopt, "v2", "x or y")->describe() == "@v2");
  // v2 the version and "v2" the branch name are different requests.
  CHECK(*Ref::version(2) != *Ref::revision("v2"));
}
