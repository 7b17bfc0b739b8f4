/*
 * cpu_sampler: where a program's threads spend their CPU time, on a machine without perf
 * or Nsight Systems (the GPU machine has neither). Loaded with LD_PRELOAD; it samples the
 * program counter and a few return addresses of every thread at a rate proportional to
 * that thread's own CPU time (a timer on each thread's CPU clock, signalling that thread:
 * timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID); threads are given theirs by an
 * interposed pthread_create), and at exit writes a summary: per thread, the samples by
 * library and by function. (A process-wide ITIMER_PROF, the first version, over-sampled
 * the busier thread on a loaded machine: 5 : 1 for a 3 : 1 split of CPU time.)
 *
 *   STK_SAMPLER_OUT=PREFIX   turns it on; the summary goes to PREFIX.PID.txt
 *   STK_SAMPLER_HZ=N         samples per CPU-second (default 1000)
 *   STK_SAMPLER_DELAY=S      seconds before sampling starts (default 1: start-up left out)
 *
 * Functions are named from each file's own symbol table (.symtab, so a library's internal
 * functions too, where the file is not stripped; else .dynsym's exported ones). A
 * stripped library's internal functions are reported as LIB+0xOFFSET (offset from the library's
 * load address), so two samples in one internal function still group together (by 4 KiB page of
 * code, see PAGE_GROUP). Time a thread spends in the kernel appears at the system call's return
 * address in user space (libc's ioctl, futex wait, ...): which library made the call is then the
 * next frame. Frames past the first come from backtrace() (libgcc's unwinder on .eh_frame); it is
 * warmed up before the timer starts, since its first call loads libgcc.
 * Libraries are kept loaded to the end (dlclose is a no-op while this is preloaded), and
 * the executable mappings are recorded every 200 ms while sampling, so that the report can
 * still name addresses in libraries unloaded by other means.
 * Caveat: a thread's timer fires only while it runs, so the signal interrupts system
 * calls rarely; one that does not restart on SA_RESTART (nanosleep, poll with a timeout)
 * may then return EINTR early. Threads started before this library's constructor ran
 * are not sampled.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

enum { MAX_SAMPLES = 1 << 20, DEPTH = 6, PAGE_GROUP = 4096 };

typedef struct {
  char thread[16];
  void *pc[DEPTH]; /* pc[0]: the interrupted instruction; then return addresses */
  int depth;
  int weight; /* 1 + the timer's overruns: expiries folded into this one signal */
} sample_t;

static sample_t *samples;
static atomic_long nsamples;
static atomic_int enabled;
static char out_prefix[512];
static int sample_hz;
static struct timespec window_start;

static void on_prof(int sig, siginfo_t *info, void *ucv) {
  (void)sig;
  if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return;
  long i = atomic_fetch_add_explicit(&nsamples, 1, memory_order_relaxed);
  if (i >= MAX_SAMPLES) return;
  sample_t *s = &samples[i];
  /* A thread's CPU clock is checked at the kernel's tick: expiries between two checks
   * arrive as one signal whose overrun counts the rest, so the sample stands for them all
   * (without it, a thread whose runs were short was under-sampled: 8 : 1 for 3 : 1). */
  s->weight =
      1 + (info && info->si_code == SI_TIMER && info->si_overrun > 0 ? info->si_overrun : 0);
  ucontext_t *uc = (ucontext_t *)ucv;
  s->pc[0] = (void *)uc->uc_mcontext.gregs[REG_RIP];
  prctl(PR_GET_NAME, s->thread, 0, 0, 0);
  /* backtrace() from inside the handler starts in the handler and the signal frame: keep
   * what lies past the interrupted instruction's own frame. */
  void *bt[DEPTH + 4];
  int n = backtrace(bt, DEPTH + 4), k = 0;
  while (k < n && bt[k] != s->pc[0]) k++;
  int d = 1;
  for (k = k + 1; k < n && d < DEPTH; k++) s->pc[d++] = bt[k];
  s->depth = d;
}

