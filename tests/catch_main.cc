// The Catch2 (v2) test runner's main, compiled once for the whole suite.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  // Every profiler the tests create checks the hook protocol (ProfilerOptions::check_hooks):
  // a test whose embedding misuses a hook fails with the protocol error instead of passing
  // with a wrong profile. Programs the tests start inherit it. Set OBJPROF_CHECK_HOOKS=0 to
  // run without the checks.
  ::setenv("OBJPROF_CHECK_HOOKS", "1", /*overwrite=*/0);
  return Catch::Session().run(argc, argv);
}
