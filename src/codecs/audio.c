/* Audio decoding from memory through libsndfile's virtual I/O (audio.h). */
#include "audio.h"

#include <stdlib.h>
#include <string.h>

#ifdef STK_HAVE_SNDFILE
#include <sndfile.h>

/* A read-only view of the encoded bytes for libsndfile. */
typedef struct {
  const unsigned char *p;
  sf_count_t n, pos;
} mem_file;

static sf_count_t mem_len(void *u) { return ((mem_file *)u)->n; }

static sf_count_t mem_seek(sf_count_t off, int whence, void *u) {
  mem_file *m = u;
  sf_count_t base = whence == SEEK_CUR ? m->pos : whence == SEEK_END ? m->n : 0;
  sf_count_t to = base + off;
  if (to < 0 || to > m->n) return -1;
  m->pos = to;
  return to;
}

static sf_count_t mem_read(void *dst, sf_count_t count, void *u) {
  mem_file *m = u;
  sf_count_t left = m->n - m->pos;
  if (count > left) count = left;
  if (count <= 0) return 0;
  memcpy(dst, m->p + m->pos, (size_t)count);
  m->pos += count;
  return count;
}

static sf_count_t mem_write(const void *src, sf_count_t count, void *u) { return 0; }
static sf_count_t mem_tell(void *u) { return ((mem_file *)u)->pos; }

bool stk__audio_codec_available(void) { return true; }

stk_status stk__audio_decode(const void *bytes, size_t n, int64_t max_elems, stk__audio *out) {
  memset(out, 0, sizeof *out);
  mem_file m = {bytes, (sf_count_t)n, 0};
  SF_VIRTUAL_IO io = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
  SF_INFO info = {0};
  SNDFILE *f = sf_open_virtual(&io, SFM_READ, &info, &m);
  if (!f) return STK_FAIL(STK_ERR_DECODE, "not a readable audio file (%s)", sf_strerror(NULL));
  stk_status st = STK_OK;
  if (info.channels < 1 || info.samplerate < 1 || info.frames < 0) {
    st = STK_FAIL(STK_ERR_DECODE, "bad header: %d channels at %d Hz", info.channels,
                  info.samplerate);
  } else if (max_elems > 0 && info.frames > max_elems / info.channels) {
    st = STK_FAIL(STK_ERR_LIMIT, "%lld frames x %d channels exceed the limit of %lld samples",
                  (long long)info.frames, info.channels, (long long)max_elems);
  }
  size_t elems = (size_t)info.frames * (size_t)(info.channels > 0 ? info.channels : 1);
  if (st == STK_OK) {
    out->data = malloc(sizeof(double) * (elems ? elems : 1));
    if (!out->data) st = STK_FAIL(STK_ERR_OUT_OF_MEMORY, "no memory for %zu samples", elems);
  }
  if (st == STK_OK) {
    sf_count_t got = sf_readf_double(f, out->data, info.frames);
    if (got < info.frames && sf_error(f) != SF_ERR_NO_ERROR)
      st = STK_FAIL(STK_ERR_DECODE, "read error: %s", sf_strerror(f));
    out->frames = got;
    out->channels = info.channels;
    out->rate = info.samplerate;
  }
  sf_close(f);
  if (st != STK_OK) stk__audio_free(out);
  return st;
}

#else /* !STK_HAVE_SNDFILE */

bool stk__audio_codec_available(void) { return false; }

stk_status stk__audio_decode(const void *bytes, size_t n, int64_t max_elems, stk__audio *out) {
  memset(out, 0, sizeof *out);
  return STK_FAIL(STK_ERR_UNSUPPORTED,
                  "built without libsndfile (install libsndfile1-dev and rebuild)");
}

#endif

void stk__audio_free(stk__audio *a) {
  free(a->data);
  a->data = NULL;
}