static void *snapshot_main(void *arg);

/* ---- one CPU-time timer per thread ---- */

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static pthread_key_t timer_key; /* its destructor deletes an exiting thread's timer */

static void delete_thread_timer(void *timer) { timer_delete((timer_t)timer); }

/* The calling thread's timer: SIGPROF to this thread every 1/sample_hz s of its CPU time. */
static void arm_thread_timer(void) {
  struct sigevent sev;
  memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
  timer_t timer;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &timer) != 0) return;
  long ns = 1000000000L / sample_hz;
  struct itimerspec its = {{ns / 1000000000L, ns % 1000000000L},
                           {ns / 1000000000L, ns % 1000000000L}};
  timer_settime(timer, 0, &its, NULL);
  pthread_setspecific(timer_key, (void *)timer);
}

typedef struct {
  void *(*fn)(void *);
  void *arg;
} thread_start;

static void *timed_thread(void *p) {
  thread_start start = *(thread_start *)p;
  free(p);
  arm_thread_timer();
  return start.fn(start.arg);
}

/* Interposed: every thread the program starts gets its timer first. */
__attribute__((visibility("default"))) int pthread_create(pthread_t *thread,
                                                          const pthread_attr_t *attr,
                                                          void *(*fn)(void *), void *arg) {
  static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  if (!real_create) *(void **)&real_create = dlsym(RTLD_NEXT, "pthread_create");
  if (!real_create) return EAGAIN;
  thread_start *start = samples ? (thread_start *)malloc(sizeof *start) : NULL;
  if (!start) return real_create(thread, attr, fn, arg); /* sampler off (or no memory): as is */
  *start = (thread_start){fn, arg};
  int rc = real_create(thread, attr, timed_thread, start);
  if (rc != 0) free(start);
  return rc;
}

static void *start_later(void *arg) {
  double delay = *(double *)arg;
  struct timespec ts = {(time_t)delay, (long)((delay - (time_t)delay) * 1e9)};
  nanosleep(&ts, NULL);
  clock_gettime(CLOCK_MONOTONIC, &window_start);
  atomic_store(&enabled, 1);
  snapshot_main(NULL); /* this thread now records the mappings every 200 ms */
  return NULL;
}

/* ---- symbol tables, read from the files themselves (at report time only) ---- */

typedef struct {
  uint64_t start, size;
  const char *name;
} func_sym;

typedef struct {
  char path[512];
  int is_exec; /* ET_EXEC: symbol values are addresses, not offsets from the load address */
  func_sym *syms;
  int n;
} sym_file;

static sym_file files[64];
static int nfiles;

static int by_start(const void *a, const void *b) {
  uint64_t x = ((const func_sym *)a)->start, y = ((const func_sym *)b)->start;
  return (x > y) - (x < y);
}

/* The function symbols of one ELF file: .symtab when present (not stripped), else .dynsym.
 * The file stays mapped: the names point into it. */
static void load_symbols(sym_file *sf) {
  int fd = open(sf->path, O_RDONLY);
  if (fd < 0) return;
  struct stat st;
  void *map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(Elf64_Ehdr))
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  const uint8_t *base = (const uint8_t *)map;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > (uint64_t)st.st_size)
    return;
  sf->is_exec = eh->e_type == ET_EXEC;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
  const Elf64_Shdr *tab = NULL;
  for (int want = SHT_SYMTAB; want && !tab; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
    for (int i = 0; i < eh->e_shnum; i++)
      if (sh[i].sh_type == (Elf64_Word)want && sh[i].sh_link < eh->e_shnum) tab = &sh[i];
  if (!tab || tab->sh_offset + tab->sh_size > (uint64_t)st.st_size) return;
  const Elf64_Shdr *strs = &sh[tab->sh_link];
  const Elf64_Sym *sym = (const Elf64_Sym *)(base + tab->sh_offset);
  size_t count = tab->sh_size / sizeof(Elf64_Sym);
  sf->syms = (func_sym *)calloc(count ? count : 1, sizeof *sf->syms);
  if (!sf->syms) return;
  for (size_t i = 0; i < count; i++) {
    if (ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC || !sym[i].st_value ||
        sym[i].st_name >= strs->sh_size)
      continue;
    sf->syms[sf->n++] = (func_sym){sym[i].st_value, sym[i].st_size,
                                   (const char *)(base + strs->sh_offset + sym[i].st_name)};
  }
  qsort(sf->syms, (size_t)sf->n, sizeof *sf->syms, by_start);
}

