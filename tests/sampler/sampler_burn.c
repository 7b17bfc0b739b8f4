/* A library sampler_target.c loads, burns CPU in, and unloads (with libc's own dlclose,
 * past the sampler's), so the report must name it from the mappings seen while sampling. */
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((visibility("default"))) void burn_in_library(double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  double end = ts.tv_sec + ts.tv_nsec * 1e-9 + seconds;
  for (;;) {
    for (int i = 0; i < 20000; i++) sink = sink * 3935559000370003845ull + 2691343689449507681ull;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if (ts.tv_sec + ts.tv_nsec * 1e-9 >= end) break;
  }
}
