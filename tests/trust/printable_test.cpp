// util::printable: the one escaping of outside bytes for log lines, terminals and error
// messages (the daemon's log sink, the CLI's prints, sanitize_for_message).
#include <catch2/catch.hpp>

#include <string>

#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/printable.hpp"

using kernelhub::trust::sanitize_for_message;
using kernelhub::util::Backslash;
using kernelhub::util::printable;

TEST_CASE("printable escapes what acts on a terminal or a log reader", "[trust][printable]") {
  // A forged journal record (newline + priority), ANSI escapes, NUL, DEL.
  CHECK(printable("relu\n<4>refused FORGED") == "relu\\x0a<4>refused FORGED");
  CHECK(printable("a\r\tb") == "a\\x0d\\x09b");
  CHECK(printable("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(printable(std::string("a\0b\x7f", 4)) == "a\\x00b\\x7f");
  // C1 controls as UTF-8 (U+009B is CSI on some terminals), line/paragraph separators,
  // bidi overrides (Trojan Source).
  CHECK(printable("\xc2\x9b"
                  "31m") == "\\xc2\\x9b31m");
  CHECK(printable("a\xe2\x80\xa8z") == "a\\xe2\\x80\\xa8z");
  CHECK(printable("a\xe2\x80\xaez") == "a\\xe2\\x80\\xaez");
  CHECK(printable("a\xe2\x81\xa6z") == "a\\xe2\\x81\\xa6z");
}

TEST_CASE("printable keeps well-formed UTF-8 and escapes each byte of the rest",
          "[trust][printable]") {
  CHECK(printable("caf\xc3\xa9 \xe2\x9c\x85 \xf0\x9f\x98\x80") ==
        "caf\xc3\xa9 \xe2\x9c\x85 \xf0\x9f\x98\x80");
  CHECK(printable("\xff") == "\\xff");
  CHECK(printable("\xc3") == "\\xc3");                             // truncated
  CHECK(printable("\x80z") == "\\x80z");                           // stray continuation
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
  CHECK(printable("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");           // overlong, 3 bytes
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // surrogate
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  CHECK(printable("\xe2\x9c") == "\\xe2\\x9c");
}

TEST_CASE("printable keeps backslashes unless asked, and cuts at a boundary",
          "[trust][printable]") {
  CHECK(printable("a\\x0ab") == "a\\x0ab");
  CHECK(printable("a\\b", kernelhub::util::kUnbounded, Backslash::escaped) == "a\\x5cb");
  CHECK(printable(std::string(50, 'z'), 10) == "zzzzzzzzzz...");
  // A cut never splits a sequence: the 3-byte character is whole or absent.
  const std::string cut = printable("zzzzzzzzz\xe2\x9c\x85zz", 10);
  CHECK(cut == "zzzzzzzzz\xe2\x9c\x85...");
  CHECK(printable("") == "");
}

TEST_CASE("sanitize_for_message is printable with backslashes escaped, cut at 120",
          "[trust][printable]") {
  CHECK(sanitize_for_message("x\n\x1b\\") == "x\\x0a\\x1b\\x5c");
  CHECK(sanitize_for_message(std::string(500, 'z')) == std::string(120, 'z') + "...");
}
