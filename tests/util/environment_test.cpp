#include <catch2/catch.hpp>

#include <vector>

#include "kernelhub/util/environment.hpp"

using kernelhub::util::Environment;
using kernelhub::util::expand_path;

TEST_CASE("expand_path expands ~ then $VAR and ${VAR} like Python's expandvars(expanduser())",
          "[trust][environment]") {
  Environment env({{"HOME", "/home/u"}, {"A", "/a"}, {"EMPTY", ""}, {"TILDE", "~/t"}});
  struct Row {
    const char* in;
    const char* want;
  };
  const std::vector<Row> rows{
      {"~", "/home/u"},
      {"~/x", "/home/u/x"},
      {"~other/x", "~other/x"},  // only the caller's own ~ expands
      {"x/~", "x/~"},
      {"$A/x", "/a/x"},
      {"${A}x", "/ax"},
      {"$Ax", "$Ax"},  // an unset name stays as written
      {"${NOPE}/y", "${NOPE}/y"},
      {"$EMPTY/y", "/y"},  // set but empty expands to nothing, as in Python
      {"$TILDE", "~/t"},   // ~ is expanded before the variables, not after
      {"~/$A", "/home/u//a"},
      {"$", "$"},
      {"a$-b", "a$-b"},
      {"${A", "${A"},
      {"${}", "${}"},
      {"/plain/path", "/plain/path"},
  };
  for (const auto& row : rows) {
    INFO(row.in);
    CHECK(expand_path(row.in, env) == row.want);
  }
  Environment root_home;
  root_home.set("HOME", "/");
  CHECK(expand_path("~/x", root_home) == "/x");
  // Without HOME, ~ comes from the password database, never from getenv.
  CHECK(expand_path("~", Environment()).front() == '/');
}
