#include "objprof/ir/class_archive.h"

#include <fmt/core.h>
#include <zip.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace objprof::ir {
namespace {

std::string zip_message(zip_error_t* e) { return zip_error_strerror(e); }

}  // namespace

Result<std::vector<ArchiveEntry>> read_class_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, fmt::format("{}: cannot open archive: {}", path, std::strerror(errno)));
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_class_archive_bytes(data, path);
}

Result<std::vector<ArchiveEntry>> read_class_archive_bytes(std::string_view data, const std::string& path) {
  // A .jmod is "JM", major 1, minor 0, then an ordinary zip whose offsets start after them.
  std::size_t skip = 0;
  if (data.size() >= 4 && data[0] == 'J' && data[1] == 'M') skip = 4;

  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src = zip_source_buffer_create(data.data() + skip, data.size() - skip, 0, &error);
  if (!src) {
    std::string m = zip_message(&error);
    zip_error_fini(&error);
    return make_error(ErrorCode::kIo, fmt::format("{}: {}", path, m));
  }
  zip_t* archive = zip_open_from_source(src, ZIP_RDONLY, &error);
  if (!archive) {
    std::string m = zip_message(&error);
    zip_error_fini(&error);
    zip_source_free(src);
    return make_error(ErrorCode::kCorrupt, fmt::format("{}: not a readable zip archive: {}", path, m));
  }
  zip_error_fini(&error);
  std::unique_ptr<zip_t, void (*)(zip_t*)> guard(archive, [](zip_t* z) { zip_discard(z); });

  std::vector<ArchiveEntry> out;
  const zip_int64_t n = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME)) continue;
    const std::string name = st.name;
    if (name.size() < 6 || name.compare(name.size() - 6, 6, ".class") != 0) continue;
    if (!(st.valid & ZIP_STAT_SIZE) || st.size > (std::uint64_t{1} << 30))
      return make_error(ErrorCode::kCorrupt, fmt::format("{}: entry {} has no usable size", path, name));
    // Deflate expands at most about 1032:1, so a size beyond that of the compressed bytes is a
    // damaged directory entry, refused before allocating for it.
    if ((st.valid & ZIP_STAT_COMP_SIZE) && st.size > 1032 * st.comp_size + 1024)
      return make_error(ErrorCode::kCorrupt, fmt::format("{}: entry {} claims {} bytes from {} compressed", path, name, st.size, st.comp_size));
    zip_file_t* f = zip_fopen_index(archive, static_cast<zip_uint64_t>(i), 0);
    if (!f) return make_error(ErrorCode::kCorrupt, fmt::format("{}: cannot open entry {}: {}", path, name, zip_strerror(archive)));
    std::string bytes(static_cast<std::size_t>(st.size), '\0');
    const zip_int64_t got = zip_fread(f, bytes.data(), st.size);
    zip_fclose(f);
    if (got < 0 || static_cast<zip_uint64_t>(got) != st.size)
      return make_error(ErrorCode::kCorrupt, fmt::format("{}: entry {} is damaged (read {} of {} bytes)", path, name, got, st.size));
    out.push_back({name, std::move(bytes)});
  }
  return out;
}

}  // namespace objprof::ir
