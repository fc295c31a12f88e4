// Reading the class files inside a .jar (a zip) or a .jmod (a 4-byte "JM" header, then a zip),
// so `objprof elim` can take archives directly. Uses libzip.
#pragma once

#include "objprof/result.h"

#include <string>
#include <string_view>
#include <vector>

namespace objprof::ir {

struct ArchiveEntry {
  std::string name;   // path inside the archive, e.g. "classes/java/lang/String.class"
  std::string bytes;  // the class file
};

// Every entry whose name ends in ".class", in archive order. Errors (kIo, kCorrupt) name the
// archive and, for a damaged entry, the entry.
Result<std::vector<ArchiveEntry>> read_class_archive(const std::string& path);
// The same from an archive already in memory; `name` stands for it in error messages.
Result<std::vector<ArchiveEntry>> read_class_archive_bytes(std::string_view data, const std::string& name);

}  // namespace objprof::ir
