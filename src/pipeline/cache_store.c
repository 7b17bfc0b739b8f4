/* Where the sample cache keeps its entries (cache.h): in memory, a hash table with an LRU
 * list bounded by capacity_bytes; or on disk, one file per sample under a directory, with
 * a manifest naming the prefix the files were made by. Entries are immutable once stored:
 * readers copy out of a pinned entry (memory) or an open file (disk) without the lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"

#define MANIFEST_NAME "manifest.txt"
#define MANIFEST_HEAD "stoker sample cache 1\n"
#define ENTRY_SUFFIX  ".stkc"

typedef struct mem_entry {
  struct mem_entry *hnext;       /* hash chain */
  struct mem_entry *prev, *next; /* LRU list: head = most recently used */
  uint64_t hash;
  int refs;    /* the table's one (while listed) + lookups in progress; lock held */
  bool listed; /* in the table and the LRU list */
  size_t charge;
  char *key, *stamp;
  stk__cache_value value; /* data pointers into this allocation */
} mem_entry;

struct stk__cache_store {
  pthread_mutex_t lock;
  int64_t capacity;
  char *dir; /* NULL: memory */
  /* memory */
  mem_entry **buckets;
  size_t num_buckets;
  mem_entry *head, *tail;
  /* both */
  int64_t bytes, entries, dropped;
  atomic_llong tmp_counter;
};

/* ---- memory ---- */

static void mem_unlink(stk__cache_store *s, mem_entry *e) {
  mem_entry **p = &s->buckets[e->hash & (s->num_buckets - 1)];
  while (*p != e) p = &(*p)->hnext;
  *p = e->hnext;
  if (e->prev)
    e->prev->next = e->next;
  else
    s->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    s->tail = e->prev;
  e->listed = false;
  s->bytes -= (int64_t)e->charge;
  s->entries--;
}

static void mem_unref(mem_entry *e) {
  if (--e->refs == 0) free(e);
}

static void mem_push_front(stk__cache_store *s, mem_entry *e) {
  e->prev = NULL;
  e->next = s->head;
  if (s->head) s->head->prev = e;
  s->head = e;
  if (!s->tail) s->tail = e;
}

static mem_entry *mem_lookup(stk__cache_store *s, const char *key, uint64_t hash) {
  for (mem_entry *e = s->buckets[hash & (s->num_buckets - 1)]; e; e = e->hnext)
    if (e->hash == hash && strcmp(e->key, key) == 0) return e;
  return NULL;
}

