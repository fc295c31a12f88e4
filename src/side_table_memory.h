// Zeroed memory from the kernel for the profiler's side tables: the access bitmap's buffers
// and the stale tracker's bits per granule, each 1/64 of a space.
//
// Tables of up to 2 MiB (spaces up to 128 MiB at 8-byte granules) come with their pages. A page
// fault costs ~7 us on the project's 2-vCPU VM: a mutator's first marks in each page of a fresh
// buffer, or a short collection's first read of it, would otherwise pay more than the work
// itself (docs/results.md, "Part 5"), and each run's faults cost a different amount. Larger
// tables get their pages as they are touched, so a reservation of many GiB stays cheap.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <utility>

namespace objprof::internal {

inline constexpr std::size_t kPopulatedSideTableBytes = std::size_t{2} << 20;

// nullptr when the kernel refuses (errno says why).
inline void* map_side_table(std::size_t bytes) noexcept {
  const int populate = bytes <= kPopulatedSideTableBytes ? MAP_POPULATE : 0;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | populate, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// A side table of `count` zeroed elements of T, mapped on first use (map_side_table) and unmapped
// with its owner. Move-only.
template <class T>
class SideTable {
 public:
  SideTable() = default;
  SideTable(SideTable&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  SideTable& operator=(SideTable&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ~SideTable() { release(); }
  // Maps the table if it is not mapped yet; false if that failed.
  bool ensure(std::size_t count) noexcept {
    if (data_) return true;
    void* p = map_side_table(count * sizeof(T));
    if (p == nullptr) return false;
    data_ = static_cast<T*>(p);
    bytes_ = count * sizeof(T);
    return true;
  }
  T* data() const noexcept { return data_; }

 private:
  void release() noexcept {
    if (data_) munmap(data_, bytes_);
  }
  T* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace objprof::internal
