/* The pipeline's text form: settings, one operator call per line, and the outputs.
 *
 *   # comment
 *   batch_size = 64
 *   jpegs, labels = readers.file(file_root="data/train", random_shuffle=true, name="Reader")
 *   flip = random.coin_flip(probability=0.5)
 *   images = decoders.image(jpegs, output_type="RGB")
 *   out = crop_mirror_normalize(images, mirror=flip, dtype="float16", device="cpu")
 *   return out, labels
 *
 * Positional arguments are data inputs; keyword values are literals (numbers, true/false,
 * "strings", [lists]) or edge names (per-sample argument inputs). `name` and `device` are
 * the instance name and device. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

const char *stk__setting_name(stk_pipeline_setting key);

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }

static bool is_identifier(const char *s) {
  if (!is_ident_start(*s) || strcmp(s, "true") == 0 || strcmp(s, "false") == 0) return false;
  for (const char *c = s; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.')) return false;
  return true;
}

/* Splits `s` at top-level occurrences of `sep` (outside strings and brackets), in place.
 * Returns the number of parts or -1 on unbalanced text. */
static int split_top(char *s, char sep, char **parts, int max) {
  int n = 0, depth = 0;
  bool in_str = false;
  char *start = s;
  for (char *c = s;; c++) {
    if (*c == '\0' || (*c == sep && depth == 0 && !in_str)) {
      if (n >= max) return -1;
      bool end = *c == '\0';
      *c = '\0';
      parts[n++] = trim(start);
      if (end) break;
      start = c + 1;
      continue;
    }
    if (in_str) {
      if (*c == '\\' && c[1])
        c++;
      else if (*c == '"')
        in_str = false;
    } else if (*c == '"')
      in_str = true;
    else if (*c == '[' || *c == '(')
      depth++;
    else if (*c == ']' || *c == ')')
      depth--;
    if (depth < 0) return -1;
  }
  return (depth == 0 && !in_str) ? n : -1;
}

/* Finds the first top-level '=' of a keyword argument, or NULL. */
static char *find_kw_equals(char *s) {
  if (!is_ident_start(*s)) return NULL;
  char *c = s;
  while (isalnum((unsigned char)*c) || *c == '_') c++;
  c = (char *)c;
  while (isspace((unsigned char)*c)) c++;
  return *c == '=' ? c : NULL;
}

static stk_status parse_string_value(const char *text, char **out, int line) {
  const stk_arg_schema fake = {"string", STK_ARG_STRING, 0, NULL, 0, 0, NULL, NULL};
  stk__argval v;
  stk_status st = stk__argval_parse(&fake, text, &v);
  if (st != STK_OK) return stk__wrap(STK_ERR_PARSE, "line %d", line);
  *out = v.s;
  v.s = NULL;
  stk__argval_clear(&v);
  return STK_OK;
}

static bool is_float_word(const char *s) {
  return strcasecmp(s, "nan") == 0 || strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0;
}

static stk_status apply_kwarg(stk_op *op, const char *key, const char *value, int line) {
  const stk_op_schema *sc = op->def->schema;
  if (strcmp(key, "name") == 0) {
    char *name;
    STK_TRY(parse_string_value(value, &name, line));
    stk_status st = stk_op_set_name(op, name);
    free(name);
    return st;
  }
  int a = 0;
  while (a < sc->num_args && strcmp(sc->args[a].name, key) != 0) a++;
  if (a == sc->num_args)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "line %d: %s has no argument '%s'", line, sc->name,
                    key);
  /* nan and inf are numbers to Python, not edge names: read them as literals, so the
   * argument's range check sees them (they would otherwise feed the argument from an
   * edge named "nan"). */
  if (is_identifier(value) && !is_float_word(value)) return stk_op_set_arg_input(op, key, value);
  stk__argval v;
  stk_status st = stk__argval_parse(&sc->args[a], value, &v);
  if (st != STK_OK) return stk__wrap(st, "line %d", line);
  v.given = true;
  if ((st = stk__argval_check(&sc->args[a], &v, sc->name)) != STK_OK) {
    stk__argval_clear(&v);
    return stk__wrap(st, "line %d", line);
  }
  stk__argval_clear(&op->args[a]);
  op->args[a] = v;
  return STK_OK;
}

