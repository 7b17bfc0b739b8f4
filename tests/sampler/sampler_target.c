/* A program for tests/sampler/cpu_sampler_test.sh: two named threads burn CPU in two
 * static functions, 3 : 1 in CPU time (measured on each thread's own CPU clock, so the
 * ratio holds however the threads are scheduled); the sampler's report must name the
 * threads and the functions and find that ratio. With a library's path as argument, a
 * third thread then burns CPU inside that library (sampler_burn.c) and the library is
 * unloaded before the program ends, as nvJPEG's libnvcuvid is. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <time.h>

static volatile uint64_t sink;

static double thread_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* noinline: each must be its own function in the symbol table and in the samples (GCC
 * may still name a specialised copy burn_three.constprop.0) */
__attribute__((noinline)) static void burn_three(double seconds) {
  double end = thread_cpu_seconds() + seconds;
  while (thread_cpu_seconds() < end)
    for (int i = 0; i < 20000; i++) sink = sink * 6364136223846793005ull + 1442695040888963407ull;
}

__attribute__((noinline)) static void burn_one(double seconds) {
  double end = thread_cpu_seconds() + seconds;
  while (thread_cpu_seconds() < end)
    for (int i = 0; i < 20000; i++) sink = sink * 2862933555777941757ull + 3037000493ull;
}

static void *worker_three(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "test-three", 0, 0, 0);
  burn_three(0.9);
  return NULL;
}

static void *worker_one(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "test-one", 0, 0, 0);
  burn_one(0.3);
  return NULL;
}

static void (*burn_in_library)(double);

static void *worker_library(void *arg) {
  (void)arg;
  prctl(PR_SET_NAME, "test-library", 0, 0, 0);
  burn_in_library(0.3);
  return NULL;
}

/* Loads the library, burns in it on a thread, unloads it with libc's dlclose (the
 * sampler's own dlclose keeps libraries loaded). 0: done; 1: a step failed. */
static int run_library(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  int (*real_dlclose)(void *) = libc ? (int (*)(void *))dlsym(libc, "dlclose") : NULL;
  *(void **)&burn_in_library = lib ? dlsym(lib, "burn_in_library") : NULL;
  if (!burn_in_library || !real_dlclose) {
    fprintf(stderr, "sampler_target: cannot load %s or find libc's dlclose: %s\n", path, dlerror());
    return 1;
  }
  pthread_t t;
  pthread_create(&t, NULL, worker_library, NULL);
  pthread_join(t, NULL);
  real_dlclose(lib);
  void *still = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (still) fprintf(stderr, "sampler_target: %s is still loaded\n", path);
  return still != NULL;
}

int main(int argc, char **argv) {
  pthread_t a, b;
  pthread_create(&a, NULL, worker_three, NULL);
  pthread_create(&b, NULL, worker_one, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  return argc > 1 ? run_library(argv[1]) : 0;
}
