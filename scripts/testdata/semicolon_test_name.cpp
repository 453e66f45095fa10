// Input of build.test_names_catches_a_semicolon (scripts/check_test_names.py): a case name
// ctest would cut at its semicolon. Not compiled.
TEST_CASE("a case; cut here", "[example]") {}
