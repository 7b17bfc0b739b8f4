/* The JSON reader of json.h: one pass over the text with an explicit stack of open
 * containers, writing a flat token array. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s;
  size_t len, pos;
  const char *name;
  stk__json_doc *doc;
  uint32_t cap;
} parser;

static stk_status perr(const parser *p, size_t at, const char *what) {
  return STK_FAIL(STK_ERR_DECODE, "%s: byte %zu: %s", p->name, at, what);
}

/* Appends a token; its index goes to *index. */
static stk_status push(parser *p, uint8_t type, size_t start, uint32_t *index) {
  stk__json_doc *d = p->doc;
  if (d->count == p->cap) {
    if (p->cap >= STK__JSON_MAX_TOKENS)
      return STK_FAIL(STK_ERR_LIMIT, "%s: byte %zu: more than %u JSON values", p->name, start,
                      (unsigned)STK__JSON_MAX_TOKENS);
    uint32_t cap = p->cap ? p->cap * 2 : 256;
    stk__json_tok *t = stk__realloc(d->toks, (size_t)cap * sizeof *t, "JSON tokens");
    if (!t) return STK_ERR_OUT_OF_MEMORY;
    d->toks = t;
    p->cap = cap;
  }
  d->toks[d->count] = (stk__json_tok){(uint32_t)start, 0, d->count + 1, 0, type};
  *index = d->count++;
  return STK_OK;
}

static void skip_space(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A string starting at the opening quote at p->pos. */
static stk_status scan_string(parser *p, uint32_t *index) {
  size_t open = p->pos++;
  STK_TRY(push(p, STK__JSON_STRING, p->pos, index));
  while (p->pos < p->len) {
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"') {
      p->doc->toks[*index].len = (uint32_t)(p->pos - (open + 1));
      p->pos++;
      return STK_OK;
    }
    if (c < 0x20) return perr(p, p->pos, "control character inside a string");
    if (c == '\\') {
      if (p->pos + 1 >= p->len) break;
      char e = p->s[p->pos + 1];
      if (e == 'u') {
        if (p->pos + 6 > p->len) break;
        for (int k = 2; k < 6; k++)
          if (hex_value(p->s[p->pos + k]) < 0) return perr(p, p->pos, "bad \\u escape");
        p->pos += 6;
        continue;
      }
      if (!strchr("\"\\/bfnrt", e) || e == '\0') return perr(p, p->pos, "bad escape");
      p->pos += 2;
      continue;
    }
    p->pos++;
  }
  return perr(p, open, "unterminated string");
}

/* Skips a run of digits; false when there is none. */
static bool digits(parser *p) {
  size_t start = p->pos;
  while (p->pos < p->len && is_digit(p->s[p->pos])) p->pos++;
  return p->pos > start;
}

static stk_status scan_number(parser *p, uint32_t *index) {
  size_t start = p->pos;
  if (p->s[p->pos] == '-') p->pos++;
  if (p->pos < p->len && p->s[p->pos] == '0')
    p->pos++;
  else if (!digits(p))
    return perr(p, start, "bad number");
  if (p->pos < p->len && p->s[p->pos] == '.') {
    p->pos++;
    if (!digits(p)) return perr(p, start, "bad number (digits must follow '.')");
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    if (!digits(p)) return perr(p, start, "bad number (no exponent digits)");
  }
  STK_TRY(push(p, STK__JSON_NUMBER, start, index));
  p->doc->toks[*index].len = (uint32_t)(p->pos - start);
  return STK_OK;
}

static stk_status scan_literal(parser *p, uint32_t *index) {
  static const struct {
    const char *word;
    uint8_t type;
  } lits[] = {{"true", STK__JSON_TRUE}, {"false", STK__JSON_FALSE}, {"null", STK__JSON_NULL}};
  for (size_t i = 0; i < 3; i++) {
    size_t n = strlen(lits[i].word);
    if (p->len - p->pos >= n && memcmp(p->s + p->pos, lits[i].word, n) == 0) {
      STK_TRY(push(p, lits[i].type, p->pos, index));
      p->pos += n;
      return STK_OK;
    }
  }
  return perr(p, p->pos, "unexpected character");
}

/* Where the parser stands: a value is expected (possibly a closing bracket instead, right
 * after an opening one), a key, or what follows a complete value. */
enum { WANT_VALUE, WANT_KEY, WANT_AFTER };

typedef struct {
  uint32_t stack[STK__JSON_MAX_DEPTH];
  int depth;
  int want;
  bool may_close; /* just after '[' or '{' */
} walk;

