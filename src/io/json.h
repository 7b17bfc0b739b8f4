/*
 * A small JSON reader for annotation files (COCO): the whole text is parsed once into a
 * flat array of tokens that callers walk by index. Strict RFC 8259 grammar; no
 * recursion (an explicit stack, so hostile nesting cannot overflow the C stack); limits
 * on nesting depth and on the number of tokens; every error names the file and the byte
 * offset where the text went wrong.
 *
 * Token 0 is the root value. An array's children follow it in order; an object's
 * children are key, value, key, value, ... (keys are STRING tokens). `next` is the index
 * just past a token's whole subtree, which is also its next sibling.
 */
#ifndef STOKER_IO_JSON_H
#define STOKER_IO_JSON_H

#include "../core/core.h"

typedef enum {
  STK__JSON_NULL,
  STK__JSON_FALSE,
  STK__JSON_TRUE,
  STK__JSON_NUMBER,
  STK__JSON_STRING,
  STK__JSON_ARRAY,
  STK__JSON_OBJECT,
} stk__json_type;

typedef struct {
  uint32_t start; /* byte offset of the token (strings: just past the opening quote) */
  uint32_t len;   /* strings: raw (escaped) length; numbers: text length */
  uint32_t next;  /* index past this token's subtree */
  uint32_t size;  /* arrays: elements; objects: members (key-value pairs) */
  uint8_t type;   /* stk__json_type */
} stk__json_tok;

typedef struct {
  const char *text; /* borrowed: must outlive the document */
  size_t len;
  stk__json_tok *toks;
  uint32_t count;
} stk__json_doc;

/* The deepest nesting accepted, and the most tokens (each costs 20 bytes). */
#define STK__JSON_MAX_DEPTH  512
#define STK__JSON_MAX_TOKENS ((uint32_t)1 << 30)

/* Parses `len` bytes of `text` (not necessarily NUL-terminated; at most 4 GiB - 1).
 * Errors are STK_ERR_DECODE "<name>: byte N: <what>" (STK_ERR_LIMIT for the limits, out
 * of memory for the token array). Free with stk__json_free, also after a failure. */
stk_status stk__json_parse(stk__json_doc *doc, const char *text, size_t len, const char *name);
void stk__json_free(stk__json_doc *doc);

/* The value of member `key` of object token `obj`, or 0 when absent (0 is the root,
 * never a member) or `obj` is not an object. The first match wins. */
uint32_t stk__json_member(const stk__json_doc *doc, uint32_t obj, const char *key);
/* The first child of an array or object (its first key), 0 when empty. */
uint32_t stk__json_first(const stk__json_doc *doc, uint32_t tok);
/* The number of token `tok`; false when it is not a number (or out of double's range). */
bool stk__json_number(const stk__json_doc *doc, uint32_t tok, double *out);
/* A number that is an integer within [min, max]. */
bool stk__json_int(const stk__json_doc *doc, uint32_t tok, int64_t min, int64_t max, int64_t *out);
/* Decodes string token `tok` (escapes resolved, \u as UTF-8) into a new NUL-terminated
 * string the caller frees; NULL when `tok` is not a string, holds \u0000, or on no
 * memory. */
char *stk__json_strdup(const stk__json_doc *doc, uint32_t tok);
/* Whether string token `tok` equals `s` (compared after decoding escapes). */
bool stk__json_streq(const stk__json_doc *doc, uint32_t tok, const char *s);

#endif /* STOKER_IO_JSON_H */
