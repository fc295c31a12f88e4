// The Catch2 (v2) test runner's main, compiled once for the whole suite.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/single_threaded.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

}  // namespace

CATCH_REGISTER_LISTENER(SingleThreadedPromise)

int main(int argc, char* argv[]) {
  // Every profiler the tests create checks the hook protocol (ProfilerOptions::check_hooks):
  // a test whose embedding misuses a hook fails with the protocol error instead of passing
  // with a wrong profile. Programs the tests start inherit it. Set OBJPROF_CHECK_HOOKS=0 to
  // run without the checks.
  ::setenv("OBJPROF_CHECK_HOOKS", "1", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