/* Extracts device="..." first: the op must be created with its device. */
static stk_status find_device(char **args, int nargs, char **device, int line) {
  *device = NULL;
  for (int i = 0; i < nargs; i++) {
    char *eq = find_kw_equals(args[i]);
    if (!eq || strncmp(args[i], "device", 6) != 0 ||
        (args[i][6] != '=' && !isspace((unsigned char)args[i][6])))
      continue;
    if (*device) { /* found by fuzzing: the first value leaked */
      free(*device);
      *device = NULL;
      return STK_FAIL(STK_ERR_PARSE, "line %d: device is given twice", line);
    }
    STK_TRY(parse_string_value(trim(eq + 1), device, line));
    args[i] = NULL;
  }
  return STK_OK;
}

/* Finds " if " after the call's closing parenthesis (outside strings); cuts the text
 * there and returns the condition, or NULL. */
static char *split_condition(char *rhs) {
  int depth = 0;
  bool in_str = false;
  for (char *c = rhs; *c; c++) {
    if (in_str) {
      if (*c == '\\' && c[1])
        c++;
      else if (*c == '"')
        in_str = false;
    } else if (*c == '"')
      in_str = true;
    else if (*c == '(' || *c == '[')
      depth++;
    else if (*c == ')' || *c == ']')
      depth--;
    else if (depth == 0 && strncmp(c, " if ", 4) == 0) {
      *c = '\0';
      return trim(c + 4);
    }
  }
  return NULL;
}

/* "pred", "pred == 2", "a and b == 0": guards joined by "and". */
static stk_status parse_condition(stk_op *op, char *cond, int line) {
  while (cond && *cond) {
    char *and = strstr(cond, " and ");
    if (and) *and = '\0';
    char *eq = strstr(cond, "==");
    int64_t value = 1;
    if (eq) {
      *eq = '\0';
      char *end;
      value = strtoll(trim(eq + 2), &end, 10);
      if (end == trim(eq + 2) || *trim(end))
        return STK_FAIL(STK_ERR_PARSE, "line %d: a condition compares with an integer", line);
    }
    char *edge = trim(cond);
    if (!is_identifier(edge))
      return STK_FAIL(STK_ERR_PARSE, "line %d: '%s' is not an edge name in a condition", line,
                      edge);
    STK_TRY(stk_op_add_guard(op, edge, value));
    cond = and? and+5 : NULL;
  }
  return STK_OK;
}

static stk_status parse_call(stk_pipeline *p, char *lhs, char *rhs, int line) {
  char *cond = split_condition(rhs);
  rhs = trim(rhs);
  char *paren = strchr(rhs, '(');
  size_t len = strlen(rhs);
  if (!paren || rhs[len - 1] != ')')
    return STK_FAIL(STK_ERR_PARSE, "line %d: expected 'outputs = operator(arguments)'", line);
  *paren = '\0';
  rhs[len - 1] = '\0';
  char *opname = trim(rhs);
  char *args[256], *outs[64];
  int nargs = *trim(paren + 1) ? split_top(paren + 1, ',', args, 256) : 0;
  int nouts = split_top(lhs, ',', outs, 64);
  if (nargs < 0 || nouts < 1)
    return STK_FAIL(STK_ERR_PARSE, "line %d: unbalanced brackets or quotes", line);
  char *device = NULL;
  STK_TRY(find_device(args, nargs, &device, line));
  stk_op *op;
  stk_status st = stk_op_create(opname, device, &op);
  free(device);
  if (st != STK_OK) return stk__wrap(st, "line %d", line);
  for (int k = 0; k < nouts && st == STK_OK; k++)
    st = strcmp(trim(outs[k]), "return") == 0 /* (found by fuzzing: it printed as a return line) */
             ? STK_FAIL(STK_ERR_PARSE, "line %d: 'return' cannot name an output", line)
             : stk_op_add_output(op, outs[k]);
  for (int i = 0; i < nargs && st == STK_OK; i++) {
    if (!args[i]) continue;
    char *eq = find_kw_equals(args[i]);
    if (eq) {
      *eq = '\0';
      st = apply_kwarg(op, trim(args[i]), trim(eq + 1), line);
    } else if (is_identifier(args[i])) {
      st = stk_op_add_input(op, args[i]);
    } else {
      st = STK_FAIL(STK_ERR_PARSE, "line %d: positional argument '%s' is not an edge name", line,
                    args[i]);
    }
  }
  if (st == STK_OK) st = parse_condition(op, cond, line);
  if (st == STK_OK) st = stk_pipeline_add_op(p, op);
  stk_op_destroy(op);
  if (st != STK_OK && !strstr(stk_last_error(), "line ")) stk__wrap(st, "line %d", line);
  return st;
}

