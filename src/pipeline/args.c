/* Argument values: parsing literals in text form, checking them against the schema,
 * formatting them back, copying and freeing. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void stk__argval_clear(stk__argval *v) {
  free(v->edge_name);
  free(v->s);
  free(v->ints);
  free(v->floats);
  if (v->strs)
    for (size_t i = 0; i < v->count; i++) free(v->strs[i]);
  free(v->strs);
  stk_arg_type type = v->type;
  memset(v, 0, sizeof *v);
  v->type = type;
  v->edge = -1;
}

stk_status stk__argval_copy(stk__argval *dst, const stk__argval *src) {
  *dst = *src;
  dst->edge_name = NULL;
  dst->s = NULL;
  dst->ints = NULL;
  dst->floats = NULL;
  dst->strs = NULL;
  if (src->edge_name && !(dst->edge_name = stk__strdup(src->edge_name))) goto oom;
  if (src->s && !(dst->s = stk__strdup(src->s))) goto oom;
  if (src->ints) {
    if (!(dst->ints = stk__malloc(src->count * sizeof(int64_t), "an argument"))) goto oom;
    memcpy(dst->ints, src->ints, src->count * sizeof(int64_t));
  }
  if (src->floats) {
    if (!(dst->floats = stk__malloc(src->count * sizeof(double), "an argument"))) goto oom;
    memcpy(dst->floats, src->floats, src->count * sizeof(double));
  }
  if (src->strs) {
    if (!(dst->strs = stk__calloc(src->count, sizeof(char *), "an argument"))) goto oom;
    for (size_t i = 0; i < src->count; i++)
      if (!(dst->strs[i] = stk__strdup(src->strs[i]))) goto oom;
  }
  return STK_OK;
oom:
  stk__argval_clear(dst);
  return STK_ERR_OUT_OF_MEMORY;
}

/* ---- a tiny literal parser: numbers, true/false, "strings", [lists] ---- */

typedef enum { LIT_NUMBER, LIT_BOOL, LIT_STRING } lit_kind;

typedef struct {
  lit_kind kind;
  double number;
  bool is_integer;
  int64_t integer;
  bool boolean;
  char *string;
} literal;

static const char *skip_space(const char *p) {
  while (*p && isspace((unsigned char)*p)) p++;
  return p;
}

static stk_status parse_string(const char **pp, char **out, const char *arg) {
  const char *p = *pp + 1; /* past the opening quote */
  stk__strbuf b = {0};
  for (; *p && *p != '"'; p++) {
    char c = *p;
    if (c == '\\') {
      p++;
      switch (*p) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        case '\\':
          c = '\\';
          break;
        case '"':
          c = '"';
          break;
        default:
          stk__strbuf_free(&b);
          return STK_FAIL(STK_ERR_PARSE, "argument '%s': bad escape in string", arg);
      }
    }
    if (stk__strbuf_append(&b, &c, 1) != STK_OK) {
      stk__strbuf_free(&b);
      return STK_ERR_OUT_OF_MEMORY;
    }
  }
  if (*p != '"') {
    stk__strbuf_free(&b);
    return STK_FAIL(STK_ERR_PARSE, "argument '%s': unterminated string", arg);
  }
  *pp = p + 1;
  if (!b.data && !(b.data = stk__strdup(""))) return STK_ERR_OUT_OF_MEMORY;
  *out = b.data;
  return STK_OK;
}

static stk_status parse_scalar(const char **pp, literal *lit, const char *arg) {
  const char *p = skip_space(*pp);
  memset(lit, 0, sizeof *lit);
  if (*p == '"') {
    lit->kind = LIT_STRING;
    STK_TRY(parse_string(&p, &lit->string, arg));
  } else if (strncmp(p, "true", 4) == 0 && !isalnum((unsigned char)p[4])) {
    lit->kind = LIT_BOOL, lit->boolean = true, p += 4;
  } else if (strncmp(p, "false", 5) == 0 && !isalnum((unsigned char)p[5])) {
    lit->kind = LIT_BOOL, lit->boolean = false, p += 5;
  } else {
    char *end;
    errno = 0;
    long long iv = strtoll(p, &end, 10);
    bool int_ok = end != p && errno == 0 && !strchr(".eE", *end) && !(isalpha((unsigned char)*end));
    if (int_ok) {
      lit->kind = LIT_NUMBER, lit->is_integer = true, lit->integer = iv, lit->number = (double)iv;
      p = end;
    } else {
      double dv = strtod(p, &end);
      if (end == p)
        return STK_FAIL(STK_ERR_PARSE, "argument '%s': cannot read a value at '%.20s'", arg, p);
      lit->kind = LIT_NUMBER, lit->number = dv;
      p = end;
    }
  }
  *pp = p;
  return STK_OK;
}