/* A value (or key) is complete: counts it in its parent. */
static void complete(parser *p, walk *w, uint32_t tok) {
  stk__json_tok *t = p->doc->toks;
  t[tok].next = p->doc->count;
  w->want = WANT_AFTER;
  if (w->depth == 0) return;
  t[w->stack[w->depth - 1]].size++; /* keys do not come here: objects count members */
}

static stk_status close_container(parser *p, walk *w, char c) {
  if (w->depth == 0) return perr(p, p->pos, "unbalanced closing bracket");
  uint32_t top = w->stack[w->depth - 1];
  char want = p->doc->toks[top].type == STK__JSON_ARRAY ? ']' : '}';
  if (c != want) return perr(p, p->pos, "mismatched closing bracket");
  p->pos++;
  w->depth--;
  complete(p, w, top);
  return STK_OK;
}

static stk_status open_container(parser *p, walk *w, uint8_t type) {
  if (w->depth == STK__JSON_MAX_DEPTH)
    return STK_FAIL(STK_ERR_LIMIT, "%s: byte %zu: nesting deeper than %d", p->name, p->pos,
                    STK__JSON_MAX_DEPTH);
  uint32_t tok;
  STK_TRY(push(p, type, p->pos, &tok));
  w->stack[w->depth++] = tok;
  p->pos++;
  w->want = type == STK__JSON_ARRAY ? WANT_VALUE : WANT_KEY;
  w->may_close = true;
  return STK_OK;
}

static stk_status value(parser *p, walk *w) {
  char c = p->s[p->pos];
  uint32_t tok = 0;
  if (c == '[') return open_container(p, w, STK__JSON_ARRAY);
  if (c == '{') return open_container(p, w, STK__JSON_OBJECT);
  if (c == '"')
    STK_TRY(scan_string(p, &tok));
  else if (c == '-' || is_digit(c))
    STK_TRY(scan_number(p, &tok));
  else
    STK_TRY(scan_literal(p, &tok));
  complete(p, w, tok);
  return STK_OK;
}

/* After a key: the ':' and then a value. */
static stk_status key(parser *p, walk *w) {
  if (p->s[p->pos] != '"') return perr(p, p->pos, "expected a string key");
  uint32_t tok;
  STK_TRY(scan_string(p, &tok));
  skip_space(p);
  if (p->pos >= p->len || p->s[p->pos] != ':') return perr(p, p->pos, "expected ':'");
  p->pos++;
  w->want = WANT_VALUE;
  return STK_OK;
}

static stk_status after(parser *p, walk *w) {
  char c = p->s[p->pos];
  if (c == ']' || c == '}') return close_container(p, w, c);
  if (c != ',' || w->depth == 0) return perr(p, p->pos, "expected ',' or a closing bracket");
  p->pos++;
  bool array = p->doc->toks[w->stack[w->depth - 1]].type == STK__JSON_ARRAY;
  w->want = array ? WANT_VALUE : WANT_KEY;
  return STK_OK;
}

static stk_status run(parser *p, walk *w) {
  for (;;) {
    skip_space(p);
    if (p->pos >= p->len) {
      if (w->want == WANT_AFTER && w->depth == 0) return STK_OK;
      return perr(p, p->pos, p->doc->count ? "unexpected end of the text" : "empty text");
    }
    if (w->want == WANT_AFTER && w->depth == 0) return perr(p, p->pos, "text after the value");
    char c = p->s[p->pos];
    bool may_close = w->may_close;
    w->may_close = false;
    if (may_close && (c == ']' || c == '}')) {
      STK_TRY(close_container(p, w, c));
      continue;
    }
    if (w->want == WANT_VALUE)
      STK_TRY(value(p, w));
    else if (w->want == WANT_KEY)
      STK_TRY(key(p, w));
    else
      STK_TRY(after(p, w));
  }
}

stk_status stk__json_parse(stk__json_doc *doc, const char *text, size_t len, const char *name) {
  memset(doc, 0, sizeof *doc);
  doc->text = text;
  doc->len = len;
  if (len >= UINT32_MAX)
    return STK_FAIL(STK_ERR_LIMIT, "%s: %zu bytes; JSON texts are limited to 4 GiB", name, len);
  parser p = {text, len, 0, name, doc, 0};
  walk *w = stk__malloc(sizeof *w, "a JSON parser");
  if (!w) return STK_ERR_OUT_OF_MEMORY;
  w->depth = 0;
  w->want = WANT_VALUE;
  w->may_close = false;
  /* A UTF-8 byte order mark is tolerated (some tools write one). */
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
  stk_status st = run(&p, w);
  free(w);
  return st;
}

void stk__json_free(stk__json_doc *doc) {
  if (!doc) return;
  free(doc->toks);
  doc->toks = NULL;
  doc->count = 0;
}