static stk_status parse_setting(stk_pipeline *p, const char *key, const char *value, int line) {
  for (int k = 0; k < STK_PIPE_SETTING_COUNT; k++) {
    if (strcmp(stk__setting_name((stk_pipeline_setting)k), key) != 0) continue;
    int64_t v;
    char *end;
    if (k == STK_PIPE_ON_ERROR &&
        (strcmp(value, "\"skip\"") == 0 || strcmp(value, "\"error\"") == 0))
      v = strcmp(value, "\"skip\"") == 0 ? STK_ON_ERROR_SKIP : STK_ON_ERROR_FAIL;
    else if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
      v = value[0] == 't';
    else {
      errno = 0;
      v = strtoll(value, &end, 10);
      if (end == value || *trim(end))
        return STK_FAIL(STK_ERR_PARSE, "line %d: '%s' needs an integer, got '%s'", line, key,
                        value);
      if (errno == ERANGE)
        return STK_FAIL(STK_ERR_PARSE, "line %d: '%s' = %s does not fit in a 64-bit integer", line,
                        key, value);
    }
    stk_status st = stk_pipeline_set(p, (stk_pipeline_setting)k, v);
    return st == STK_OK ? st : stk__wrap(st, "line %d", line);
  }
  return STK_FAIL(STK_ERR_PARSE, "line %d: unknown setting '%s'", line, key);
}

static stk_status parse_return(stk_pipeline *p, char *rest, int line) {
  char *outs[64];
  int n = split_top(rest, ',', outs, 64);
  if (n < 1) return STK_FAIL(STK_ERR_PARSE, "line %d: 'return' needs edge names", line);
  for (int i = 0; i < n; i++)
    if (!is_identifier(outs[i]))
      return STK_FAIL(STK_ERR_PARSE, "line %d: '%s' is not an edge name", line, outs[i]);
  return stk_pipeline_set_outputs(p, (const char *const *)outs, (size_t)n);
}

/* Cuts a '#' comment that is outside strings. */
static void strip_comment(char *s) {
  bool in_str = false;
  for (; *s; s++) {
    if (in_str) {
      if (*s == '\\' && s[1])
        s++;
      else if (*s == '"')
        in_str = false;
    } else if (*s == '"') {
      in_str = true;
    } else if (*s == '#') {
      *s = '\0';
      return;
    }
  }
}

static stk_status parse_line(stk_pipeline *p, char *s, int line) {
  strip_comment(s);
  s = trim(s);
  if (!*s || *s == '#') return STK_OK;
  if (strncmp(s, "return", 6) == 0 && isspace((unsigned char)s[6]))
    return parse_return(p, s + 7, line);
  char *eq = NULL;
  int depth = 0;
  bool in_str = false;
  for (char *c = s; *c && !eq; c++) { /* the first top-level '=' */
    if (in_str) {
      if (*c == '\\' && c[1])
        c++;
      else if (*c == '"')
        in_str = false;
    } else if (*c == '"')
      in_str = true;
    else if (*c == '(' || *c == '[')
      depth++;
    else if (*c == ')' || *c == ']')
      depth--;
    else if (*c == '=' && depth == 0)
      eq = c;
  }
  if (!eq)
    return STK_FAIL(STK_ERR_PARSE,
                    "line %d: expected 'name = value', 'outputs = operator(...)' or 'return ...'",
                    line);
  *eq = '\0';
  char *lhs = trim(s), *rhs = trim(eq + 1);
  if (strchr(rhs, '(') && rhs[0] != '"' && rhs[0] != '[') return parse_call(p, lhs, rhs, line);
  return parse_setting(p, lhs, rhs, line);
}