static const char *type_word(stk_arg_type t) {
  static const char *const words[] = {"a bool",           "an int",         "a float",
                                      "a string",         "a list of ints", "a list of floats",
                                      "a list of strings"};
  return (unsigned)t < 7 ? words[t] : "?";
}

static stk_status mistyped(const stk_arg_schema *schema) {
  return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "argument '%s' must be %s", schema->name,
                  type_word(schema->type));
}

/* Stores one scalar literal into element `i` of the value (or the scalar). */
static stk_status store_literal(const stk_arg_schema *schema, stk__argval *v, size_t i,
                                literal *lit) {
  switch (schema->type) {
    case STK_ARG_BOOL:
      if (lit->kind == LIT_BOOL)
        v->b = lit->boolean;
      else if (lit->kind == LIT_NUMBER && lit->is_integer &&
               (lit->integer == 0 || lit->integer == 1))
        v->b = lit->integer != 0;
      else
        return mistyped(schema);
      return STK_OK;
    case STK_ARG_INT:
    case STK_ARG_INTS: {
      int64_t x;
      if (lit->kind == LIT_NUMBER && lit->is_integer)
        x = lit->integer;
      else if (lit->kind == LIT_NUMBER && lit->number == floor(lit->number) &&
               fabs(lit->number) < 9e15)
        x = (int64_t)lit->number;
      else if (lit->kind == LIT_BOOL)
        x = lit->boolean;
      else
        return mistyped(schema);
      if (schema->type == STK_ARG_INT)
        v->i = x;
      else
        v->ints[i] = x;
      return STK_OK;
    }
    case STK_ARG_FLOAT:
    case STK_ARG_FLOATS:
      if (lit->kind != LIT_NUMBER) return mistyped(schema);
      if (schema->type == STK_ARG_FLOAT)
        v->f = lit->number;
      else
        v->floats[i] = lit->number;
      return STK_OK;
    case STK_ARG_STRING:
    case STK_ARG_STRINGS:
      if (lit->kind != LIT_STRING) return mistyped(schema);
      if (schema->type == STK_ARG_STRING)
        v->s = lit->string;
      else
        v->strs[i] = lit->string;
      lit->string = NULL;
      return STK_OK;
  }
  return mistyped(schema);
}

static bool is_list_type(stk_arg_type t) {
  return t == STK_ARG_INTS || t == STK_ARG_FLOATS || t == STK_ARG_STRINGS;
}

static stk_status alloc_list(stk__argval *v, stk_arg_type t, size_t n) {
  v->count = n;
  if (t == STK_ARG_INTS) v->ints = stk__calloc(n, sizeof(int64_t), "an argument list");
  if (t == STK_ARG_FLOATS) v->floats = stk__calloc(n, sizeof(double), "an argument list");
  if (t == STK_ARG_STRINGS) v->strs = stk__calloc(n, sizeof(char *), "an argument list");
  if (!v->ints && !v->floats && !v->strs) return STK_ERR_OUT_OF_MEMORY;
  return STK_OK;
}

/* Counts the elements of a list starting at '['. */
static stk_status count_list(const char *p, const stk_arg_schema *schema, size_t *n) {
  literal lit;
  *n = 0;
  p = skip_space(p + 1);
  if (*p == ']') return STK_OK;
  for (;;) {
    STK_TRY(parse_scalar(&p, &lit, schema->name));
    free(lit.string);
    (*n)++;
    p = skip_space(p);
    if (*p == ']') return STK_OK;
    if (*p != ',')
      return STK_FAIL(STK_ERR_PARSE, "argument '%s': expected ',' or ']' in list", schema->name);
    p++;
  }
}

stk_status stk__argval_parse(const stk_arg_schema *schema, const char *text, stk__argval *out) {
  stk_status st = STK_OK;
  stk__argval v = {.type = schema->type, .edge = -1};
  const char *p = skip_space(text);
  literal lit = {0};
  if (*p == '[') {
    if (!is_list_type(schema->type)) return mistyped(schema);
    size_t n;
    STK_TRY(count_list(p, schema, &n));
    if ((st = alloc_list(&v, schema->type, n)) != STK_OK) goto fail;
    p = skip_space(p + 1);
    for (size_t i = 0; i < n; i++) {
      if ((st = parse_scalar(&p, &lit, schema->name)) != STK_OK) goto fail;
      st = store_literal(schema, &v, i, &lit);
      free(lit.string);
      lit.string = NULL;
      if (st != STK_OK) goto fail;
      p = skip_space(p);
      if (*p == ',') p++;
    }
    p = skip_space(p) + 1; /* past ']' */
  } else {
    if ((st = parse_scalar(&p, &lit, schema->name)) != STK_OK) goto fail;
    if (is_list_type(schema->type)) { /* a scalar promotes to a one-element list */
      if ((st = alloc_list(&v, schema->type, 1)) != STK_OK) goto fail;
      st = store_literal(schema, &v, 0, &lit);
    } else {
      st = store_literal(schema, &v, 0, &lit);
    }
    free(lit.string);
    if (st != STK_OK) goto fail;
  }
  if (*skip_space(p) != '\0') {
    st = STK_FAIL(STK_ERR_PARSE, "argument '%s': unexpected text after the value: '%.20s'",
                  schema->name, skip_space(p));
    goto fail;
  }
  v.has_value = true;
  *out = v;
  return STK_OK;
fail:
  stk__argval_clear(&v);
  return st;
}

