// The message of the exception of type E a call throws, for string matchers:
//   CHECK_THAT(thrown<ka::InvalidInput>([&] { ... }), Equals("..."));
// Another exception type, or none, gives a text no expected message matches.
#pragma once

#include <exception>
#include <string>

namespace kernelhub::testing {

template <class E, class F>
std::string thrown(F&& call) {
  try {
    call();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception: ") + e.what() + ">";
  }
  return "<nothing thrown>";
}

}  // namespace kernelhub::testing
