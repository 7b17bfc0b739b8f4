/* Allocation helpers, string buffers, whole-file reads, clocks and float16. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core.h"

void *stk__malloc(size_t size, const char *what) {
  void *p = malloc(size ? size : 1);
  if (!p) STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for %s", size, what);
  return p;
}

void *stk__calloc(size_t count, size_t size, const char *what) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p)
    STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot allocate %zu x %zu bytes for %s", count, size, what);
  return p;
}

void *stk__realloc(void *ptr, size_t size, const char *what) {
  void *p = realloc(ptr, size ? size : 1);
  if (!p) STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot grow %s to %zu bytes", what, size);
  return p;
}

char *stk__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = stk__malloc(n, "a string");
  if (d) memcpy(d, s, n);
  return d;
}

int64_t stk__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

stk_status stk__strbuf_append(stk__strbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = stk__realloc(b->data, cap, "a text buffer");
    if (!d) return STK_ERR_OUT_OF_MEMORY;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return STK_OK;
}

stk_status stk__strbuf_printf(stk__strbuf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return STK_FAIL(STK_ERR_INTERNAL, "bad format string");
  if ((size_t)n < sizeof small) return stk__strbuf_append(b, small, (size_t)n);
  char *big = stk__malloc((size_t)n + 1, "a formatted string");
  if (!big) return STK_ERR_OUT_OF_MEMORY;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  stk_status st = stk__strbuf_append(b, big, (size_t)n);
  free(big);
  return st;
}

void stk__strbuf_free(stk__strbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

stk_status stk__read_file(const char *path, size_t max_bytes, uint8_t **data, size_t *size) {
  stk_status st = STK_OK;
  uint8_t *buf = NULL;
  /* Non-blocking, so a FIFO (or a device) is refused below instead of blocking open(). */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    st = STK_FAIL(STK_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return st;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = STK_FAIL(STK_ERR_IO, "'%s' is not a regular file", path);
    goto done;
  }
  if ((uint64_t)sb.st_size > max_bytes) {
    st = STK_FAIL(STK_ERR_LIMIT, "'%s' has %lld bytes, more than the limit of %zu", path,
                  (long long)sb.st_size, max_bytes);
    goto done;
  }
  size_t n = (size_t)sb.st_size;
  buf = stk__malloc(n + 1, path);
  if (!buf) {
    st = STK_ERR_OUT_OF_MEMORY;
    goto done;
  }
  if (n && fread(buf, 1, n, f) != n) {
    st = STK_FAIL(STK_ERR_IO, "short read on '%s'", path);
    free(buf);
    buf = NULL;
    goto done;
  }
  buf[n] = 0;
  *data = buf;
  *size = n;
done:
  fclose(f);
  return st;
}

uint16_t stk__f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0)); /* inf/nan */
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow to inf */
  if (e <= 0) {                                   /* subnormal or zero */
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++; /* may carry into exp */
  return (uint16_t)half;
}

float stk__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else { /* subnormal: normalise */
      exp = 127 - 15 + 1;
      while (!(mant & 0x400u)) {
        mant <<= 1;
        exp--;
      }
      x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

void stk__name_thread(const char *fmt, ...) {
#ifdef __linux__
  char name[16];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  prctl(PR_SET_NAME, name, 0, 0, 0);
#else
  (void)fmt;
#endif
}
