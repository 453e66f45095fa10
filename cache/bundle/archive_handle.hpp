// RAII owners for libarchive handles, and its error text as a Result.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <memory>
#include <string>

#include "kernelhub/util/result.hpp"

namespace kernelhub::cache::bundle {

struct ArchiveReadFree {
  void operator()(archive* a) const noexcept { archive_read_free(a); }
};
struct ArchiveWriteFree {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct ArchiveEntryFree {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};
using ArchiveReader = std::unique_ptr<archive, ArchiveReadFree>;
using ArchiveWriter = std::unique_ptr<archive, ArchiveWriteFree>;
using ArchiveEntry = std::unique_ptr<archive_entry, ArchiveEntryFree>;

inline std::string archive_error(archive* a) {
  const char* text = archive_error_string(a);
  return text != nullptr ? text : "unknown libarchive error";
}

}  // namespace kernelhub::cache::bundle
