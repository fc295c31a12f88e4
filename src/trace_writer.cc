// Chunk framing and the file sink.
#include "objprof/trace_writer.h"

#include "objprof/crc32c.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace objprof {

EventBuffer::EventBuffer(TraceWriter* writer, std::uint32_t stream, std::size_t payload_capacity)
    : writer_(writer),
      stream_(stream),
      storage_(new std::uint8_t[trace::kChunkHeaderBytes + payload_capacity]),
      payload_(storage_.get() + trace::kChunkHeaderBytes),
      pos_(payload_),
      end_(payload_ + payload_capacity) {
  restart_crc();
}

EventBuffer::~EventBuffer() { flush(); }

std::uint8_t* EventBuffer::put_string(std::uint8_t* p, std::string_view s) {
  const auto n = static_cast<std::uint16_t>(std::min(s.size(), trace::kMaxString));
  p = put_u16(p, n);
  if (n > 0) std::memcpy(p, s.data(), n);  // an empty string_view may have a null data()
  return p + n;
}

void EventBuffer::flush() {
  if (pos_ == payload_) return;
  const PartialCrc partial{crc_epoch_, crc_, static_cast<std::size_t>(crc_at_ - payload_)};
  writer_->commit(storage_.get(), pending_bytes(), stream_, partial_ ? &partial : nullptr);
  pos_ = payload_;
  restart_deltas();
  restart_crc();
}

void EventBuffer::checksum_written(std::size_t n) noexcept {
  // An alloc that is still the last record may become an alloc-resized one (its tag byte
  // rewritten): it waits for the next block or the flush.
  const std::uint8_t* upto = pos_ == alloc_end_ && alloc_end_ != nullptr ? alloc_tag_ : pos_;
  if (upto > crc_at_) {
    if (!partial_) {
      // The framing's order: stream and epoch, then the payload. The epoch is the one the chunk
      // would be stamped with now; if it is stamped with another, the framing starts over.
      crc_epoch_ = writer_->epoch();
      std::uint8_t fields[12];
      put_u64(put_u32(fields, stream_), crc_epoch_);
      crc_ = crc32c(fields, sizeof fields);
      partial_ = true;
    }
    crc_ = crc32c(crc_at_, static_cast<std::size_t>(upto - crc_at_), crc_);
    crc_at_ = const_cast<std::uint8_t*>(upto);
  }
  limit_ = std::max(pos_ + n, pos_ + std::min(kCrcBlock, static_cast<std::size_t>(end_ - pos_)));
}