/* Doubles the table when it holds more entries than buckets (lock held). */
static void mem_grow(stk__cache_store *s) {
  if ((size_t)s->entries < s->num_buckets) return;
  size_t n = s->num_buckets * 2;
  mem_entry **b = calloc(n, sizeof *b);
  if (!b) return; /* longer chains, still correct */
  for (size_t i = 0; i < s->num_buckets; i++)
    for (mem_entry *e = s->buckets[i], *next; e; e = next) {
      next = e->hnext;
      e->hnext = b[e->hash & (n - 1)];
      b[e->hash & (n - 1)] = e;
    }
  free(s->buckets);
  s->buckets = b;
  s->num_buckets = n;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* One allocation: the entry, its key and stamp, and its tensors' bytes (64-aligned). */
static mem_entry *mem_make(const char *key, const char *stamp, const stk__cache_value *v) {
  size_t kl = strlen(key) + 1, sl = strlen(stamp) + 1;
  size_t size = align64(sizeof(mem_entry) + kl + sl);
  for (int i = 0; i < v->count; i++) size += align64(v->bytes[i]);
  char *m = aligned_alloc(64, align64(size));
  if (!m) return NULL;
  mem_entry *e = (mem_entry *)m;
  memset(e, 0, sizeof *e);
  e->key = m + sizeof *e;
  memcpy(e->key, key, kl);
  e->stamp = e->key + kl;
  memcpy(e->stamp, stamp, sl);
  e->value = *v;
  char *data = m + align64(sizeof(mem_entry) + kl + sl);
  for (int i = 0; i < v->count; i++) {
    if (v->bytes[i]) memcpy(data, v->t[i].data, v->bytes[i]);
    e->value.t[i].data = data;
    data += align64(v->bytes[i]);
  }
  e->charge = size;
  e->hash = stk__hash_str(key);
  return e;
}

static stk_status mem_put(stk__cache_store *s, const char *key, const char *stamp,
                          const stk__cache_value *v) {
  mem_entry *e = mem_make(key, stamp, v);
  if (!e) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot allocate a cache entry");
  pthread_mutex_lock(&s->lock);
  mem_entry *old = mem_lookup(s, key, e->hash);
  if (old) {
    mem_unlink(s, old);
    mem_unref(old);
  }
  if ((int64_t)e->charge > s->capacity) { /* never fits: keep what is there */
    s->dropped++;
    pthread_mutex_unlock(&s->lock);
    free(e);
    return STK_OK;
  }
  while (s->tail && s->bytes + (int64_t)e->charge > s->capacity) { /* least recently used */
    mem_entry *victim = s->tail;
    mem_unlink(s, victim);
    mem_unref(victim);
    s->dropped++;
  }
  e->refs = 1;
  e->listed = true;
  size_t b = e->hash & (s->num_buckets - 1);
  e->hnext = s->buckets[b];
  s->buckets[b] = e;
  mem_push_front(s, e);
  s->bytes += (int64_t)e->charge;
  s->entries++;
  mem_grow(s);
  pthread_mutex_unlock(&s->lock);
  return STK_OK;
}

static void mem_find(stk__cache_store *s, const char *key, const char *stamp, stk__cache_value *v,
                     stk__cache_pin *pin, bool *hit) {
  pthread_mutex_lock(&s->lock);
  mem_entry *e = mem_lookup(s, key, stk__hash_str(key));
  if (e && strcmp(e->stamp, stamp) == 0) {
    e->refs++;
    if (e != s->head) { /* most recently used */
      e->prev->next = e->next;
      if (e->next)
        e->next->prev = e->prev;
      else
        s->tail = e->prev;
      mem_push_front(s, e);
    }
    *v = e->value;
    pin->entry = e;
    *hit = true;
  }
  pthread_mutex_unlock(&s->lock);
}

/* ---- disk ---- */

typedef struct {
  char magic[8];
  uint32_t key_len, stamp_len;
  int32_t count, pad;
  struct {
    int32_t dtype, ndim;
    int64_t shape[STK_MAX_NDIM];
    char layout[16];
    uint64_t bytes;
  } t[STK__CACHE_MAX_TENSORS];
} disk_header;

static const char disk_magic[8] = {'S', 'T', 'K', 'C', 'A', 'C', 'H', '1'};

/* An entry's file: two independent hashes of the key (the key inside is compared too). */
static void entry_path(const stk__cache_store *s, const char *key, char *out, size_t cap) {
  uint64_t h2 = 0x9e3779b97f4a7c15ull;
  for (const unsigned char *c = (const unsigned char *)key; *c; c++) h2 = stk__mix64(h2, *c);
  snprintf(out, cap, "%s/%016llx%016llx" ENTRY_SUFFIX, s->dir,
           (unsigned long long)stk__hash_str(key), (unsigned long long)h2);
}

static bool has_suffix(const char *name, const char *suffix) {
  size_t n = strlen(name), k = strlen(suffix);
  return n > k && strcmp(name + n - k, suffix) == 0;
}

/* Sums the entry files' sizes; with `wipe`, deletes them (and left-over temporaries). */
static stk_status scan_dir(stk__cache_store *s, bool wipe, const char *who) {
  DIR *d = opendir(s->dir);
  if (!d)
    return STK_FAIL(STK_ERR_IO, "%s: cannot open the cache directory '%s': %s", who, s->dir,
                    strerror(errno));
  struct dirent *de;
  char path[4096];
  while ((de = readdir(d))) {
    bool entry = has_suffix(de->d_name, ENTRY_SUFFIX), tmp = has_suffix(de->d_name, ".part");
    if (!entry && !tmp) continue; /* never touch files the cache did not make */
    snprintf(path, sizeof path, "%s/%s", s->dir, de->d_name);
    struct stat sb;
    if (wipe || tmp) {
      unlink(path);
    } else if (stat(path, &sb) == 0) {
      s->bytes += (int64_t)sb.st_size;
      s->entries++;
    }
  }
  closedir(d);
  return STK_OK;
}

static stk_status write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return STK_ERR_IO;
    p += w;
    n -= (size_t)w;
  }
  return STK_OK;
}

/* Opens the directory: a manifest for another prefix (or none) empties it of entries. */
static stk_status disk_open(stk__cache_store *s, const char *prefix, const char *who) {
  if (mkdir(s->dir, 0777) != 0 && errno != EEXIST)
    return STK_FAIL(STK_ERR_IO, "%s: cannot create the cache directory '%s': %s", who, s->dir,
                    strerror(errno));
  char path[4096];
  snprintf(path, sizeof path, "%s/" MANIFEST_NAME, s->dir);
  stk__strbuf want = {0};
  STK_TRY(stk__strbuf_printf(&want, MANIFEST_HEAD "%s\n", prefix));
  uint8_t *have = NULL;
  size_t have_len = 0;
  bool same = stk__read_file(path, 1 << 24, &have, &have_len) == STK_OK && have_len == want.len &&
              memcmp(have, want.data, want.len) == 0;
  free(have);
  stk_status st = scan_dir(s, !same, who);
  if (st == STK_OK && !same) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || write_all(fd, want.data, want.len) != STK_OK)
      st = STK_FAIL(STK_ERR_IO, "%s: cannot write '%s': %s", who, path, strerror(errno));
    if (fd >= 0) close(fd);
  }
  stk__strbuf_free(&want);
  return st;
}

