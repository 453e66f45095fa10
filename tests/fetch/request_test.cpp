#include <catch2/catch.hpp>

#include "kernelhub/fetch/flight_key.hpp"
#include "kernelhub/proto/fetch_wire.hpp"

using namespace kernelhub;
using fetch::Ref;
using fetch::Request;
using fetch::VariantChoice;

namespace {

const trust::RepoId kRelu{"kernels-community", "relu"};
const std::string kCommit(40, 'a');

variant::Platform cpu() {
  variant::Platform p;
  p.torch_major = 2;
  p.torch_minor = 15;
  p.backend = "cpu";
  return p;
}

}  // namespace

TEST_CASE("a variant choice is the best, one named, or all: never a name and all", "[fetch]") {
  CHECK(VariantChoice().is_best());
  CHECK(VariantChoice::all().is_all());
  CHECK(VariantChoice::named("torch215-cxx11-cpu-x86_64-linux")->name() ==
        "torch215-cxx11-cpu-x86_64-linux");
  auto both = VariantChoice::one_of("x", true);
  REQUIRE_FALSE(both);
  CHECK(both.error().code == ErrorCode::invalid_argument);
  for (const char* bad : {"", "a/b", "a\nb"}) CHECK_FALSE(VariantChoice::named(bad));
  CHECK(VariantChoice::one_of(std::nullopt, false)->is_best());
}

TEST_CASE("a locked request names its commit", "[fetch]") {
  auto locked = Request::locked(kRelu, kCommit, {{{"v", "sha256-x"}}});
  REQUIRE(locked);
  CHECK(locked->ref.revision_name() == kCommit);
  REQUIRE(locked->lock());
  CHECK(locked->lock()->variant_hashes.at("v") == "sha256-x");
  CHECK_FALSE(Request::locked(kRelu, "main", {}));
  CHECK(Request(kRelu, *Ref::version(1)).describe() == "kernels-community/relu v1");
}

TEST_CASE("requests share a flight only when repo, ref, selection, lock and mode agree",
          "[fetch]") {
  Request a(kRelu, *Ref::version(1));
  a.target_platform = cpu();
  const fetch::FlightKey key{{a.repo, a.ref}, fetch::Selection::of(a), false};
  CHECK(key == fetch::FlightKey{{a.repo, a.ref}, fetch::Selection::of(a), false});
  CHECK(key != fetch::FlightKey{{a.repo, a.ref}, fetch::Selection::of(a), true});

  Request other_platform = a;
  other_platform.target_platform->torch_minor = 14;
  Request named = a;
  named.variants = *VariantChoice::named("torch215-cxx11-cpu-x86_64-linux");
  Request by_branch(kRelu, *Ref::revision("v1"));
  by_branch.target_platform = cpu();
  auto locked = *Request::locked(kRelu, kCommit, {});
  locked.target_platform = cpu();
  Request unlocked_same_commit(kRelu, *Ref::revision(kCommit));
  unlocked_same_commit.target_platform = cpu();
  for (const Request* r : {&other_platform, &named, &by_branch}) {
    CHECK(fetch::FlightKey{{r->repo, r->ref}, fetch::Selection::of(*r), false} != key);
  }
  CHECK(fetch::Selection::of(locked) != fetch::Selection::of(unlocked_same_commit));
}

TEST_CASE("a request goes over the wire and back unchanged", "[fetch][proto]") {
  Request request(kRelu, *Ref::version(3));
  request.target_platform = cpu();
  const auto wire = proto::to_wire(request, 7, false, {{"HF_HUB_OFFLINE", ""}});
  CHECK(wire.id == 7);
  CHECK(wire.version == 3u);
  CHECK(wire.torch_version == "2.15");
  CHECK(proto::describe_wire(wire) == "kernels-community/relu v3");
  auto back = proto::from_wire(wire);
  REQUIRE(back);
  CHECK(back->ref == request.ref);
  CHECK(back->target_platform == request.target_platform);

  auto locked = *Request::locked(kRelu, kCommit, {{{"v", "h"}}});
  locked.variants = *VariantChoice::named("v");
  auto locked_back = proto::from_wire(proto::to_wire(locked, 1, true, {}));
  REQUIRE(locked_back);
  CHECK(locked_back->lock() == locked.lock());
  CHECK(locked_back->variants == locked.variants);

  // What the vocabulary refuses, a frame cannot smuggle in: invalid_request.
  auto hostile = wire;
  hostile.version.reset();
  hostile.revision = "main\n<3>forged";
  auto refused = proto::from_wire(hostile);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::invalid_request);
  auto both = wire;
  both.variant = "v";
  both.all_variants = true;
  CHECK(proto::from_wire(both).error().code == ErrorCode::invalid_request);
  auto locked_version = proto::to_wire(locked, 1, false, {});
  locked_version.revision.reset();
  locked_version.version = 1;
  CHECK(proto::from_wire(locked_version).error().code == ErrorCode::invalid_request);
}
