// Shared-memory segment: bitmaps and the trace ring in /dev/shm, read by another process
// live and after the writer was killed.
#include "objprof/barrier.h"
#include "objprof/profiler.h"
#include "objprof/shared_segment.h"
#include "objprof/trace_reader.h"
#include "test_env.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace test_shared_segment {

using namespace objprof;

namespace {

// Unique per process and per call, so parallel ctest runs never collide.
std::string unique_name(const char* what) {
  static int counter = 0;
  return "objprof-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + what;
}

// Removes the segment at scope exit (tests must not leave /dev/shm files behind).
struct Remover {
  std::string name;
  ~Remover() { (void)SharedSegment::remove(name); }
};

bool exists(const std::string& name) {
  struct stat st;
  return ::stat(SharedSegment::device_path(name).c_str(), &st) == 0;
}

constexpr Address kBase = 0x10000000;
constexpr std::uint64_t kHeapBytes = 1 << 16;
constexpr int kPerEpoch = 40;
constexpr std::uint64_t kObj = 32;

Address obj_addr(int epoch, int i) { return kBase + static_cast<Address>(epoch * kPerEpoch + i) * kObj; }
bool accessed(int i) { return i % 3 == 0; }
bool freed(int i) { return i % 5 == 0; }

HeapSpace test_space() { return HeapSpace::make(kBase, kBase + kHeapBytes, 8, "young").value(); }

SegmentLayout test_layout(std::size_t ring_bytes) {
  SegmentLayout l;
  l.spaces = {test_space()};
  l.ring_bytes = ring_bytes;
  return l;
}

struct Rig {
  std::unique_ptr<SharedSegment> seg;
  std::unique_ptr<Profiler> prof;  // destroyed before seg (declared after it)
  ThreadState* thread = nullptr;
};

// Creates a segment, a profiler writing its trace and bitmap into it, and one thread.
// Returns an error message instead of asserting so the forked child can use it too.
std::string make_rig(Rig& rig, const std::string& name, SegmentLayout layout) {
  auto seg = SharedSegment::create(name, std::move(layout));
  if (!seg.ok()) return "create: " + seg.error().message;
  rig.seg = std::move(*seg);
  auto sink = rig.seg->make_trace_sink();
  if (!sink.ok()) return "sink: " + sink.error().message;
  ProfilerOptions o;
  o.trace_sink = std::move(*sink);
  o.chunk_payload = 256;  // many small chunks
  o.default_leak_printer = false;
  auto prof = Profiler::create(std::move(o));
  if (!prof.ok()) return "profiler: " + prof.error().message;
  rig.prof = std::move(*prof);
  auto sid = rig.seg->add_space_to(*rig.prof, 0);
  if (!sid.ok()) return "add_space: " + sid.error().message;
  if (auto s = rig.prof->define_type({1, "Node", kObj, false}); !s.ok()) return s.error().message;
  if (auto s = rig.prof->define_site({1, 0x1234, "Test.run", 7}); !s.ok()) return s.error().message;
  auto t = rig.prof->attach_thread(0, "main");
  if (!t.ok()) return "thread: " + t.error().message;
  rig.thread = *t;
  return {};
}

// Epochs [first, first + count): allocate kPerEpoch objects, access every third, GC, free
// every fifth.
std::string run_epochs(Rig& rig, int first, int count) {
  Profiler& p = *rig.prof;
  for (int e = first; e < first + count; ++e) {
    for (int i = 0; i < kPerEpoch; ++i) {
      p.on_alloc(*rig.thread, 1, 1, obj_addr(e, i), kObj);
      if (accessed(i)) access(*rig.thread, p.bitmap(0), obj_addr(e, i));
    }
    if (auto s = p.gc_begin(GcKind::kFull); !s.ok()) return s.error().message;
    for (int i = 0; i < kPerEpoch; ++i)
      if (freed(i)) p.on_free(obj_addr(e, i));
    if (auto s = p.gc_end(); !s.ok()) return s.error().message;
  }
  return {};
}

std::vector<Address> late_accesses();

// Checks the records of `epochs` whole epochs (or, if prefix_ok, of the first part of them).
// late_epoch: the epoch in which late_accesses() were also made.
void check_trace(const trace::Contents& c, int epochs, bool prefix_ok = false, int late_epoch = -1) {
  REQUIRE(c.header.spaces.size() == 1);
  CHECK(c.header.spaces[0].begin == kBase);
  REQUIRE(c.types.size() == 1);
  CHECK(c.types[0].name == "Node");
  REQUIRE(c.sites.size() == 1);
  CHECK(c.sites[0].method == "Test.run");
  if (prefix_ok) {
    REQUIRE(c.allocs.size() <= static_cast<std::size_t>(epochs * kPerEpoch));
  } else {
    REQUIRE(c.allocs.size() == static_cast<std::size_t>(epochs * kPerEpoch));
    REQUIRE(c.gc_begins.size() == static_cast<std::size_t>(epochs));
    REQUIRE(c.gc_ends.size() == static_cast<std::size_t>(epochs));
    CHECK(c.frees.size() == static_cast<std::size_t>(epochs * 8));
  }
  for (std::size_t k = 0; k < c.allocs.size(); ++k) {
    const int e = static_cast<int>(k) / kPerEpoch, i = static_cast<int>(k) % kPerEpoch;
    REQUIRE(c.allocs[k].addr == obj_addr(e, i));
    REQUIRE(c.allocs[k].size == kObj);
  }
  for (std::size_t e = 0; e < c.gc_ends.size(); ++e) {
    std::vector<std::uint64_t> want;
    for (int i = 0; i < kPerEpoch; ++i)
      if (accessed(i)) want.push_back(obj_addr(static_cast<int>(e), i));
    if (static_cast<int>(e) == late_epoch)
      for (Address a : late_accesses()) want.push_back(a);
    std::sort(want.begin(), want.end());
    auto got = c.marked_addresses(e);
    std::sort(got.begin(), got.end());
    REQUIRE(got == want);
  }
}

// Objects touched after the last GC (survivors of epoch 0), seen live in the active bitmap.
std::vector<Address> late_accesses() {
  std::vector<Address> v;
  for (int i = 1; i < 10; ++i)
    if (!freed(i)) v.push_back(obj_addr(0, i));
  return v;
}

}  // namespace