static sym_file *symbols_for(const char *path) {
  for (int i = 0; i < nfiles; i++)
    if (!strcmp(files[i].path, path)) return &files[i];
  if (nfiles == (int)(sizeof files / sizeof files[0])) return NULL;
  sym_file *sf = &files[nfiles++];
  snprintf(sf->path, sizeof sf->path, "%s", path);
  load_symbols(sf);
  return sf;
}

/* The function containing file address `addr`, or NULL. */
static const char *function_at(sym_file *sf, uint64_t addr) {
  int lo = 0, hi = sf ? sf->n - 1 : -1, best = -1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (sf->syms[mid].start <= addr) {
      best = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (best < 0) return NULL;
  const func_sym *f = &sf->syms[best];
  return addr < f->start + (f->size ? f->size : 1) ? f->name : NULL;
}

/* ---- mappings seen while sampling: a library unmapped before the report (nvJPEG's
 *      libnvcuvid was, in the first version, whose dlclose was not exported) is still
 *      named ---- */

typedef struct {
  unsigned long lo, hi, off;
  char path[256];
} mapping_t;

enum { MAX_MAPPINGS = 1024 };
static mapping_t mappings[MAX_MAPPINGS];
static int nmappings;
static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int snapshots_stop;

/* Adds the executable file mappings of /proc/self/maps not yet in the table. */
static void maps_snapshot(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[1024];
  pthread_mutex_lock(&mappings_lock);
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, off;
    char perms[8], path[512] = "";
    if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %511s", &lo, &hi, perms, &off, path) < 5 ||
        perms[2] != 'x' || path[0] != '/')
      continue;
    int known = 0;
    for (int i = nmappings - 1; i >= 0 && !known; i--)
      known = mappings[i].lo == lo && mappings[i].hi == hi && !strcmp(mappings[i].path, path);
    if (known || nmappings == MAX_MAPPINGS) continue;
    mappings[nmappings] = (mapping_t){lo, hi, off, ""};
    snprintf(mappings[nmappings].path, sizeof mappings[nmappings].path, "%s", path);
    nmappings++;
  }
  pthread_mutex_unlock(&mappings_lock);
  fclose(f);
}

