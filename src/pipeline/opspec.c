/* Operator specs (stk_op): an operator call being described before it joins a pipeline.
 * Values are checked against the schema as they are set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *stk__device_name(unsigned device) {
  return device == STK_DEVICE_GPU ? "gpu" : device == STK_DEVICE_MIXED ? "mixed" : "cpu";
}

static stk_status parse_device(const char *device, unsigned *out) {
  if (!device || strcmp(device, "cpu") == 0)
    *out = STK_DEVICE_CPU;
  else if (strcmp(device, "gpu") == 0)
    *out = STK_DEVICE_GPU;
  else if (strcmp(device, "mixed") == 0)
    *out = STK_DEVICE_MIXED;
  else
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "device must be \"cpu\", \"mixed\" or \"gpu\", got \"%s\"", device);
  return STK_OK;
}

/* Fills every argument with its schema default. */
static stk_status apply_defaults(stk_op *op) {
  const stk_op_schema *sc = op->def->schema;
  for (int a = 0; a < sc->num_args; a++) {
    op->args[a].type = sc->args[a].type;
    op->args[a].edge = -1;
    if (!sc->args[a].default_text) continue;
    stk_status st = stk__argval_parse(&sc->args[a], sc->args[a].default_text, &op->args[a]);
    if (st != STK_OK)
      return stk__wrap(STK_ERR_INTERNAL, "%s: bad default of '%s'", sc->name, sc->args[a].name);
    op->args[a].given = false;
  }
  return STK_OK;
}

stk_status stk_op_create(const char *schema_name, const char *device, stk_op **out) {
  if (!out || !schema_name) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  const stk__op_def *def = stk__registry_lookup(schema_name);
  if (!def) return STK_FAIL(STK_ERR_NOT_FOUND, "no operator named '%s'", schema_name);
  unsigned dev = STK_DEVICE_CPU;
  STK_TRY(parse_device(device, &dev));
  if (!(def->schema->devices & dev))
    return STK_FAIL(STK_ERR_UNSUPPORTED, "operator '%s' has no %s backend", schema_name,
                    stk__device_name(dev));
  stk_op *op = stk__calloc(1, sizeof *op, "an operator");
  if (!op) return STK_ERR_OUT_OF_MEMORY;
  op->def = def;
  op->device = dev;
  op->args = stk__calloc((size_t)def->schema->num_args, sizeof(stk__argval), "arguments");
  stk_status st = op->args ? apply_defaults(op) : STK_ERR_OUT_OF_MEMORY;
  if (st != STK_OK) {
    stk_op_destroy(op);
    return st;
  }
  *out = op;
  return STK_OK;
}

void stk_op_destroy(stk_op *op) {
  if (!op) return;
  if (op->args)
    for (int a = 0; a < op->def->schema->num_args; a++) stk__argval_clear(&op->args[a]);
  free(op->args);
  for (int g = 0; g < op->num_guards; g++) free(op->guards[g].edge_name);
  free(op->guards);
  for (int i = 0; i < op->num_inputs; i++) free(op->inputs[i]);
  for (int i = 0; i < op->num_outputs; i++) free(op->outputs[i]);
  free(op->inputs);
  free(op->outputs);
  free(op->name);
  free(op);
}

static stk_status push_name(char ***list, int *count, const char *name) {
  char *copy = stk__strdup(name);
  if (!copy) return STK_ERR_OUT_OF_MEMORY;
  char **grown = stk__realloc(*list, (size_t)(*count + 1) * sizeof(char *), "edge names");
  if (!grown) {
    free(copy);
    return STK_ERR_OUT_OF_MEMORY;
  }
  grown[(*count)++] = copy;
  *list = grown;
  return STK_OK;
}

static bool valid_identifier(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '/' || *s == '-' || *s == '[' || *s == ']'))
      return false;
  return true;
}

stk_status stk_op_set_name(stk_op *op, const char *instance_name) {
  if (!op || !instance_name || !*instance_name)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "empty instance name");
  char *copy = stk__strdup(instance_name);
  if (!copy) return STK_ERR_OUT_OF_MEMORY;
  free(op->name);
  op->name = copy;
  return STK_OK;
}

stk_status stk_op_add_input(stk_op *op, const char *edge) {
  if (!op || !valid_identifier(edge))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "'%s' is not a valid edge name",
                    edge ? edge : "(null)");
  const stk_op_schema *sc = op->def->schema;
  if (op->num_inputs >= sc->max_inputs)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s takes at most %d input(s)", sc->name,
                    sc->max_inputs);
  return push_name(&op->inputs, &op->num_inputs, edge);
}

