// Shared by the fuzz targets: what counts as a bug. Errors returned as Result/Status are the
// library doing its job on bad input and are ignored; an inconsistency the library promises
// never to produce aborts, so libFuzzer records the input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define OBJPROF_FUZZ_CHECK(cond)                                                         \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