static bool in_choices(const char *choices, const char *s) {
  size_t n = strlen(s);
  for (const char *c = choices; *c;) {
    const char *bar = strchr(c, '|');
    size_t len = bar ? (size_t)(bar - c) : strlen(c);
    if (len == n && strncmp(c, s, n) == 0) return true;
    if (!bar) break;
    c = bar + 1;
  }
  return false;
}

stk_status stk__argval_check(const stk_arg_schema *schema, const stk__argval *v,
                             const char *op_name) {
  if (v->edge_name) return STK_OK;
  if (schema->flags & STK_ARGF_RANGE) {
    size_t n = is_list_type(schema->type) ? v->count : 1;
    for (size_t i = 0; i < n; i++) {
      double x = schema->type == STK_ARG_INT      ? (double)v->i
                 : schema->type == STK_ARG_FLOAT  ? v->f
                 : schema->type == STK_ARG_INTS   ? (double)v->ints[i]
                 : schema->type == STK_ARG_FLOATS ? v->floats[i]
                                                  : 0.0;
      if (!(x >= schema->min && x <= schema->max))
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: argument '%s' = %g is out of range [%g, %g]",
                        op_name, schema->name, x, schema->min, schema->max);
    }
  }
  if (schema->choices) {
    if (schema->type == STK_ARG_STRING && v->s && !in_choices(schema->choices, v->s))
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: argument '%s' = \"%s\" is not one of %s",
                      op_name, schema->name, v->s, schema->choices);
    if (schema->type == STK_ARG_STRINGS)
      for (size_t i = 0; i < v->count; i++)
        if (!in_choices(schema->choices, v->strs[i]))
          return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: argument '%s' has \"%s\", not one of %s",
                          op_name, schema->name, v->strs[i], schema->choices);
  }
  return STK_OK;
}

static stk_status format_string(const char *s, stk__strbuf *out) {
  STK_TRY(stk__strbuf_append(out, "\"", 1));
  for (; *s; s++) {
    const char *esc = *s == '"'    ? "\\\""
                      : *s == '\\' ? "\\\\"
                      : *s == '\n' ? "\\n"
                      : *s == '\t' ? "\\t"
                                   : NULL;
    STK_TRY(esc ? stk__strbuf_append(out, esc, 2) : stk__strbuf_append(out, s, 1));
  }
  return stk__strbuf_append(out, "\"", 1);
}

/* Shortest text that reads back to the same double. */
static stk_status format_double(double x, stk__strbuf *out) {
  char buf[64];
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (strtod(buf, NULL) == x) break;
  }
  /* keep floats recognisable as floats */
  if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
  return stk__strbuf_append(out, buf, strlen(buf));
}

stk_status stk__argval_format(const stk__argval *v, stk__strbuf *out) {
  if (v->edge_name) return stk__strbuf_append(out, v->edge_name, strlen(v->edge_name));
  switch (v->type) {
    case STK_ARG_BOOL:
      return stk__strbuf_printf(out, "%s", v->b ? "true" : "false");
    case STK_ARG_INT:
      return stk__strbuf_printf(out, "%lld", (long long)v->i);
    case STK_ARG_FLOAT:
      return format_double(v->f, out);
    case STK_ARG_STRING:
      return format_string(v->s ? v->s : "", out);
    default:
      break;
  }
  STK_TRY(stk__strbuf_append(out, "[", 1));
  for (size_t i = 0; i < v->count; i++) {
    if (i) STK_TRY(stk__strbuf_append(out, ", ", 2));
    if (v->type == STK_ARG_INTS) STK_TRY(stk__strbuf_printf(out, "%lld", (long long)v->ints[i]));
    if (v->type == STK_ARG_FLOATS) STK_TRY(format_double(v->floats[i], out));
    if (v->type == STK_ARG_STRINGS) STK_TRY(format_string(v->strs[i], out));
  }
  return stk__strbuf_append(out, "]", 1);
}