TEST_CASE("shared segment: in-process round trip, live reads while writing", "[shm]") {
  const std::string name = unique_name("roundtrip");
  Remover rm{name};
  {
    Rig rig;
    REQUIRE(make_rig(rig, name, test_layout(64 << 10)) == "");
    REQUIRE(run_epochs(rig, 0, 3) == "");

    // A reader in the middle of the run sees a valid trace of what is committed so far.
    auto view = SharedSegment::attach(name);
    REQUIRE(view.ok());
    auto mid = (*view)->copy_trace();
    REQUIRE(mid.ok());
    CHECK(mid->from_start);
    auto c = trace::load(mid->bytes);
    REQUIRE(c.ok());
    CHECK_FALSE(c->summary.complete);
    check_trace(*c, 3);

    // Live bitmap: marks of the epoch in progress are visible before any GC harvests them.
    for (Address a : late_accesses()) access(*rig.thread, rig.prof->bitmap(0), a);
    auto marked = (*view)->marked_addresses(0);
    REQUIRE(marked.ok());
    CHECK(*marked == late_accesses());
    SegmentInfo info = (*view)->info();
    CHECK(info.state == SegmentState::kWriting);
    CHECK(info.owner_pid == ::getpid());
    CHECK(info.owner_alive);
    CHECK(info.spaces.size() == 1);
    CHECK(info.spaces[0].marked == late_accesses().size());
    CHECK(info.chunks_lost == 0);
    CHECK(info.write_pos + trace::kPreambleBytes == mid->bytes.size());
    CHECK_FALSE(format_segment_info(info).empty());

    REQUIRE(run_epochs(rig, 3, 2) == "");
    REQUIRE(rig.prof->finish().ok());
    rig.prof.reset();
    CHECK(rig.seg->info().state == SegmentState::kClosed);
  }
  // Every writer-side object is gone; the segment and its data are not.
  REQUIRE(exists(name));
  auto view = SharedSegment::attach(name);
  REQUIRE(view.ok());
  auto copy = (*view)->copy_trace();
  REQUIRE(copy.ok());
  auto c = trace::load(copy->bytes);
  REQUIRE(c.ok());
  CHECK(c->summary.complete);
  check_trace(*c, 5, false, /*late_epoch=*/3);
}

