#include "kernelhub/loader/elf_symbols.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::loader {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the ELF reader assumes a little-endian host");

#if defined(__x86_64__)
constexpr Elf64_Half kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr Elf64_Half kHostMachine = EM_AARCH64;
#else
#error "kernelhub's loader supports x86_64 and aarch64 only"
#endif

// Bounds-checked pread access to one file.
class ElfFile {
 public:
  ElfFile(int fd, std::uint64_t size, std::string what)
      : fd_(fd), size_(size), what_(std::move(what)) {}

  Unexpected malformed(const std::string& why) const {
    return fail(ErrorCode::unsafe_kernel, what_ + " is not a valid ELF shared object: " + why);
  }

  Result<std::vector<unsigned char>> read(std::uint64_t offset, std::uint64_t length,
                                          const char* part) const {
    if (offset > size_ || length > size_ - offset) {
      return malformed(std::string(part) + " lies outside the file (offset " +
                       std::to_string(offset) + ", " + std::to_string(length) + " bytes, file " +
                       std::to_string(size_) + " bytes)");
    }
    std::vector<unsigned char> bytes(length);
    std::uint64_t done = 0;
    while (done < length) {
      const ssize_t n =
          ::pread(fd_, bytes.data() + done, length - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(ErrorCode::io, "cannot read " + what_ + ": " + std::strerror(errno));
      if (n == 0) return malformed(std::string(part) + " is cut short (the file shrank)");
      done += static_cast<std::uint64_t>(n);
    }
    return bytes;
  }

  std::uint64_t size() const { return size_; }

  template <class T>
  Result<std::vector<T>> read_array(std::uint64_t offset, std::uint64_t count,
                                    const char* part) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (count > size_ / sizeof(T)) return malformed(std::string(part) + " is larger than the file");
    KH_TRY_ASSIGN(auto bytes, read(offset, count * sizeof(T), part));
    std::vector<T> out(count);
    if (count != 0) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

 private:
  int fd_;
  std::uint64_t size_;
  std::string what_;
};

// File offset of `length` bytes at virtual address `vaddr`, from the PT_LOAD that maps them.
std::optional<std::uint64_t> file_offset(const std::vector<Elf64_Phdr>& loads, std::uint64_t vaddr,
                                         std::uint64_t length) {
  for (const auto& ph : loads) {
    if (vaddr < ph.p_vaddr) continue;
    const std::uint64_t delta = vaddr - ph.p_vaddr;
    if (delta > ph.p_filesz || length > ph.p_filesz - delta) continue;
    if (ph.p_offset > UINT64_MAX - delta) continue;
    return ph.p_offset + delta;
  }
  return std::nullopt;
}

struct DynamicTags {
  std::vector<std::uint64_t> needed;
  std::optional<std::uint64_t> soname, strtab, strsz, symtab, syment, hash, gnu_hash;
};

DynamicTags collect_tags(const std::vector<Elf64_Dyn>& dynamic) {
  DynamicTags tags;
  for (const auto& entry : dynamic) {
    const std::uint64_t value = entry.d_un.d_val;
    switch (entry.d_tag) {
      case DT_NULL:
        return tags;
      case DT_NEEDED:
        tags.needed.push_back(value);
        break;
      case DT_SONAME:
        tags.soname = value;
        break;
      case DT_STRTAB:
        tags.strtab = value;
        break;
      case DT_STRSZ:
        tags.strsz = value;
        break;
      case DT_SYMTAB:
        tags.symtab = value;
        break;
      case DT_SYMENT:
        tags.syment = value;
        break;
      case DT_HASH:
        tags.hash = value;
        break;
      case DT_GNU_HASH:
        tags.gnu_hash = value;
        break;
      default:
        break;
    }
  }
  return tags;
}

// Number of .dynsym entries: DT_HASH's nchain, or one past the last symbol of the highest
// DT_GNU_HASH bucket chain (symbols below symoffset are not hashed).
Result<std::uint64_t> symbol_count(const ElfFile& file, const std::vector<Elf64_Phdr>& loads,
                                   const DynamicTags& tags) {
  if (tags.hash) {
    const auto at = file_offset(loads, *tags.hash, 8);
    if (!at) return file.malformed("DT_HASH is not mapped by any PT_LOAD segment");
    KH_TRY_ASSIGN(auto header, file.read_array<std::uint32_t>(*at, 2, "DT_HASH header"));
    return std::uint64_t{header[1]};
  }
  if (!tags.gnu_hash) return file.malformed("no DT_GNU_HASH or DT_HASH (cannot count symbols)");
  const auto at = file_offset(loads, *tags.gnu_hash, 16);
  if (!at) return file.malformed("DT_GNU_HASH is not mapped by any PT_LOAD segment");
  KH_TRY_ASSIGN(auto header, file.read_array<std::uint32_t>(*at, 4, "DT_GNU_HASH header"));
  const std::uint64_t nbuckets = header[0], symoffset = header[1], bloom = header[2];
  const std::uint64_t buckets_at = *at + 16 + bloom * 8;
  KH_TRY_ASSIGN(auto buckets,
                file.read_array<std::uint32_t>(buckets_at, nbuckets, "DT_GNU_HASH buckets"));
  const std::uint64_t last =
      buckets.empty() ? 0 : *std::max_element(buckets.begin(), buckets.end());
  if (last == 0) return symoffset;  // no hashed symbols
  if (last < symoffset) return file.malformed("DT_GNU_HASH bucket below symoffset");
  // Walk the last chain to its end bit, in blocks of up to 1024 entries, each bounded by
  // the file: a chain that never ends runs into the end of the file.
  const std::uint64_t chain_at = buckets_at + nbuckets * 4;
  std::uint64_t index = last;
  for (;;) {
    const std::uint64_t entry_at = chain_at + (index - symoffset) * 4;
    const std::uint64_t left = entry_at < file.size() ? (file.size() - entry_at) / 4 : 0;
    if (left == 0) return file.malformed("DT_GNU_HASH chain runs past the end of the file");
    KH_TRY_ASSIGN(auto chain,
                  file.read_array<std::uint32_t>(entry_at, std::min<std::uint64_t>(1024, left),
                                                 "DT_GNU_HASH chain"));
    for (const std::uint32_t entry : chain) {
      if ((entry & 1U) != 0) return index + 1;
      ++index;
    }
  }
}

}  // namespace