uint32_t stk__json_first(const stk__json_doc *doc, uint32_t tok) {
  if (tok >= doc->count) return 0;
  const stk__json_tok *t = &doc->toks[tok];
  if ((t->type != STK__JSON_ARRAY && t->type != STK__JSON_OBJECT) || t->size == 0) return 0;
  return tok + 1;
}

uint32_t stk__json_member(const stk__json_doc *doc, uint32_t obj, const char *key) {
  if (obj >= doc->count || doc->toks[obj].type != STK__JSON_OBJECT) return 0;
  uint32_t k = stk__json_first(doc, obj);
  for (uint32_t i = 0; i < doc->toks[obj].size; i++) {
    uint32_t v = doc->toks[k].next;
    if (stk__json_streq(doc, k, key)) return v;
    k = doc->toks[v].next;
  }
  return 0;
}

bool stk__json_number(const stk__json_doc *doc, uint32_t tok, double *out) {
  if (tok >= doc->count || doc->toks[tok].type != STK__JSON_NUMBER) return false;
  const stk__json_tok *t = &doc->toks[tok];
  char buf[128];
  if (t->len >= sizeof buf) return false;
  memcpy(buf, doc->text + t->start, t->len);
  buf[t->len] = '\0';
  errno = 0;
  double v = strtod(buf, NULL);
  if (errno == ERANGE && isinf(v)) return false;
  *out = v;
  return true;
}

bool stk__json_int(const stk__json_doc *doc, uint32_t tok, int64_t min, int64_t max, int64_t *out) {
  double v;
  if (!stk__json_number(doc, tok, &v) || v != floor(v) || v < (double)min || v > (double)max)
    return false;
  *out = (int64_t)v;
  return true;
}

/* Appends code point `cp` as UTF-8; returns the bytes written. */
static size_t put_utf8(char *dst, uint32_t cp) {
  if (cp < 0x80) return dst[0] = (char)cp, 1;
  if (cp < 0x800) {
    dst[0] = (char)(0xC0 | (cp >> 6));
    dst[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    dst[0] = (char)(0xE0 | (cp >> 12));
    dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  dst[0] = (char)(0xF0 | (cp >> 18));
  dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  dst[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

static uint32_t hex4(const char *s) {
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) v = v * 16 + (uint32_t)hex_value(s[k]);
  return v;
}

/* Decodes the escape at raw[*i] (a backslash; validated by the scanner) into dst. */
static size_t unescape(const char *raw, size_t len, size_t *i, char *dst) {
  char e = raw[*i + 1];
  if (e != 'u') {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    *i += 2;
    dst[0] = to[strchr(from, e) - from];
    return 1;
  }
  uint32_t cp = hex4(raw + *i + 2);
  *i += 6;
  if (cp >= 0xD800 && cp < 0xDC00 && *i + 6 <= len && raw[*i] == '\\' && raw[*i + 1] == 'u') {
    uint32_t lo = hex4(raw + *i + 2);
    if (lo >= 0xDC00 && lo < 0xE000) {
      *i += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
  }
  if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* a lone surrogate */
  return put_utf8(dst, cp);
}

/* Decodes string token `tok` into a new buffer; *n gets its length. */
static char *decode(const stk__json_doc *doc, uint32_t tok, size_t *n) {
  if (tok >= doc->count || doc->toks[tok].type != STK__JSON_STRING) return NULL;
  const char *raw = doc->text + doc->toks[tok].start;
  size_t len = doc->toks[tok].len, o = 0;
  char *out = stk__malloc(len + 1, "a JSON string"); /* escapes never grow the text */
  if (!out) return NULL;
  for (size_t i = 0; i < len;) {
    if (raw[i] == '\\')
      o += unescape(raw, len, &i, out + o);
    else
      out[o++] = raw[i++];
  }
  out[o] = '\0';
  *n = o;
  return out;
}

char *stk__json_strdup(const stk__json_doc *doc, uint32_t tok) {
  size_t n;
  char *s = decode(doc, tok, &n);
  if (s && strlen(s) != n) { /* an embedded \u0000 */
    free(s);
    return NULL;
  }
  return s;
}

bool stk__json_streq(const stk__json_doc *doc, uint32_t tok, const char *s) {
  if (tok >= doc->count || doc->toks[tok].type != STK__JSON_STRING) return false;
  const stk__json_tok *t = &doc->toks[tok];
  size_t n = strlen(s);
  /* Fast path: no escapes in the raw text. */
  if (!memchr(doc->text + t->start, '\\', t->len))
    return t->len == n && memcmp(doc->text + t->start, s, n) == 0;
  size_t m;
  char *d = decode(doc, tok, &m);
  bool eq = d && m == n && memcmp(d, s, n) == 0;
  free(d);
  return eq;
}