/* The latest mapping seen that holds `a` (NULL: none, e.g. anonymous memory). */
static const mapping_t *mapping_of(uintptr_t a) {
  for (int i = nmappings - 1; i >= 0; i--)
    if (a >= mappings[i].lo && a < mappings[i].hi) return &mappings[i];
  return NULL;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* "lib:function" when the file at `path` has a function there in its symbol table, else
 * "lib+0xPAGE". `pc` is the address, `off` its offset in the file as loaded (the symbol
 * value in a shared object; an executable's symbols are addresses). */
static void name_in_file(char *buf, size_t cap, const char *path, uintptr_t pc, uint64_t off) {
  sym_file *sf = symbols_for(path);
  const char *fn = sf ? function_at(sf, sf->is_exec ? (uint64_t)pc : off) : NULL;
  if (fn)
    snprintf(buf, cap, "%s:%s", base_name(path), fn);
  else
    snprintf(buf, cap, "%s+0x%lx", base_name(path), (unsigned long)(off / PAGE_GROUP * PAGE_GROUP));
}

/* An address dladdr cannot place, named from the mappings seen (file offsets taken as
 * symbol values, true of the text of ordinary shared objects); "?ADDRESS" for memory no
 * file backs. */
static void name_from_maps(void *pc, char *buf, size_t cap) {
  const mapping_t *m = mapping_of((uintptr_t)pc);
  if (!m) {
    snprintf(buf, cap, "?%p", pc);
    return;
  }
  name_in_file(buf, cap, m->path, (uintptr_t)pc, (uintptr_t)pc - m->lo + m->off);
}

static void *snapshot_main(void *arg) {
  (void)arg;
  while (!atomic_load(&snapshots_stop)) {
    maps_snapshot();
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* "lib:function" or "lib+0xPAGE" for an address. */
static void name_of(void *pc, char *buf, size_t cap) {
  Dl_info di;
  if (!dladdr(pc, &di) || !di.dli_fname) {
    name_from_maps(pc, buf, cap);
    return;
  }
  const char *path = di.dli_fname;
  char exe[512];
  /* the main program: dladdr names it as run (argv[0]); the vdso has a name without a
   * directory too, and no file */
  if (!*path || !strcmp(path, program_invocation_name)) {
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
      exe[k] = 0;
      path = exe;
    }
  }
  name_in_file(buf, cap, path, (uintptr_t)pc, (uintptr_t)pc - (uintptr_t)di.dli_fbase);
}

static void lib_of(void *pc, char *buf, size_t cap) {
  Dl_info di;
  if (dladdr(pc, &di) && di.dli_fname) {
    snprintf(buf, cap, "%s", base_name(di.dli_fname));
    return;
  }
  name_from_maps(pc, buf, cap);
  if (buf[0] != '?') buf[strcspn(buf, ":+")] = 0;
}

typedef struct {
  char key[768];
  long count;
} tally_t;

typedef struct {
  tally_t *t;
  int n, cap;
} tallies;

static void tally_add(tallies *ts, const char *key, long weight) {
  for (int i = 0; i < ts->n; i++)
    if (!strcmp(ts->t[i].key, key)) {
      ts->t[i].count += weight;
      return;
    }
  if (ts->n == ts->cap) {
    int cap = ts->cap ? ts->cap * 2 : 64;
    tally_t *t = (tally_t *)realloc(ts->t, sizeof *t * (size_t)cap);
    if (!t) return;
    ts->t = t;
    ts->cap = cap;
  }
  snprintf(ts->t[ts->n].key, sizeof ts->t[ts->n].key, "%s", key);
  ts->t[ts->n++].count = weight;
}

static int by_count(const void *a, const void *b) {
  long x = ((const tally_t *)a)->count, y = ((const tally_t *)b)->count;
  return (x < y) - (x > y);
}

static void print_top(FILE *f, tallies *ts, long total, int top, const char *title) {
  qsort(ts->t, (size_t)ts->n, sizeof *ts->t, by_count);
  fprintf(f, "  %s\n", title);
  for (int i = 0; i < ts->n && i < top; i++)
    fprintf(f, "    %5.1f%%  %6ld  %s\n", 100.0 * ts->t[i].count / total, ts->t[i].count,
            ts->t[i].key);
}

/* The report for one thread name: samples by library, by function, by call chain. */
static void report_thread(FILE *f, const char *thread, long n_all) {
  tallies libs = {0}, funcs = {0}, chains = {0};
  long total = 0;
  char a[256], chain[768];
  for (long i = 0; i < n_all; i++) {
    sample_t *s = &samples[i];
    if (strncmp(s->thread, thread, sizeof s->thread)) continue;
    total += s->weight;
    lib_of(s->pc[0], a, sizeof a);
    tally_add(&libs, a, s->weight);
    name_of(s->pc[0], a, sizeof a);
    tally_add(&funcs, a, s->weight);
    size_t used = 0;
    chain[0] = 0;
    for (int d = 0; d < s->depth && d < 4 && used < sizeof chain - 1; d++) {
      name_of(s->pc[d], a, sizeof a);
      int w = snprintf(chain + used, sizeof chain - used, "%s%s", d ? " < " : "", a);
      if (w < 0) break;
      used += (size_t)w;
    }
    tally_add(&chains, chain, s->weight);
  }
  fprintf(f, "thread %s: %ld timer expiries (%.3f s of CPU)\n", thread, total,
          (double)total / sample_hz);
  print_top(f, &libs, total, 12, "by library (self)");
  print_top(f, &funcs, total, 25, "by function (self)");
  print_top(f, &chains, total, 25, "by call chain (innermost first)");
  free(libs.t);
  free(funcs.t);
  free(chains.t);
}

static void write_report(void) {
  atomic_store(&enabled, 0); /* the timers tick on; their samples are dropped */
  atomic_store(&snapshots_stop, 1);
  maps_snapshot();
  pthread_mutex_lock(
      &mappings_lock); /* the snapshot thread may still be about: the table is read below */
  long n = atomic_load(&nsamples);
  if (n > MAX_SAMPLES) n = MAX_SAMPLES;
  char path[600];
  snprintf(path, sizeof path, "%s.%d.txt", out_prefix, (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) {
    pthread_mutex_unlock(&mappings_lock);
    return;
  }
  char cmd[256] = {0};
  FILE *c = fopen("/proc/self/cmdline", "r");
  if (c) {
    size_t k = fread(cmd, 1, sizeof cmd - 1, c);
    for (size_t i = 0; i + 1 < k; i++)
      if (!cmd[i]) cmd[i] = ' ';
    fclose(c);
  }
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double window = window_start.tv_sec ? (now.tv_sec - window_start.tv_sec) +
                                            (now.tv_nsec - window_start.tv_nsec) * 1e-9
                                      : 0;
  fprintf(f, "cpu_sampler: %ld signals over a %.2f s window; %s\n", n, window, cmd);
  tallies threads = {0};
  long weighed = 0;
  for (long i = 0; i < n; i++) {
    char t[17];
    memcpy(t, samples[i].thread, 16);
    t[16] = 0;
    tally_add(&threads, t, samples[i].weight);
    weighed += samples[i].weight;
  }
  fprintf(f,
          "(counts below are expiries of the threads' timers: %ld, one per 1/%d s of a thread's "
          "CPU time)\n",
          weighed, sample_hz);
  print_top(f, &threads, weighed ? weighed : 1, 64, "by thread");
  for (int i = 0; i < threads.n; i++)
    if (threads.t[i].count * 50 >= weighed)
      report_thread(f, threads.t[i].key, n); /* threads with >= 2% */
  free(threads.t);
  fclose(f);
  pthread_mutex_unlock(&mappings_lock);
}

/* Interposed: the libraries a program unloads would leave their samples nameless. */
__attribute__((visibility("default"))) int dlclose(void *handle) {
  (void)handle;
  return 0;
}

__attribute__((constructor)) static void sampler_start(void) {
  const char *out = getenv("STK_SAMPLER_OUT");
  if (!out || !*out) return;
  samples = (sample_t *)calloc(MAX_SAMPLES, sizeof *samples);
  if (!samples) return;
  snprintf(out_prefix, sizeof out_prefix, "%s", out);
  const char *hz_s = getenv("STK_SAMPLER_HZ"), *delay_s = getenv("STK_SAMPLER_DELAY");
  int hz = hz_s ? atoi(hz_s) : 1000;
  if (hz < 1 || hz > 10000) hz = 1000;
  sample_hz = hz;
  pthread_key_create(&timer_key, delete_thread_timer);
  static double delay;
  delay = delay_s ? atof(delay_s) : 1.0;
  void *warm[4];
  backtrace(warm, 4); /* loads libgcc's unwinder now, not in the handler */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPROF, &sa, NULL);
  arm_thread_timer(); /* the main thread; the others get theirs as they start */
  pthread_t th;
  if (pthread_create(&th, NULL, start_later, &delay) == 0) pthread_detach(th);
  atexit(write_report);
}