stk_status stk_op_add_output(stk_op *op, const char *edge) {
  if (!op || !valid_identifier(edge))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "'%s' is not a valid edge name",
                    edge ? edge : "(null)");
  return push_name(&op->outputs, &op->num_outputs, edge);
}

/* Finds argument `arg` and checks the value's kind against the schema. */
static stk_status find_arg(stk_op *op, const char *arg, stk__argval **v,
                           const stk_arg_schema **schema) {
  if (!op || !arg) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  const stk_op_schema *sc = op->def->schema;
  for (int a = 0; a < sc->num_args; a++)
    if (strcmp(sc->args[a].name, arg) == 0) {
      *v = &op->args[a];
      *schema = &sc->args[a];
      return STK_OK;
    }
  return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s has no argument '%s'", sc->name, arg);
}

/* Replaces an argument's value after checking it. Takes ownership of `nv`. */
static stk_status commit_value(stk_op *op, stk__argval *v, const stk_arg_schema *schema,
                               stk__argval *nv) {
  nv->given = nv->has_value = true;
  nv->type = schema->type;
  stk_status st = stk__argval_check(schema, nv, op->def->schema->name);
  if (st != STK_OK) {
    stk__argval_clear(nv);
    return st;
  }
  stk__argval_clear(v);
  *v = *nv;
  return STK_OK;
}

static stk_status type_error(const stk_op *op, const stk_arg_schema *schema, const char *given) {
  return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: argument '%s' is %s, not %s",
                  op->def->schema->name, schema->name,
                  (const char *[]){"bool", "int", "float", "string", "list of ints",
                                   "list of floats", "list of strings"}[schema->type],
                  given);
}

stk_status stk_op_set_bool(stk_op *op, const char *arg, int value) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (sc->type != STK_ARG_BOOL) {
    if (sc->type == STK_ARG_INT) return stk_op_set_int(op, arg, value != 0);
    return type_error(op, sc, "a bool");
  }
  stk__argval nv = {.b = value != 0, .edge = -1};
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_int(stk_op *op, const char *arg, int64_t value) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (sc->type == STK_ARG_FLOAT || sc->type == STK_ARG_FLOATS)
    return stk_op_set_float(op, arg, (double)value);
  if (sc->type == STK_ARG_INTS) return stk_op_set_ints(op, arg, &value, 1);
  if (sc->type == STK_ARG_BOOL && (value == 0 || value == 1))
    return stk_op_set_bool(op, arg, (int)value);
  if (sc->type != STK_ARG_INT) return type_error(op, sc, "an int");
  stk__argval nv = {.i = value, .edge = -1};
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_float(stk_op *op, const char *arg, double value) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (sc->type == STK_ARG_FLOATS) return stk_op_set_floats(op, arg, &value, 1);
  if (sc->type == STK_ARG_INT && value == floor(value) && fabs(value) < 9e15)
    return stk_op_set_int(op, arg, (int64_t)value);
  if (sc->type != STK_ARG_FLOAT) return type_error(op, sc, "a float");
  if (isnan(value))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NaN", op->def->schema->name,
                    arg);
  stk__argval nv = {.f = value, .edge = -1};
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_string(stk_op *op, const char *arg, const char *value) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (!value) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "argument '%s': NULL string", arg);
  if (sc->type == STK_ARG_STRINGS) return stk_op_set_strings(op, arg, &value, 1);
  if (sc->type != STK_ARG_STRING) return type_error(op, sc, "a string");
  stk__argval nv = {.edge = -1};
  if (!(nv.s = stk__strdup(value))) return STK_ERR_OUT_OF_MEMORY;
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_ints(stk_op *op, const char *arg, const int64_t *values, size_t count) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (sc->type == STK_ARG_FLOATS) {
    double *f = stk__calloc(count, sizeof(double), "an argument list");
    if (!f) return STK_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; i++) f[i] = (double)values[i];
    stk_status st = stk_op_set_floats(op, arg, f, count);
    free(f);
    return st;
  }
  if ((sc->type == STK_ARG_INT || sc->type == STK_ARG_FLOAT || sc->type == STK_ARG_BOOL) &&
      count == 1)
    return stk_op_set_int(op, arg, values[0]);
  if (sc->type != STK_ARG_INTS) return type_error(op, sc, "a list of ints");
  stk__argval nv = {.count = count, .edge = -1};
  if (!(nv.ints = stk__calloc(count, sizeof(int64_t), "an argument list")))
    return STK_ERR_OUT_OF_MEMORY;
  if (count) memcpy(nv.ints, values, count * sizeof(int64_t));
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_floats(stk_op *op, const char *arg, const double *values, size_t count) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (sc->type == STK_ARG_INTS) {
    int64_t *iv = stk__calloc(count, sizeof(int64_t), "an argument list");
    if (!iv) return STK_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; i++) {
      if (values[i] != floor(values[i])) {
        free(iv);
        return type_error(op, sc, "a list with non-integer floats");
      }
      iv[i] = (int64_t)values[i];
    }
    stk_status st = stk_op_set_ints(op, arg, iv, count);
    free(iv);
    return st;
  }
  if ((sc->type == STK_ARG_FLOAT || sc->type == STK_ARG_INT) && count == 1)
    return stk_op_set_float(op, arg, values[0]);
  if (sc->type != STK_ARG_FLOATS) return type_error(op, sc, "a list of floats");
  stk__argval nv = {.count = count, .edge = -1};
  if (!(nv.floats = stk__calloc(count, sizeof(double), "an argument list")))
    return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < count; i++) {
    if (isnan(values[i])) {
      stk__argval_clear(&nv);
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "%s: argument '%s' has a NaN",
                      op->def->schema->name, arg);
    }
    nv.floats[i] = values[i];
  }
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_strings(stk_op *op, const char *arg, const char *const *values,
                              size_t count) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (sc->type == STK_ARG_STRING && count == 1) return stk_op_set_string(op, arg, values[0]);
  if (sc->type != STK_ARG_STRINGS) return type_error(op, sc, "a list of strings");
  stk__argval nv = {.count = count, .edge = -1};
  if (!(nv.strs = stk__calloc(count, sizeof(char *), "an argument list")))
    return STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < count; i++)
    if (!values[i] || !(nv.strs[i] = stk__strdup(values[i]))) {
      stk__argval_clear(&nv);
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "argument '%s': NULL or unallocatable string", arg);
    }
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_set_arg_input(stk_op *op, const char *arg, const char *edge) {
  stk__argval *v;
  const stk_arg_schema *sc;
  STK_TRY(find_arg(op, arg, &v, &sc));
  if (!(sc->flags & STK_ARGF_PER_SAMPLE))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "%s: argument '%s' cannot be fed per sample by a node", op->def->schema->name,
                    arg);
  if (!valid_identifier(edge))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "'%s' is not a valid edge name",
                    edge ? edge : "(null)");
  stk__argval nv = {.edge = -1};
  if (!(nv.edge_name = stk__strdup(edge))) return STK_ERR_OUT_OF_MEMORY;
  return commit_value(op, v, sc, &nv);
}

