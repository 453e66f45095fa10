// KernelOp's boxed calls on ops this test registers itself: schema defaults, names, the
// Tensor[] and tuple return forms, and the errors.
#include <ATen/ops/equal.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <torch/library.h>

#include <catch2/catch.hpp>
#include <optional>
#include <tuple>

#include "kernelhub/loader/kernel_ops.hpp"

using namespace kernelhub;
using namespace kernelhub::loader;

namespace {

at::Tensor scale(const at::Tensor& x, double factor, bool negate) {
  const auto scaled = at::mul(x, factor);
  return negate ? at::neg(scaled) : scaled;
}

std::vector<at::Tensor> halves(const at::Tensor& x) { return x.chunk(2, 0); }

std::tuple<at::Tensor, std::optional<at::Tensor>> first_only(const at::Tensor& x) {
  return {x, std::nullopt};
}

int64_t answer() { return 42; }

}  // namespace

TORCH_LIBRARY(kh_loader_ops_test, m) {
  m.def("scale(Tensor x, float factor=2.0, *, bool negate=False) -> Tensor", &scale);
  m.def("halves(Tensor x) -> Tensor[]", &halves);
  m.def("first_only(Tensor x) -> (Tensor, Tensor?)", &first_only);
  m.def("answer() -> int", &answer);
}

namespace {

LoadedKernel test_kernel() {
  LoadedKernel kernel;
  kernel.ops_namespace = "kh_loader_ops_test";
  kernel.repo = "tests/kernel_ops_test";
  return kernel;
}

KernelOp find(const char* name) {
  auto op = KernelOp::find(test_kernel(), name);
  INFO((op ? std::string() : op.error().message));
  REQUIRE(op);
  return std::move(*op);
}

}  // namespace

TEST_CASE("KernelOp fills left-out arguments from the schema's defaults") {
  const auto op = find("scale");
  const auto x = at::randn({3, 5});
  auto out = op.call({x});
  REQUIRE(out.size() == 1);
  CHECK(at::equal(out[0].toTensor(), scale(x, 2.0, false)));
  out = op.call({x, 0.5});
  CHECK(at::equal(out[0].toTensor(), scale(x, 0.5, false)));
  out = op.call({x, 3.0, true});
  CHECK(at::equal(out[0].toTensor(), scale(x, 3.0, true)));
}

TEST_CASE("KernelOp call_named maps names to positions and defaults the rest") {
  const auto op = find("scale");
  const auto x = at::randn({4});
  auto out = op.call_named({{"negate", true}, {"x", x}});
  CHECK(at::equal(out[0].toTensor(), scale(x, 2.0, true)));
  out = op.call_named({{"x", x}, {"factor", 5.0}});
  CHECK(at::equal(out[0].toTensor(), scale(x, 5.0, false)));

  CHECK_THROWS_WITH(op.call_named({{"x", x}, {"gamma", 1.0}}), Catch::Contains("gamma"));
  CHECK_THROWS_WITH(op.call_named({{"x", x}, {"x", x}}), Catch::Contains("twice"));
  CHECK_THROWS_WITH(op.call_named({{"factor", 1.0}}), Catch::Contains("'x'"));
}

TEST_CASE("KernelOp refuses a missing required argument and too many arguments") {
  const auto op = find("scale");
  CHECK_THROWS_AS(op.call({}), c10::Error);
  CHECK_THROWS_WITH(op.call({}), Catch::Contains("'x'"));
  const auto x = at::ones({2});
  CHECK_THROWS_WITH(op.call({x, 1.0, false, 7}), Catch::Contains("4 were given"));
}

TEST_CASE("output_tensors flattens Tensor[] and tuples, None as an undefined tensor") {
  const auto x = at::randn({4, 3});
  const auto lists = output_tensors(find("halves").call({x}));
  REQUIRE(lists.size() == 2);
  CHECK(at::equal(lists[0], x.chunk(2, 0)[0]));
  CHECK(at::equal(lists[1], x.chunk(2, 0)[1]));

  const auto tuple = find("first_only").call({x});
  const auto tensors = output_tensors(tuple);
  REQUIRE(tensors.size() == 2);
  CHECK(at::equal(tensors[0], x));
  CHECK_FALSE(tensors[1].defined());
  // The same outputs packed as one tuple IValue.
  const auto packed = output_tensors({c10::ivalue::Tuple::create({x, c10::IValue()})});
  REQUIRE(packed.size() == 2);
  CHECK(at::equal(packed[0], x));
  CHECK_FALSE(packed[1].defined());

  const auto number = find("answer").call({});
  REQUIRE(number.size() == 1);
  CHECK(number[0].toInt() == answer());
  CHECK_THROWS_WITH(output_tensors(number), Catch::Contains("not a tensor"));
}

TEST_CASE("KernelOp::find names the ops that do exist when one is missing") {
  const auto missing = KernelOp::find(test_kernel(), "nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::op_not_found);
  CHECK_THAT(missing.error().message, Catch::Contains("kh_loader_ops_test::nope"));
  for (const char* op : {"scale", "halves", "first_only", "answer"}) {
    CHECK_THAT(missing.error().message, Catch::Contains(std::string("kh_loader_ops_test::") + op));
  }
  LoadedKernel empty;
  empty.ops_namespace = "kh_loader_no_such_namespace";
  const auto none = KernelOp::find(empty, "x");
  REQUIRE_FALSE(none);
  CHECK_THAT(none.error().message, Catch::Contains("nothing is registered"));
}