stk_status stk_pipeline_from_text(const char *text, stk_pipeline **out) {
  if (!text || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  char *copy = stk__strdup(text);
  if (!copy) return STK_ERR_OUT_OF_MEMORY;
  stk_pipeline *p;
  stk_status st = stk_pipeline_create(&p);
  int line = 1;
  for (char *s = copy; st == STK_OK && s; line++) {
    char *nl = strchr(s, '\n');
    if (nl) *nl = '\0';
    st = parse_line(p, s, line);
    s = nl ? nl + 1 : NULL;
  }
  free(copy);
  if (st != STK_OK) {
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", stk_last_error());
    stk_pipeline_destroy(p);
    return stk__set_error(st, saved);
  }
  *out = p;
  return STK_OK;
}

static stk_status format_op(const stk_op *op, stk__strbuf *b) {
  const stk_op_schema *sc = op->def->schema;
  for (int k = 0; k < op->num_outputs; k++)
    STK_TRY(stk__strbuf_printf(b, "%s%s", k ? ", " : "", op->outputs[k]));
  STK_TRY(stk__strbuf_printf(b, " = %s(", sc->name));
  bool first = true;
  for (int i = 0; i < op->num_inputs; i++, first = false)
    STK_TRY(stk__strbuf_printf(b, "%s%s", first ? "" : ", ", op->inputs[i]));
  for (int a = 0; a < sc->num_args; a++) {
    if (!op->args[a].given) continue;
    STK_TRY(stk__strbuf_printf(b, "%s%s=", first ? "" : ", ", sc->args[a].name));
    STK_TRY(stk__argval_format(&op->args[a], b));
    first = false;
  }
  if (op->device != STK_DEVICE_CPU) {
    STK_TRY(
        stk__strbuf_printf(b, "%sdevice=\"%s\"", first ? "" : ", ", stk__device_name(op->device)));
    first = false;
  }
  if (op->name) {
    stk__argval name = {.type = STK_ARG_STRING, .s = op->name};
    STK_TRY(stk__strbuf_printf(b, "%sname=", first ? "" : ", "));
    STK_TRY(stk__argval_format(&name, b));
  }
  STK_TRY(stk__strbuf_append(b, ")", 1));
  for (int g = 0; g < op->num_guards; g++)
    STK_TRY(stk__strbuf_printf(b, "%s%s == %lld", g ? " and " : " if ", op->guards[g].edge_name,
                               (long long)op->guards[g].value));
  return stk__strbuf_append(b, "\n", 1);
}

stk_status stk_pipeline_to_text(const stk_pipeline *p, char **out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  stk__strbuf b = {0};
  stk_status st = stk__strbuf_printf(&b, "# stoker pipeline\n");
  for (int k = 0; k < STK_PIPE_SETTING_COUNT && st == STK_OK; k++)
    st = stk__strbuf_printf(&b, "%s = %lld\n", stk__setting_name((stk_pipeline_setting)k),
                            (long long)p->settings[k]);
  for (size_t i = 0; i < p->num_ops && st == STK_OK; i++) st = format_op(p->ops[i], &b);
  if (st == STK_OK && p->num_outputs) {
    st = stk__strbuf_printf(&b, "return ");
    for (size_t o = 0; o < p->num_outputs && st == STK_OK; o++)
      st = stk__strbuf_printf(&b, "%s%s", o ? ", " : "", p->output_names[o]);
    if (st == STK_OK) st = stk__strbuf_append(&b, "\n", 1);
  }
  if (st != STK_OK) {
    stk__strbuf_free(&b);
    return st;
  }
  *out = b.data;
  return STK_OK;
}
