// MemorySink: segments that are filled in order and kept when the sink is emptied.
#include "objprof/trace_sink.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace objprof {

MemorySink::MemorySink(std::size_t segment_bytes) : segment_bytes_(std::max<std::size_t>(segment_bytes, 4096)) {}

MemorySink::~MemorySink() = default;

MemorySink::Segment::~Segment() {
  if (bytes != nullptr) ::munmap(bytes, size);
}

namespace {
std::byte* map_segment(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}
}  // namespace

void MemorySink::next_segment() {
  if (used_ == segments_.size()) segments_.emplace_back(map_segment(segment_bytes_), segment_bytes_);
  ++used_;
  last_fill_ = 0;
}

Status MemorySink::write(std::span<const std::byte> bytes) {
  ++writes_;
  joined_valid_ = false;
  size_ += bytes.size();
  while (!bytes.empty()) {
    if (used_ == 0 || last_fill_ == segment_bytes_) next_segment();
    const std::size_t n = std::min(bytes.size(), segment_bytes_ - last_fill_);
    std::memcpy(segments_[used_ - 1].bytes + last_fill_, bytes.data(), n);
    last_fill_ += n;
    bytes = bytes.subspan(n);
  }
  return {};
}

std::span<const std::byte> MemorySink::data() const {
  if (used_ == 0) return {};
  if (used_ == 1) return {segments_[0].bytes, last_fill_};
  if (!joined_valid_) {
    joined_.resize(size_);
    std::size_t at = 0;
    for (std::size_t i = 0; i < used_; ++i) {
      std::memcpy(joined_.data() + at, segments_[i].bytes, fill(i));
      at += fill(i);
    }
    joined_valid_ = true;
  }
  return joined_;
}

std::vector<std::byte> MemorySink::take() {
  std::vector<std::byte> out;
  out.reserve(size_);
  drain([&](std::span<const std::byte> s) { out.insert(out.end(), s.begin(), s.end()); });
  return out;
}

void MemorySink::clear() noexcept {
  used_ = 0;
  last_fill_ = 0;
  size_ = 0;
  joined_.clear();
  joined_.shrink_to_fit();
  joined_valid_ = false;
}

void MemorySink::reserve(std::size_t bytes) {
  const std::size_t room = used_ == 0 ? 0 : segment_bytes_ - last_fill_;
  if (bytes <= room) return;
  const std::size_t spare_needed = (bytes - room + segment_bytes_ - 1) / segment_bytes_;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  while (segments_.size() - used_ < spare_needed) {
    std::byte* seg = map_segment(segment_bytes_);
    // One write per page faults it in now instead of on the write path.
    for (std::size_t off = 0; off < segment_bytes_; off += page) seg[off] = std::byte{0};
    segments_.emplace_back(seg, segment_bytes_);
  }
}

void MemorySink::release() noexcept { segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(used_), segments_.end()); }

}  // namespace objprof