Result<ElfDynamicInfo> read_elf_dynamic(int fd, std::string_view what_view) {
  const std::string what(what_view);
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return fail(ErrorCode::io, "cannot stat " + what + ": " + std::strerror(errno));
  const ElfFile file(fd, static_cast<std::uint64_t>(st.st_size), what);

  KH_TRY_ASSIGN(auto ehdr_bytes, file.read_array<Elf64_Ehdr>(0, 1, "ELF header"));
  const Elf64_Ehdr& eh = ehdr_bytes[0];
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return file.malformed("no ELF magic");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return file.malformed("not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN)
    return file.malformed("not a shared object (e_type " + std::to_string(eh.e_type) + ")");
  if (eh.e_machine != kHostMachine) {
    return fail(ErrorCode::incompatible_kernel,
                what + " is built for ELF machine " + std::to_string(eh.e_machine) +
                    ", this process runs on machine " + std::to_string(kHostMachine));
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM)
    return file.malformed("unsupported program header table");

  KH_TRY_ASSIGN(auto phdrs, file.read_array<Elf64_Phdr>(eh.e_phoff, eh.e_phnum, "program headers"));
  std::vector<Elf64_Phdr> loads;
  std::optional<Elf64_Phdr> dynamic_ph;
  for (const auto& ph : phdrs) {
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) {
      if (dynamic_ph) return file.malformed("more than one PT_DYNAMIC");
      dynamic_ph = ph;
    }
  }
  if (!dynamic_ph) return file.malformed("no dynamic segment");

  KH_TRY_ASSIGN(auto dynamic, file.read_array<Elf64_Dyn>(dynamic_ph->p_offset,
                                                         dynamic_ph->p_filesz / sizeof(Elf64_Dyn),
                                                         "dynamic segment"));
  const DynamicTags tags = collect_tags(dynamic);
  if (!tags.strtab || !tags.strsz) return file.malformed("no DT_STRTAB/DT_STRSZ");
  const auto strtab_at = file_offset(loads, *tags.strtab, *tags.strsz);
  if (!strtab_at) return file.malformed("the dynamic string table is not mapped by a PT_LOAD");
  KH_TRY_ASSIGN(auto strtab, file.read(*strtab_at, *tags.strsz, "dynamic string table"));

  auto string_at = [&](std::uint64_t index) -> Result<std::string> {
    if (index >= strtab.size()) return file.malformed("string index past DT_STRSZ");
    const auto begin = strtab.begin() + static_cast<std::ptrdiff_t>(index);
    const auto end = std::find(begin, strtab.end(), '\0');
    if (end == strtab.end()) return file.malformed("unterminated string in the string table");
    return std::string(begin, end);
  };

  ElfDynamicInfo info;
  for (const auto index : tags.needed) {
    KH_TRY_ASSIGN(auto name, string_at(index));
    info.needed.push_back(std::move(name));
  }
  if (tags.soname) {
    KH_TRY_ASSIGN(info.soname, string_at(*tags.soname));
  }

  if (!tags.symtab) return info;  // no symbols at all
  if (tags.syment && *tags.syment != sizeof(Elf64_Sym))
    return file.malformed("unexpected DT_SYMENT");
  KH_TRY_ASSIGN(const auto count, symbol_count(file, loads, tags));
  if (count > UINT64_MAX / sizeof(Elf64_Sym)) return file.malformed("symbol count overflows");
  const auto symtab_at = file_offset(loads, *tags.symtab, count * sizeof(Elf64_Sym));
  if (!symtab_at) return file.malformed("the dynamic symbol table is not mapped by a PT_LOAD");
  KH_TRY_ASSIGN(auto symbols,
                file.read_array<Elf64_Sym>(*symtab_at, count, "dynamic symbol table"));
  for (std::size_t i = 1; i < symbols.size(); ++i) {
    const auto& sym = symbols[i];
    if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0) continue;
    KH_TRY_ASSIGN(auto name, string_at(sym.st_name));
    info.undefined.push_back({std::move(name), ELF64_ST_BIND(sym.st_info) == STB_WEAK});
  }
  return info;
}

}  // namespace kernelhub::loader
