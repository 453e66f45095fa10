// read_elf_dynamic against binutils' view of real builds, and against hostile bytes.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "kernelhub/loader/elf_symbols.hpp"
#include "loader/loader_test_support.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::loader;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), {}};
}

// An anonymous file holding `bytes`.
UniqueFd memfd_with(const std::string& bytes) {
  UniqueFd fd(::memfd_create("elf", MFD_CLOEXEC));
  REQUIRE(fd);
  REQUIRE(::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  return fd;
}

Result<ElfDynamicInfo> scan_file(const fs::path& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  return read_elf_dynamic(fd.get(), path.filename().string());
}

// binutils: undefined dynamic symbols (name without @version), NEEDED and SONAME.
std::set<std::string> nm_undefined(const fs::path& so) {
  const auto nm = testing::run_command({"/usr/bin/nm", "-D", "--undefined-only", so.string()});
  REQUIRE(nm.exit_code == 0);
  std::set<std::string> names;
  std::istringstream lines(nm.out);
  for (std::string line; std::getline(lines, line);) {
    auto name = line.substr(line.find_last_of(' ') + 1);
    names.insert(name.substr(0, name.find('@')));
  }
  return names;
}

std::vector<std::string> readelf_tag(const fs::path& so, const std::string& tag) {
  const auto out = testing::run_command({"/usr/bin/readelf", "-d", so.string()});
  REQUIRE(out.exit_code == 0);
  std::vector<std::string> values;
  const std::regex pattern("\\(" + tag + "\\)[^\\[]*\\[([^\\]]*)\\]");
  std::istringstream lines(out.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, pattern)) values.push_back(m[1]);
  }
  return values;
}

}  // namespace

TEST_CASE("the ELF scan agrees with nm and readelf on real builds") {
  const std::vector<fs::path> objects = {
      testing::only_shared_object(testing::fixture_variant_dir("relu", 1)),
      testing::only_shared_object(testing::fixture_variant_dir("broken-python-abi", 1)),
      fs::path(KH_S28_VARIANT_DIR) / "a_top.so",
      fs::path(KH_S28_VARIANT_DIR) / "z_dep.so",
  };
  for (const auto& so : objects) {
    INFO(so);
    const auto info = scan_file(so);
    INFO((info ? std::string() : info.error().message));
    REQUIRE(info);
    CHECK(info->needed == readelf_tag(so, "NEEDED"));
    const auto soname = readelf_tag(so, "SONAME");
    CHECK(info->soname.has_value() == !soname.empty());
    if (info->soname && !soname.empty()) CHECK(*info->soname == soname.front());
    std::set<std::string> undefined;
    for (const auto& symbol : info->undefined) undefined.insert(symbol.name);
    CHECK(undefined == nm_undefined(so));
  }
  const auto broken = scan_file(objects[1]);
  REQUIRE(broken);
  CHECK(
      std::any_of(broken->undefined.begin(), broken->undefined.end(),
                  [](const UndefinedSymbol& s) { return s.name == "_Py_NoneStruct" && !s.weak; }));
  CHECK(scan_file(objects[2])->needed == std::vector<std::string>{"libkh_s28_dep.so"});
}

TEST_CASE("the ELF scan refuses garbage, truncated and zeroed files without crashing") {
  const auto original =
      read_bytes(testing::only_shared_object(testing::fixture_variant_dir("relu", 1)));
  REQUIRE(original.size() > 4096);
  std::vector<std::string> inputs = {"",
                                     "\x7f"
                                     "ELF",
                                     std::string(64, '\0'), std::string(original.size(), '\0'),
                                     "not an ELF file at all"};
  std::mt19937 random(20261024);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string noise(8192, '\0');
  for (auto& c : noise) c = static_cast<char>(byte(random));
  inputs.push_back(noise);
  inputs.push_back(original.substr(0, 64) + noise);  // a valid header over noise
  // Cut inside the ELF header or the program headers: nothing to read the tables from.
  const std::size_t phnum =
      static_cast<unsigned char>(original[56]) |
      (static_cast<std::size_t>(static_cast<unsigned char>(original[57])) << 8);
  const std::size_t headers_end = 64 + 56 * phnum;
  for (std::size_t length = 1; length < headers_end; length += 7)
    inputs.push_back(original.substr(0, length));
  // The ELF header zeroed, the program headers zeroed.
  std::string zeroed = original;
  std::fill(zeroed.begin(), zeroed.begin() + 64, '\0');
  inputs.push_back(zeroed);
  zeroed = original;
  std::fill(zeroed.begin() + 64, zeroed.begin() + static_cast<std::ptrdiff_t>(headers_end), '\0');
  inputs.push_back(zeroed);

  for (const auto& input : inputs) {
    INFO("input of " << input.size() << " bytes");
    const auto fd = memfd_with(input);
    const auto result = read_elf_dynamic(fd.get(), "input");
    REQUIRE_FALSE(result);
    CHECK((result.error().code == ErrorCode::unsafe_kernel ||
           result.error().code == ErrorCode::incompatible_kernel));
  }

  // Cut anywhere in the first 32 KiB (into the string, symbol and hash tables): refused or
  // parsed, never a read past the end.
  for (std::size_t length = headers_end; length < std::min<std::size_t>(original.size(), 32768);
       length += 97) {
    const auto fd = memfd_with(original.substr(0, length));
    const auto result = read_elf_dynamic(fd.get(), "cut");
    if (!result) CHECK(result.error().code == ErrorCode::unsafe_kernel);
  }

  // Random byte changes anywhere in the first 16 KiB (headers, dynsym, dynstr, hash tables):
  // each either parses or is refused, and never reads outside the file.
  std::uniform_int_distribution<std::size_t> where(
      0, std::min<std::size_t>(original.size(), 16384) - 1);
  int refused = 0;
  for (int round = 0; round < 400; ++round) {
    std::string mutated = original;
    for (int i = 0; i < 8; ++i) mutated[where(random)] = static_cast<char>(byte(random));
    const auto fd = memfd_with(mutated);
    const auto result = read_elf_dynamic(fd.get(), "mutated");
    if (!result) {
      ++refused;
      CHECK((result.error().code == ErrorCode::unsafe_kernel ||
             result.error().code == ErrorCode::incompatible_kernel));
    }
  }
  CHECK(refused > 0);
  const auto fd = memfd_with(original);
  CHECK(read_elf_dynamic(fd.get(), "original"));
}

TEST_CASE("the ELF scan refuses an object built for another machine") {
  std::string bytes =
      read_bytes(testing::only_shared_object(testing::fixture_variant_dir("relu", 1)));
  // e_machine (offset 18): the other supported architecture.
  const std::uint16_t other = bytes[18] == 62 ? 183 : 62;  // EM_X86_64 / EM_AARCH64
  bytes[18] = static_cast<char>(other & 0xff);
  bytes[19] = static_cast<char>(other >> 8);
  const auto fd = memfd_with(bytes);
  const auto result = read_elf_dynamic(fd.get(), "other.so");
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::incompatible_kernel);
  CHECK_THAT(result.error().message, Catch::Contains("other.so"));
}