stk_status stk_op_add_guard(stk_op *op, const char *edge, int64_t value) {
  if (!op || !valid_identifier(edge))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "'%s' is not a valid edge name",
                    edge ? edge : "(null)");
  stk__guard *grown =
      stk__realloc(op->guards, (size_t)(op->num_guards + 1) * sizeof(stk__guard), "guards");
  if (!grown) return STK_ERR_OUT_OF_MEMORY;
  op->guards = grown;
  stk__guard *g = &op->guards[op->num_guards];
  if (!(g->edge_name = stk__strdup(edge))) return STK_ERR_OUT_OF_MEMORY;
  g->edge = -1;
  g->value = value;
  op->num_guards++;
  return STK_OK;
}

stk_status stk__op_copy(stk_op **out, const stk_op *src) {
  stk_op *op;
  STK_TRY(stk_op_create(src->def->schema->name, stk__device_name(src->device), &op));
  stk_status st = STK_OK;
  if (src->name && !(op->name = stk__strdup(src->name))) st = STK_ERR_OUT_OF_MEMORY;
  for (int i = 0; st == STK_OK && i < src->num_inputs; i++)
    st = push_name(&op->inputs, &op->num_inputs, src->inputs[i]);
  for (int i = 0; st == STK_OK && i < src->num_outputs; i++)
    st = push_name(&op->outputs, &op->num_outputs, src->outputs[i]);
  for (int g = 0; st == STK_OK && g < src->num_guards; g++)
    st = stk_op_add_guard(op, src->guards[g].edge_name, src->guards[g].value);
  for (int a = 0; st == STK_OK && a < src->def->schema->num_args; a++) {
    stk__argval_clear(&op->args[a]);
    st = stk__argval_copy(&op->args[a], &src->args[a]);
  }
  if (st != STK_OK) {
    stk_op_destroy(op);
    return st;
  }
  *out = op;
  return STK_OK;
}