TEST_CASE("shared segment: a child killed with SIGKILL leaves its trace and bitmap intact", "[shm]") {
  const std::string name = unique_name("sigkill");
  Remover rm{name};
  constexpr int kEpochs = 4;
  struct Report {
    int ok;
    std::uint64_t chunks;
    std::uint64_t write_pos;
    char error[200];
  };
  static_assert(sizeof(Report) < PIPE_BUF, "one atomic pipe write");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The profiled process: no Catch2 here; report through the pipe and never return.
    ::close(fds[0]);
    Report r{};
    Rig rig;
    std::string err = make_rig(rig, name, test_layout(64 << 10));
    if (err.empty()) err = run_epochs(rig, 0, kEpochs);
    if (err.empty()) {
      for (Address a : late_accesses()) access(*rig.thread, rig.prof->bitmap(0), a);
      // Recorded but not committed: stays in the thread's buffer and dies with the process.
      for (int i = 0; i < 3; ++i) rig.prof->on_alloc(*rig.thread, 1, 1, obj_addr(kEpochs, i), kObj);
      const SegmentInfo info = rig.seg->info();
      r.ok = 1;
      r.chunks = info.chunks_committed;
      r.write_pos = info.write_pos;
    } else {
      std::snprintf(r.error, sizeof r.error, "%s", err.c_str());
    }
    if (::write(fds[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) ::_exit(3);
    if (!r.ok) ::_exit(1);
    for (;;) ::pause();  // mid-run, the profiler never finishes: the parent kills us
  }
  ::close(fds[1]);
  Report r{};
  pollfd pfd{fds[0], POLLIN, 0};
  const int ready = ::poll(&pfd, 1, 60000);  // generous: qemu-user is slow
  const ssize_t got = ready > 0 ? ::read(fds[0], &r, sizeof r) : -1;
  ::close(fds[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO("child report: " << r.error);
  REQUIRE(got == static_cast<ssize_t>(sizeof r));
  REQUIRE(r.ok == 1);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  CHECK(r.chunks > static_cast<std::uint64_t>(kEpochs));

  auto view = SharedSegment::attach(name);
  REQUIRE(view.ok());
  const SegmentInfo info = (*view)->info();
  CHECK(info.owner_pid == child);
  CHECK_FALSE(info.owner_alive);
  CHECK(info.state == SegmentState::kWriting);  // never closed: it died mid-trace
  CHECK(info.chunks_committed == r.chunks);
  CHECK(info.write_pos == r.write_pos);
  CHECK(info.chunks_lost == 0);

  auto copy = (*view)->copy_trace();
  REQUIRE(copy.ok());
  CHECK(copy->bytes.size() == trace::kPreambleBytes + r.write_pos);
  auto c = trace::load(copy->bytes);
  REQUIRE(c.ok());
  CHECK(c->summary.chunks == r.chunks);
  CHECK_FALSE(c->summary.truncated);
  CHECK_FALSE(c->summary.complete);  // no end record: the writer was killed
  check_trace(*c, kEpochs);          // every committed epoch, exactly; nothing uncommitted

  // The bits the child set after its last GC are in the segment's active buffer.
  auto marked = (*view)->marked_addresses(0);
  REQUIRE(marked.ok());
  CHECK(*marked == late_accesses());
}

TEST_CASE("shared segment: created owner-only (0600) whatever the umask", "[shm]") {
  const std::string name = unique_name("perm");
  Remover rm{name};
  const mode_t old = ::umask(0);
  auto seg = SharedSegment::create(name, test_layout(8192));
  ::umask(old);
  REQUIRE(seg.ok());
  struct stat st;
  REQUIRE(::stat(SharedSegment::device_path(name).c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_uid == ::geteuid());
}

TEST_CASE("shared segment: names, missing segments, exclusive creation, explicit removal", "[shm]") {
  const std::string missing = unique_name("missing");
  auto a = SharedSegment::attach(missing);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error().code == ErrorCode::kIo);
  CHECK_THAT(a.error().message, Catch::Contains(missing) && Catch::Contains("does not exist"));
  auto r = SharedSegment::remove(missing);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("does not exist"));

  for (const char* bad : {"", "/", "a/b", ".hidden", "sp ace", "x\n"}) {
    auto s = SharedSegment::create(bad, test_layout(8192));
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().code == ErrorCode::kInvalidArgument);
    CHECK_FALSE(SharedSegment::attach(bad).ok());
  }
  CHECK_FALSE(SharedSegment::create(unique_name("tiny"), test_layout(100)).ok());

  const std::string name = unique_name("excl");
  Remover rm{name};
  {
    auto s = SharedSegment::create("/" + name, test_layout(8192));  // a leading '/' is accepted
    REQUIRE(s.ok());
    CHECK((*s)->name() == name);
  }
  CHECK(exists(name));  // destruction never removes
  auto again = SharedSegment::create(name, test_layout(8192));
  REQUIRE_FALSE(again.ok());
  CHECK_THAT(again.error().message, Catch::Contains("already exists"));
  SegmentLayout replace = test_layout(8192);
  replace.replace_existing = true;
  auto replaced = SharedSegment::create(name, replace);
  REQUIRE(replaced.ok());
  auto sink = (*replaced)->make_trace_sink();
  REQUIRE(sink.ok());
  CHECK_FALSE((*replaced)->make_trace_sink().ok());  // one writer per ring
  auto no_trace = SharedSegment::attach(name);
  REQUIRE(no_trace.ok());
  auto copy = (*no_trace)->copy_trace();
  REQUIRE_FALSE(copy.ok());
  CHECK(copy.error().code == ErrorCode::kTruncated);
  CHECK_FALSE((*no_trace)->drain().ok());  // not a consumer
  REQUIRE(SharedSegment::remove(name).ok());
  CHECK_FALSE(exists(name));
  CHECK((*no_trace)->info().name == name);  // existing mappings stay usable after removal
}

TEST_CASE("shared segment: foreign and corrupt segments give errors, never crashes", "[shm]") {
  // Foreign objects in /dev/shm: too small, and the right size but not ours.
  for (std::size_t size : {std::size_t{100}, std::size_t{8192}}) {
    const std::string name = unique_name("foreign");
    Remover rm{name};
    const int fd = ::open(SharedSegment::device_path(name).c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    ::close(fd);
    auto v = SharedSegment::attach(name);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().code == ErrorCode::kCorrupt);
    CHECK_THAT(v.error().message, Catch::Contains("not an objprof segment"));
  }

  const std::string name = unique_name("corrupt");
  Remover rm{name};
  Rig rig;
  REQUIRE(make_rig(rig, name, test_layout(16 << 10)) == "");
  REQUIRE(run_epochs(rig, 0, 2) == "");
  access(*rig.thread, rig.prof->bitmap(0), obj_addr(0, 1));

  const int fd = ::open(SharedSegment::device_path(name).c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(map != MAP_FAILED);
  auto* hdr = static_cast<std::uint8_t*>(map);
  std::vector<std::uint8_t> saved(hdr, hdr + 4096);
  auto poke64 = [&](std::size_t off, std::uint64_t v) { std::memcpy(hdr + off, &v, 8); };
  auto poke32 = [&](std::size_t off, std::uint32_t v) { std::memcpy(hdr + off, &v, 4); };
  auto restore = [&] { std::memcpy(hdr, saved.data(), saved.size()); };

  SECTION("bad magic") {
    hdr[0] ^= 0xFF;
    auto v = SharedSegment::attach(name);
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.error().message, Catch::Contains("bad magic"));
  }
  SECTION("unknown version") {
    poke32(8, 99);
    auto v = SharedSegment::attach(name);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().code == ErrorCode::kUnsupported);
    CHECK_THAT(v.error().message, Catch::Contains("version 99"));
  }
  SECTION("size disagrees with the segment") {
    poke64(16, std::uint64_t{1} << 40);
    auto v = SharedSegment::attach(name);
    REQUIRE_FALSE(v.ok());
    CHECK(v.error().code == ErrorCode::kCorrupt);
  }
  SECTION("ring outside the mapping") {
    poke64(56, std::uint64_t{1} << 40);  // ring_offset
    auto v = SharedSegment::attach(name);
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.error().message, Catch::Contains("outside"));
  }
  SECTION("write position beyond the ring, bad active buffer") {
    auto v = SharedSegment::attach(name);
    REQUIRE(v.ok());
    REQUIRE((*v)->copy_trace().ok());
    std::uint64_t wp;
    std::memcpy(&wp, hdr + 128, 8);
    CHECK(wp == (*v)->info().write_pos);  // docs/shared-memory.md: write_pos at offset 128
    poke64(128, wp + (std::uint64_t{1} << 30));
    auto t = (*v)->copy_trace();
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == ErrorCode::kCorrupt);
    restore();
    REQUIRE((*v)->copy_trace().ok());
    poke32(256 + 48, 7);  // spaces[0].active_index
    auto b = (*v)->copy_bitmap(0);
    REQUIRE_FALSE(b.ok());
    CHECK_THAT(b.error().message, Catch::Contains("active bitmap buffer 7"));
  }
  SECTION("random damage to the header") {
    std::mt19937 rng(12345);
    int accepted = 0;
    for (int iter = 0; iter < 400; ++iter) {
      const int flips = 1 + static_cast<int>(rng() % 6);
      for (int f = 0; f < flips; ++f) {
        // Mostly the fields that matter: the static header, ring counters, the space record.
        const std::size_t off = rng() % 4 == 0 ? rng() % 4096 : rng() % 400;
        hdr[off] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      }
      auto v = SharedSegment::attach(name);
      if (v.ok()) {
        ++accepted;
        (void)(*v)->info();
        if (auto t = (*v)->copy_trace(); t.ok()) (void)trace::load(t->bytes);
        for (std::size_t s = 0; s < (*v)->space_count(); ++s) (void)(*v)->marked_addresses(s);
      }
      restore();
    }
    CHECK(accepted > 0);  // flips in unused bytes are harmless
  }
  restore();
  ::munmap(map, 4096);
  auto v = SharedSegment::attach(name);
  REQUIRE(v.ok());
  auto t = (*v)->copy_trace();
  REQUIRE(t.ok());
  REQUIRE(trace::load(t->bytes).ok());
}

