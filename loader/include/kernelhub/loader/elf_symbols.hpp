// What the dynamic linker will need from a kernel .so, read from its dynamic segment the
// way ld.so reads it (PT_DYNAMIC, DT_STRTAB/DT_SYMTAB through the PT_LOAD mapping, the
// symbol count from DT_GNU_HASH or DT_HASH). ELF64 little-endian, x86_64 or aarch64.
// Every offset and size is checked against the file: hostile bytes give an error.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/util/result.hpp"

namespace kernelhub::loader {

struct UndefinedSymbol {
  std::string name;
  bool weak = false;  // STB_WEAK: may stay unresolved without failing the load
};

struct ElfDynamicInfo {
  std::optional<std::string> soname;       // DT_SONAME
  std::vector<std::string> needed;         // DT_NEEDED, in file order
  std::vector<UndefinedSymbol> undefined;  // undefined dynamic symbols (index >= 1)
};

// Reads the fd with pread (its offset is untouched). `what` names the file in messages.
// unsafe_kernel for anything that is not a well-formed ELF64 shared object,
// incompatible_kernel for one built for another machine, io for read errors.
Result<ElfDynamicInfo> read_elf_dynamic(int fd, std::string_view what);

}  // namespace kernelhub::loader