static stk_status read_at(int fd, void *dst, size_t n, off_t at) {
  char *p = dst;
  while (n) {
    ssize_t r = pread(fd, p, n, at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return STK_ERR_IO;
    p += r;
    n -= (size_t)r;
    at += r;
  }
  return STK_OK;
}

/* A file whose header, key and stamp match: a hit. Anything else (no file, another key or
 * stamp, a damaged file) is a miss, so a bad file is simply made again. */
static void disk_find(stk__cache_store *s, const char *key, const char *stamp, stk__cache_value *v,
                      stk__cache_pin *pin, bool *hit) {
  char path[4096];
  entry_path(s, key, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  disk_header h;
  size_t kl = strlen(key), sl = strlen(stamp);
  char *text = NULL;
  struct stat sb;
  bool ok = fstat(fd, &sb) == 0 && read_at(fd, &h, sizeof h, 0) == STK_OK &&
            memcmp(h.magic, disk_magic, 8) == 0 && h.key_len == kl && h.stamp_len == sl &&
            h.count >= 1 && h.count <= STK__CACHE_MAX_TENSORS && (text = malloc(kl + sl + 1)) &&
            read_at(fd, text, kl + sl, sizeof h) == STK_OK && memcmp(text, key, kl) == 0 &&
            memcmp(text + kl, stamp, sl) == 0;
  free(text);
  uint64_t total = sizeof h + kl + sl;
  for (int i = 0; ok && i < h.count; i++) {
    stk__tensor *t = &v->t[i];
    ok = h.t[i].ndim >= 0 && h.t[i].ndim <= STK_MAX_NDIM && h.t[i].dtype >= 0 &&
         h.t[i].dtype < STK_DTYPE_COUNT;
    uint64_t bytes = ok ? stk_dtype_size((stk_dtype)h.t[i].dtype) : 0;
    for (int d = 0; ok && d < h.t[i].ndim; d++) {
      ok = h.t[i].shape[d] >= 0 && h.t[i].shape[d] < (1ll << 40);
      bytes *= (uint64_t)h.t[i].shape[d];
      t->shape[d] = h.t[i].shape[d];
    }
    ok = ok && bytes == h.t[i].bytes && bytes < (1ull << 40);
    if (!ok) break;
    t->data = NULL;
    t->ndim = h.t[i].ndim;
    t->dtype = (stk_dtype)h.t[i].dtype;
    memcpy(t->layout, h.t[i].layout, sizeof t->layout);
    t->layout[STK_MAX_LAYOUT] = '\0';
    v->bytes[i] = (size_t)bytes;
    total += bytes;
  }
  if (!ok || total != (uint64_t)sb.st_size) {
    close(fd);
    return;
  }
  v->count = h.count;
  pin->fd = fd;
  *hit = true;
}

static stk_status disk_write(int fd, const char *key, const char *stamp,
                             const stk__cache_value *v) {
  disk_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, disk_magic, 8);
  h.key_len = (uint32_t)strlen(key);
  h.stamp_len = (uint32_t)strlen(stamp);
  h.count = v->count;
  for (int i = 0; i < v->count; i++) {
    h.t[i].dtype = (int32_t)v->t[i].dtype;
    h.t[i].ndim = v->t[i].ndim;
    memcpy(h.t[i].shape, v->t[i].shape, sizeof h.t[i].shape);
    snprintf(h.t[i].layout, sizeof h.t[i].layout, "%s", v->t[i].layout);
    h.t[i].bytes = v->bytes[i];
  }
  STK_TRY(write_all(fd, &h, sizeof h));
  STK_TRY(write_all(fd, key, h.key_len));
  STK_TRY(write_all(fd, stamp, h.stamp_len));
  for (int i = 0; i < v->count; i++) STK_TRY(write_all(fd, v->t[i].data, v->bytes[i]));
  return STK_OK;
}

/* Writes a temporary file and renames it over the entry's name, so a reader never sees
 * half a file; when the directory is full (capacity_bytes), the value is dropped. */
static stk_status disk_put(stk__cache_store *s, const char *key, const char *stamp,
                           const stk__cache_value *v) {
  char path[4096], tmp[4200];
  entry_path(s, key, path, sizeof path);
  int64_t size = (int64_t)(sizeof(disk_header) + strlen(key) + strlen(stamp));
  for (int i = 0; i < v->count; i++) size += (int64_t)v->bytes[i];
  struct stat sb;
  int64_t old = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
  pthread_mutex_lock(&s->lock);
  bool fits = s->bytes - old + size <= s->capacity;
  if (fits)
    s->bytes += size - old, s->entries += old ? 0 : 1;
  else
    s->dropped++;
  pthread_mutex_unlock(&s->lock);
  if (!fits) return STK_OK;
  snprintf(tmp, sizeof tmp, "%s.%d-%lld.part", path, (int)getpid(),
           (long long)atomic_fetch_add(&s->tmp_counter, 1));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  stk_status st = fd < 0 ? STK_ERR_IO : disk_write(fd, key, stamp, v);
  int err = errno;
  if (fd >= 0 && close(fd) != 0 && st == STK_OK) st = STK_ERR_IO, err = errno;
  if (st == STK_OK && rename(tmp, path) != 0) st = STK_ERR_IO, err = errno;
  if (st == STK_OK) return STK_OK;
  unlink(tmp);
  pthread_mutex_lock(&s->lock);
  s->bytes -= size - old;
  s->entries -= old ? 0 : 1;
  pthread_mutex_unlock(&s->lock);
  return STK_FAIL(STK_ERR_IO, "cannot write the cache file '%s': %s", path, strerror(err));
}

/* ---- the interface ---- */

stk_status stk__cache_store_create(int64_t capacity, const char *dir, const char *prefix,
                                   const char *who, stk__cache_store **out) {
  stk__cache_store *s = stk__calloc(1, sizeof *s, "a sample cache");
  if (!s) return STK_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&s->lock, NULL);
  s->capacity = capacity;
  stk_status st = STK_OK;
  if (dir && *dir) {
    if (!(s->dir = stk__strdup(dir))) st = STK_ERR_OUT_OF_MEMORY;
    size_t n = s->dir ? strlen(s->dir) : 0;
    while (n > 1 && s->dir[n - 1] == '/') s->dir[--n] = '\0';
    if (st == STK_OK) st = disk_open(s, prefix, who);
  } else {
    s->num_buckets = 1024;
    if (!(s->buckets = stk__calloc(s->num_buckets, sizeof *s->buckets, "a sample cache")))
      st = STK_ERR_OUT_OF_MEMORY;
  }
  if (st != STK_OK) {
    stk__cache_store_destroy(s);
    return st;
  }
  *out = s;
  return STK_OK;
}