TEST_CASE("shared segment: a consumer drains a ring much smaller than the trace", "[shm]") {
  const std::string name = unique_name("drain");
  Remover rm{name};
  constexpr int kEpochs = 48;  // ~20 KiB of (packed) trace through a 4 KiB ring; the heap holds 51
  auto seg = SharedSegment::create(name, test_layout(4096));
  REQUIRE(seg.ok());
  auto consumer = SharedSegment::attach(name, SharedSegment::AttachMode::kConsume);
  REQUIRE(consumer.ok());
  CHECK_FALSE(SharedSegment::attach(name, SharedSegment::AttachMode::kConsume).ok());  // one consumer
  CHECK((*consumer)->info().consumer_pid == ::getpid());

  std::atomic<bool> done{false};
  std::vector<std::byte> drained;
  std::string drain_error;
  std::thread reader;
  // Joins even when a REQUIRE below throws (a joinable std::thread would terminate the run).
  struct Joiner {
    std::atomic<bool>& done;
    std::thread& t;
    ~Joiner() {
      done.store(true, std::memory_order_release);
      if (t.joinable()) t.join();
    }
  } joiner{done, reader};
  reader = std::thread([&] {
    for (;;) {
      const bool last = done.load(std::memory_order_acquire);
      auto bytes = (*consumer)->drain();
      if (!bytes.ok()) {
        drain_error = bytes.error().message;
        return;
      }
      drained.insert(drained.end(), bytes->begin(), bytes->end());
      if (last) return;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });

  std::string err;
  std::uint64_t written = 0;
  {
    Rig rig;  // the segment is `seg`, created above so the consumer could attach first
    auto sink = (*seg)->make_trace_sink();
    REQUIRE(sink.ok());
    ProfilerOptions o;
    o.trace_sink = std::move(*sink);
    o.chunk_payload = 256;
    o.default_leak_printer = false;
    auto prof = Profiler::create(std::move(o));
    REQUIRE(prof.ok());
    rig.prof = std::move(*prof);
    REQUIRE((*seg)->add_space_to(*rig.prof, 0).ok());
    REQUIRE(rig.prof->define_type({1, "Node", kObj, false}).ok());
    REQUIRE(rig.prof->define_site({1, 0x1234, "Test.run", 7}).ok());
    rig.thread = rig.prof->attach_thread(0, "main").value();
    err = run_epochs(rig, 0, kEpochs);
    REQUIRE(rig.prof->finish().ok());
    REQUIRE(rig.prof->trace_status().ok());
    written = rig.prof->stats().trace_bytes;
  }
  done.store(true, std::memory_order_release);
  reader.join();
  REQUIRE(err == "");
  REQUIRE(drain_error == "");
  const SegmentInfo info = (*seg)->info();
  CHECK(info.chunks_lost == 0);
  CHECK(info.write_pos > 4 * info.ring_bytes);  // the ring wrapped several times
  CHECK(info.read_pos == info.write_pos);
  CHECK(drained.size() == written);
  auto c = trace::load(drained);
  REQUIRE(c.ok());
  CHECK(c->summary.complete);
  check_trace(*c, kEpochs);
  consumer->reset();
  CHECK((*seg)->info().consumer_pid == 0);
}

TEST_CASE("shared segment: a full ring without a consumer stops the trace, keeping a valid prefix", "[shm]") {
  const std::string name = unique_name("full");
  Remover rm{name};
  Rig rig;
  SegmentLayout layout = test_layout(4096);
  layout.full_wait = std::chrono::milliseconds(50);
  REQUIRE(make_rig(rig, name, layout) == "");
  REQUIRE(run_epochs(rig, 0, 20) == "");
  Status st = rig.prof->trace_status();
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Catch::Contains("full") && Catch::Contains("no consumer"));
  CHECK(rig.prof->stats().trace_chunks_lost > 0);
  const SegmentInfo info = rig.seg->info();
  CHECK(info.state == SegmentState::kStopped);
  CHECK(info.chunks_lost == 1);
  CHECK(info.write_pos <= info.ring_bytes);
  auto view = SharedSegment::attach(name);
  REQUIRE(view.ok());
  auto copy = (*view)->copy_trace();
  REQUIRE(copy.ok());
  auto c = trace::load(copy->bytes);
  REQUIRE(c.ok());
  CHECK_FALSE(c->summary.complete);
  CHECK(c->allocs.size() > 0);
  check_trace(*c, 20, /*prefix_ok=*/true);
  CHECK(format_segment_info(info).find("stopped") != std::string::npos);
}