void EventBuffer::flush_for(std::size_t n) {
  if (static_cast<std::size_t>(end_ - pos_) >= n) {  // only the block is full
    checksum_written(n);
    return;
  }
  flush();
  if (static_cast<std::size_t>(end_ - pos_) < n) {
    // A record larger than a chunk: grow this buffer (rare: huge names or bitmap pieces are
    // split by their writers, so this only guards against misuse).
    const std::size_t grown = std::max(n, capacity() * 2);
    storage_.reset(new std::uint8_t[trace::kChunkHeaderBytes + grown]);
    payload_ = storage_.get() + trace::kChunkHeaderBytes;
    pos_ = payload_;
    end_ = payload_ + grown;
    restart_crc();
  }
  limit_ = std::max(limit_, pos_ + n);  // a record longer than a block: its block ends after it
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(std::unique_ptr<ChunkSink> sink, std::size_t chunk_payload) {
  if (!sink) return make_error(ErrorCode::kInvalidArgument, "trace writer needs a sink");
  if (chunk_payload < 256 || chunk_payload > trace::kMaxChunkPayload)
    return make_error(ErrorCode::kInvalidArgument, "trace chunk payload must be between 256 bytes and 64 MiB");
  std::unique_ptr<TraceWriter> w(new TraceWriter(std::move(sink), chunk_payload));
  std::uint8_t pre[trace::kPreambleBytes];
  std::memcpy(pre, trace::kMagic, 8);
  EventBuffer::put_u32(pre + 8, trace::kVersion);
  EventBuffer::put_u32(pre + 12, 0);
  Status st = w->sink_->write(std::as_bytes(std::span(pre)));
  if (!st.ok()) return st.error();
  w->bytes_.store(trace::kPreambleBytes);
  return w;
}

std::unique_ptr<EventBuffer> TraceWriter::make_buffer(std::uint32_t stream) {
  return std::make_unique<EventBuffer>(this, stream, chunk_payload_);
}

namespace {

// Writes the chunk header of `payload_bytes` bytes at `header` and seals it with its CRC32C,
// continuing `partial` (the checksum of the payload's first bytes) when it was taken for this
// epoch.
void frame(std::uint8_t* header, std::size_t payload_bytes, std::uint32_t stream, std::uint64_t epoch,
           const EventBuffer::PartialCrc* partial) {
  std::uint8_t* p = header;
  p = EventBuffer::put_u32(p, trace::kChunkMagic);
  p = EventBuffer::put_u32(p, static_cast<std::uint32_t>(payload_bytes));
  std::uint8_t* crc_at = p;
  p = EventBuffer::put_u32(p, 0);
  p = EventBuffer::put_u32(p, stream);
  EventBuffer::put_u64(p, epoch);
  // The checksum covers stream, epoch and payload, so a chunk moved to the wrong place or
  // stamped wrongly is caught as well as flipped payload bits.
  if (partial != nullptr && partial->epoch == epoch && partial->bytes <= payload_bytes) {
    const std::uint8_t* payload = header + trace::kChunkHeaderBytes;
    EventBuffer::put_u32(crc_at, crc32c(payload + partial->bytes, payload_bytes - partial->bytes, partial->crc));
  } else {
    EventBuffer::put_u32(crc_at, crc32c(header + 12, 12 + payload_bytes));
  }
}

}  // namespace

void TraceWriter::commit(std::uint8_t* header, std::size_t payload_bytes, std::uint32_t stream,
                         const EventBuffer::PartialCrc* partial) {
  std::uint64_t epoch = epoch_.load(std::memory_order_relaxed);
  frame(header, payload_bytes, stream, epoch, partial);  // outside the lock: the CRC is the costly part
  const std::size_t total = trace::kChunkHeaderBytes + payload_bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  if (holding_ && stream >= trace::kThreadStreamBase) {
    if (epoch != hold_epoch_) frame(header, payload_bytes, stream, hold_epoch_, partial);
    held_.insert(held_.end(), header, header + total);
    return;
  }
  write_locked(header, total);
}

void TraceWriter::write_locked(const std::uint8_t* chunk, std::size_t total) {
  if (!error_.ok()) {
    lost_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (gathering_) {
    if (gathered_.size() + total > gather_limit_) {
      write_gathered_locked();
      if (!error_.ok()) {  // the gathered chunks before it failed: this one is lost too
        lost_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    if (total <= gather_limit_) {
      gathered_.insert(gathered_.end(), chunk, chunk + total);
      ++gathered_chunks_;
      return;
    }
  }
  Status st = sink_->write({reinterpret_cast<const std::byte*>(chunk), total});
  if (!st.ok()) {
    error_ = st;
    lost_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  chunks_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(total, std::memory_order_relaxed);
}

void TraceWriter::write_gathered_locked() {
  // Chunks are gathered only while no error is kept (write_locked counts them lost then), and
  // a failed write empties the gathering: what is here goes to a sink that has not failed.
  if (gathered_.empty()) return;
  const std::uint64_t n = gathered_chunks_;
  Status st = sink_->write({reinterpret_cast<const std::byte*>(gathered_.data()), gathered_.size()});
  if (st.ok()) {
    chunks_.fetch_add(n, std::memory_order_relaxed);
    bytes_.fetch_add(gathered_.size(), std::memory_order_relaxed);
  } else {
    error_ = st;
    lost_.fetch_add(n, std::memory_order_relaxed);
  }
  gathered_.clear();
  gathered_chunks_ = 0;
}

TraceWriter::Gather::Gather(TraceWriter* writer) : writer_(writer && writer->gather_limit_ > 0 ? writer : nullptr) {
  if (!writer_) return;
  std::lock_guard<std::mutex> lock(writer_->mutex_);
  writer_->gathering_ = true;
}

TraceWriter::Gather::~Gather() {
  if (!writer_) return;
  std::lock_guard<std::mutex> lock(writer_->mutex_);
  writer_->gathering_ = false;
  writer_->write_gathered_locked();
}

void TraceWriter::hold_mutator_chunks(std::uint64_t stamp_epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  holding_ = true;
  hold_epoch_ = stamp_epoch;
}

void TraceWriter::release_held() {
  std::lock_guard<std::mutex> lock(mutex_);
  holding_ = false;
  for (std::size_t at = 0; at < held_.size();) {
    std::uint32_t payload;
    std::memcpy(&payload, held_.data() + at + 4, 4);
    const std::size_t total = trace::kChunkHeaderBytes + payload;
    write_locked(held_.data() + at, total);
    at += total;
  }
  held_.clear();
  if (held_.capacity() > (std::size_t{4} << 20)) held_.shrink_to_fit();  // a long sweep's peak is not kept
}

Status TraceWriter::flush_sink() {
  std::lock_guard<std::mutex> lock(mutex_);
  write_gathered_locked();  // a Gather still open: what it holds goes first
  if (!error_.ok()) return error_;
  return sink_->flush();
}

Status TraceWriter::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

Result<std::unique_ptr<FileSink>> FileSink::create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::kIo, "cannot create trace file '" + path + "': " + std::strerror(errno));
  return std::unique_ptr<FileSink>(new FileSink(fd, path));
}

FileSink::~FileSink() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileSink::write(std::span<const std::byte> bytes) {
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIo, "writing trace file '" + path_ + "': " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

Status FileSink::flush() {
  if (::fdatasync(fd_) != 0 && errno != EINVAL)
    return make_error(ErrorCode::kIo, "syncing trace file '" + path_ + "': " + std::strerror(errno));
  return {};
}

}  // namespace objprof