void stk__cache_store_destroy(stk__cache_store *s) {
  if (!s) return;
  for (mem_entry *e = s->head, *next; e; e = next) {
    next = e->next;
    free(e); /* no lookup is in progress once the pipeline stops */
  }
  free(s->buckets);
  free(s->dir);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

stk_status stk__cache_store_find(stk__cache_store *s, const char *key, const char *stamp,
                                 stk__cache_value *v, stk__cache_pin *pin, bool *hit) {
  *hit = false;
  pin->entry = NULL;
  pin->fd = -1;
  if (s->dir)
    disk_find(s, key, stamp, v, pin, hit);
  else
    mem_find(s, key, stamp, v, pin, hit);
  return STK_OK;
}

stk_status stk__cache_store_read(stk__cache_store *s, const stk__cache_pin *pin,
                                 const stk__cache_value *v, int i, void *dst) {
  if (!s->dir) {
    if (v->bytes[i]) memcpy(dst, v->t[i].data, v->bytes[i]);
    return STK_OK;
  }
  off_t at = (off_t)sizeof(disk_header);
  disk_header h;
  if (read_at(pin->fd, &h, sizeof h, 0) != STK_OK)
    return STK_FAIL(STK_ERR_IO, "cannot read a cache file in '%s'", s->dir);
  at += h.key_len + h.stamp_len;
  for (int k = 0; k < i; k++) at += (off_t)v->bytes[k];
  if (read_at(pin->fd, dst, v->bytes[i], at) != STK_OK)
    return STK_FAIL(STK_ERR_IO, "cannot read a cache file in '%s' (changed while read?)", s->dir);
  return STK_OK;
}

void stk__cache_store_unpin(stk__cache_store *s, stk__cache_pin *pin) {
  if (pin->fd >= 0) close(pin->fd);
  if (pin->entry) {
    pthread_mutex_lock(&s->lock);
    mem_unref(pin->entry);
    pthread_mutex_unlock(&s->lock);
  }
  pin->fd = -1;
  pin->entry = NULL;
}

stk_status stk__cache_store_put(stk__cache_store *s, const char *key, const char *stamp,
                                const stk__cache_value *v) {
  return s->dir ? disk_put(s, key, stamp, v) : mem_put(s, key, stamp, v);
}

void stk__cache_store_stats_get(stk__cache_store *s, stk__cache_store_stats *out) {
  pthread_mutex_lock(&s->lock);
  out->bytes = s->bytes;
  out->entries = s->entries;
  out->dropped = s->dropped;
  pthread_mutex_unlock(&s->lock);
}
