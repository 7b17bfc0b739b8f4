/* NeMo manifest parsing (manifest.h): a small JSON reader for one flat object a line. */
#include "manifest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && isspace((unsigned char)*c->p)) c->p++;
}

/* Appends the UTF-8 encoding of code point u. */
static size_t put_utf8(char *o, unsigned u) {
  if (u < 0x80) return o[0] = (char)u, 1;
  if (u < 0x800) return o[0] = (char)(0xC0 | u >> 6), o[1] = (char)(0x80 | (u & 63)), 2;
  o[0] = (char)(0xE0 | u >> 12), o[1] = (char)(0x80 | ((u >> 6) & 63));
  o[2] = (char)(0x80 | (u & 63));
  return 3;
}

/* A JSON string at c->p (after the quote is checked) into a new buffer; NULL on error. */
static char *parse_string(cursor *c) {
  if (c->p >= c->end || *c->p != '"') return NULL;
  c->p++;
  char *o = malloc((size_t)(c->end - c->p) + 1);
  size_t n = 0;
  if (!o) return NULL;
  while (c->p < c->end && *c->p != '"') {
    char ch = *c->p++;
    if (ch != '\\') {
      o[n++] = ch;
      continue;
    }
    if (c->p >= c->end) break;
    char e = *c->p++;
    const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
    const char *hit = strchr(map, e);
    if (e == 'u' && c->end - c->p >= 4) {
      char hex[5] = {c->p[0], c->p[1], c->p[2], c->p[3], 0};
      c->p += 4;
      n += put_utf8(o + n, (unsigned)strtoul(hex, NULL, 16)); /* no surrogate pairs */
    } else if (e && hit && (hit - map) % 2 == 0) {
      o[n++] = hit[1];
    } else {
      free(o);
      return NULL;
    }
  }
  if (c->p >= c->end) {
    free(o);
    return NULL;
  }
  c->p++;
  o[n] = '\0';
  return o;
}

/* Skips any JSON value (nested objects and arrays included). */
static bool skip_value(cursor *c) {
  skip_ws(c);
  if (c->p >= c->end) return false;
  if (*c->p == '"') {
    char *s = parse_string(c);
    free(s);
    return s != NULL;
  }
  if (*c->p == '{' || *c->p == '[') {
    int depth = 0;
    while (c->p < c->end) {
      if (*c->p == '"') {
        if (!skip_value(c)) return false;
        continue;
      }
      if (*c->p == '{' || *c->p == '[') depth++;
      if (*c->p == '}' || *c->p == ']') depth--;
      c->p++;
      if (depth == 0) return true;
    }
    return false;
  }
  const char *start = c->p;
  while (c->p < c->end && !strchr(",}] \t\r\n", *c->p)) c->p++;
  return c->p > start;
}

/* One line: a flat object. Fills e (path NULL when the key is missing). */
static bool parse_object(cursor *c, stk__manifest_entry *e) {
  skip_ws(c);
  if (c->p >= c->end || *c->p++ != '{') return false;
  skip_ws(c);
  if (c->p < c->end && *c->p == '}') return c->p++, true;
  for (;;) {
    skip_ws(c);
    char *key = parse_string(c);
    if (!key) return false;
    skip_ws(c);
    bool ok = c->p < c->end && *c->p++ == ':';
    skip_ws(c);
    if (ok && strcmp(key, "audio_filepath") == 0 && !e->path) {
      ok = (e->path = parse_string(c)) != NULL;
    } else if (ok && strcmp(key, "text") == 0 && !e->text) {
      ok = (e->text = parse_string(c)) != NULL;
    } else if (ok && strcmp(key, "duration") == 0) {
      char *endp;
      e->duration = strtod(c->p, &endp);
      ok = endp != c->p && endp <= c->end;
      c->p = endp;
    } else if (ok) {
      ok = skip_value(c);
    }
    free(key);
    if (!ok) return false;
    skip_ws(c);
    if (c->p < c->end && *c->p == ',') {
      c->p++;
      continue;
    }
    return c->p < c->end && *c->p++ == '}';
  }
}

static void entry_free(stk__manifest_entry *e) {
  free(e->path);
  free(e->text);
  e->path = e->text = NULL;
}

/* Makes e->path absolute against the manifest's directory when it is relative. */
static bool resolve(stk__manifest_entry *e, const char *manifest) {
  if (e->path[0] == '/') return true;
  const char *slash = strrchr(manifest, '/');
  if (!slash) return true;
  size_t dir = (size_t)(slash - manifest) + 1, len = strlen(e->path);
  char *p = malloc(dir + len + 1);
  if (!p) return false;
  memcpy(p, manifest, dir);
  memcpy(p + dir, e->path, len + 1);
  free(e->path);
  e->path = p;
  return true;
}

static stk_status keep(stk__manifest *m, stk__manifest_entry *e, const char *who) {
  if (m->count == m->capacity) {
    int64_t cap = m->capacity ? 2 * m->capacity : 64;
    void *p = realloc(m->entries, sizeof *m->entries * (size_t)cap);
    if (!p) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory for the manifest", who);
    m->entries = p, m->capacity = cap;
  }
  if (!e->text && !(e->text = calloc(1, 1)))
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory for the manifest", who);
  m->entries[m->count++] = *e;
  return STK_OK;
}

static stk_status parse_line(stk__manifest *m, const char *line, size_t len, const char *path,
                             int64_t lineno, double min_dur, double max_dur, const char *who) {
  cursor c = {line, line + len};
  skip_ws(&c);
  if (c.p == c.end) return STK_OK; /* blank line */
  stk__manifest_entry e = {NULL, NULL, 0.0, m->seen};
  bool ok = parse_object(&c, &e);
  skip_ws(&c);
  if (!ok || c.p != c.end || !e.path) {
    entry_free(&e);
    return STK_FAIL(STK_ERR_PARSE, "%s: %s line %lld: %s", who, path, (long long)lineno,
                    ok && c.p == c.end ? "no \"audio_filepath\"" : "not a JSON object");
  }
  m->seen++;
  if (e.duration < min_dur || (max_dur > 0 && e.duration > max_dur)) {
    entry_free(&e);
    return STK_OK;
  }
  if (!resolve(&e, path)) {
    entry_free(&e);
    return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "%s: no memory", who);
  }
  stk_status st = keep(m, &e, who);
  if (st != STK_OK) entry_free(&e);
  return st;
}

stk_status stk__manifest_load(stk__manifest *m, const char *path, double min_dur, double max_dur,
                              const char *who) {
  FILE *f = fopen(path, "rb");
  if (!f) return STK_FAIL(STK_ERR_NOT_FOUND, "%s: cannot open manifest '%s'", who, path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int64_t lineno = 0;
  stk_status st = STK_OK;
  while (st == STK_OK && (len = getline(&line, &cap, f)) >= 0)
    st = parse_line(m, line, (size_t)len, path, ++lineno, min_dur, max_dur, who);
  free(line);
  fclose(f);
  return st;
}

void stk__manifest_free(stk__manifest *m) {
  for (int64_t i = 0; i < m->count; i++) entry_free(&m->entries[i]);
  free(m->entries);
  memset(m, 0, sizeof *m);
}
