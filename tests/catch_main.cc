// The Catch2 (v2) test runner's main, compiled once for the whole suite.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <objprof/access_bitmap.h>
#include <objprof/crc32c.h>

#include <sys/single_threaded.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace {

// A test tagged [single-threaded] promises to start no thread: the TSan preset leaves it out
// (tests/CMakeLists.txt), since a race needs two threads and TSan would only multiply its time.
// This keeps the promise honest in every other preset: glibc's __libc_single_threaded turns
// false at a process's first pthread_create and stays false, so a tagged test that began in a
// single-threaded process (ctest runs each test in its own) and ended in a multi-threaded one
// started a thread. The run then fails, naming the test, so the tag is removed and TSan runs it.
class SingleThreadedPromise final : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    checking_ = __libc_single_threaded != 0 &&
                std::find(info.lcaseTags.begin(), info.lcaseTags.end(), "single-threaded") != info.lcaseTags.end();
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (checking_ && __libc_single_threaded == 0) {
      std::fprintf(stderr,
                   "test '%s' is tagged [single-threaded] but started a thread: remove the tag, so that the "
                   "TSan preset runs it\n",
                   stats.testInfo.name.c_str());
      std::fflush(stderr);
      std::_Exit(EXIT_FAILURE);
    }
    checking_ = false;
  }

 private:
  bool checking_ = false;
};

// The path this CPU runs when nothing is forced: the last of `all` (ordered from portable to
// fastest) that it supports, as objprof's own choice is.
template <class Path, class Supported>
Path best_of(std::span<const Path> all, Supported supported) {
  Path best = all.front();
  for (Path p : all)
    if (supported(p)) best = p;
  return best;
}

// A forced-path rerun (tests/CMakeLists.txt, objprof_forced_path_tests) names its variable in
// OBJPROF_FORCED_RERUN. If the path it forces is the one this CPU would run anyway (the best
// path, or one the CPU cannot run, which falls back to the best), the rerun would repeat the
// suite's own run of the same tests; returns why, or null if the rerun has work of its own.
template <class Path, class Supported, class FromName, class Name>
const char* repeats_default(const char* var, std::span<const Path> all, Supported supported, FromName from_name,
                            Name name) {
  const char* forced = std::getenv(var);
  if (forced == nullptr) return nullptr;
  const auto path = from_name(forced);
  if (!path.ok()) return nullptr;  // a bad name: let the run report it
  const Path best = best_of(all, supported);
  static char why[160];
  if (!supported(*path)) {
    std::snprintf(why, sizeof why, "this CPU cannot run the %s path, so the run would take the %s path, as the suite's own run does",
                  forced, std::string(name(best)).c_str());
    return why;
  }
  if (*path != best) return nullptr;
  std::snprintf(why, sizeof why, "the %s path is this CPU's own, which the suite's own run of these tests takes", forced);
  return why;
}

const char* forced_rerun_repeats_default() {
  const char* var = std::getenv("OBJPROF_FORCED_RERUN");
  if (var == nullptr) return nullptr;
  const std::string_view v(var);
  if (v == "OBJPROF_BITMAP_SCAN")
    return repeats_default(var, std::span<const objprof::BitmapScan>(objprof::kAllBitmapScans), objprof::bitmap_scan_supported,
                           objprof::bitmap_scan_from_name, objprof::bitmap_scan_name);
  if (v == "OBJPROF_CRC32C")
    return repeats_default(var, std::span<const objprof::Crc32cPath>(objprof::kAllCrc32cPaths), objprof::crc32c_supported,
                           objprof::crc32c_path_from_name, objprof::crc32c_path_name);
  return nullptr;
}

// ctest's SKIP_RETURN_CODE for the forced-path reruns.
constexpr int kSkipped = 77;

}  // namespace

CATCH_REGISTER_LISTENER(SingleThreadedPromise)

int main(int argc, char* argv[]) {
  // Every profiler the tests create checks the hook protocol (ProfilerOptions::check_hooks):
  // a test whose embedding misuses a hook fails with the protocol error instead of passing
  // with a wrong profile. Programs the tests start inherit it. Set OBJPROF_CHECK_HOOKS=0 to
  // run without the checks.
  ::setenv("OBJPROF_CHECK_HOOKS", "1", /*overwrite=*/0);
  if (const char* why = forced_rerun_repeats_default()) {
    std::printf("skipped: %s\n", why);
    return kSkipped;
  }
  return Catch::Session().run(argc, argv);
}