TEST_CASE("shared segment: drop-and-count keeps writing and counts what it dropped", "[shm]") {
  const std::string name = unique_name("drop");
  Remover rm{name};
  Rig rig;
  SegmentLayout layout = test_layout(4096);
  layout.on_full = RingFullPolicy::kDropAndCount;
  REQUIRE(make_rig(rig, name, layout) == "");
  REQUIRE(run_epochs(rig, 0, 20) == "");
  CHECK(rig.prof->trace_status().ok());
  const SegmentInfo info = rig.seg->info();
  CHECK(info.state == SegmentState::kWriting);
  CHECK(info.chunks_lost > 0);
  CHECK(info.bytes_lost > 0);
  auto view = SharedSegment::attach(name);
  REQUIRE(view.ok());
  auto copy = (*view)->copy_trace();
  REQUIRE(copy.ok());
  CHECK(copy->chunks_lost == info.chunks_lost);
  CHECK(trace::load(copy->bytes).ok());
}

TEST_CASE("shared segment: objprof shm info, dump and remove", "[shm][cli]") {
  const std::string cli = std::string(OBJPROF_BIN_DIR) + "/objprof";
  REQUIRE(::access(cli.c_str(), X_OK) == 0);  // every preset builds the CLI
  const std::string name = unique_name("cli");
  Remover rm{name};
  {
    Rig rig;
    REQUIRE(make_rig(rig, name, test_layout(64 << 10)) == "");
    REQUIRE(run_epochs(rig, 0, 2) == "");
  }
  const std::string out = "/tmp/" + name + ".trace";
  auto run = [](const std::string& cmd) {
    std::string text;
    FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return std::make_pair(-1, text);
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) text += buf;
    const int rc = ::pclose(p);
    return std::make_pair(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text);
  };
  auto [rc, text] = run(cli + " shm info " + name);
  if ((rc == 126 || rc == 127) && objprof::test::emulated()) {
    // An arm64 binary spawned from under qemu-user: the kernel cannot run it without binfmt.
    WARN("cannot run the arm64 objprof CLI from under the emulator; skipped: " << text);
    return;
  }
  CHECK(rc == 0);
  CHECK_THAT(text, Catch::Contains("closed") && Catch::Contains("young"));
  std::tie(rc, text) = run(cli + " shm dump " + name + " --out=" + out);
  CHECK(rc == 0);
  INFO(text);
  auto c = trace::load_file(out);
  ::unlink(out.c_str());
  REQUIRE(c.ok());
  check_trace(*c, 2);
  std::tie(rc, text) = run(cli + " shm remove " + name);
  CHECK(rc == 0);
  CHECK_FALSE(exists(name));
  std::tie(rc, text) = run(cli + " shm info " + name);
  CHECK(rc == 1);
  CHECK_THAT(text, Catch::Contains("does not exist"));
}

}  // namespace test_shared_segment
