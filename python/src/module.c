/* Module `stoker._stoker`: error mapping, registry introspection, dtype helpers. */
#include <string.h>

#include "pystk.h"

/* status code (int) -> exception class; installed by stoker.errors at import. */
static PyObject *error_classes;

PyObject *pystk_raise_msg(stk_status status, const char *message) {
  PyObject *cls = NULL;
  if (error_classes) {
    PyObject *key = PyLong_FromLong((long)status);
    if (!key) return NULL;
    cls = PyDict_GetItemWithError(error_classes, key); /* borrowed */
    Py_DECREF(key);
    if (!cls && PyErr_Occurred()) return NULL;
  }
  if (!cls) cls = PyExc_RuntimeError;
  if (!message || !*message) message = stk_status_str(status);
  PyErr_SetString(cls, message);
  return NULL;
}

PyObject *pystk_raise(stk_status status) { return pystk_raise_msg(status, stk_last_error()); }

static PyObject *set_error_classes(PyObject *self, PyObject *mapping) {
  if (!PyDict_Check(mapping)) {
    PyErr_SetString(PyExc_TypeError, "_set_error_classes expects a dict");
    return NULL;
  }
  PyObject *old = error_classes;
  Py_INCREF(mapping);
  error_classes = mapping;
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

/* ---- dtypes ---- */

static const struct {
  stk_dtype dtype;
  const char *format;  /* struct-module format for the buffer protocol */
  const char *typestr; /* __array_interface__ type string (little-endian host) */
  const char *name;    /* stoker's dtype name, as in STK_DTYPE_MAP */
} dtype_table[] = {
    {STK_DTYPE_UINT8, "B", "|u1", "uint8"},     {STK_DTYPE_INT8, "b", "|i1", "int8"},
    {STK_DTYPE_UINT16, "H", "<u2", "uint16"},   {STK_DTYPE_INT16, "h", "<i2", "int16"},
    {STK_DTYPE_UINT32, "I", "<u4", "uint32"},   {STK_DTYPE_INT32, "i", "<i4", "int32"},
    {STK_DTYPE_UINT64, "Q", "<u8", "uint64"},   {STK_DTYPE_INT64, "q", "<i8", "int64"},
    {STK_DTYPE_FLOAT16, "e", "<f2", "float16"}, {STK_DTYPE_FLOAT32, "f", "<f4", "float32"},
    {STK_DTYPE_FLOAT64, "d", "<f8", "float64"}, {STK_DTYPE_BOOL, "?", "|b1", "bool"},
};
#define DTYPE_TABLE_LEN (sizeof dtype_table / sizeof dtype_table[0])

const char *pystk_dtype_format(stk_dtype dtype) {
  for (size_t i = 0; i < DTYPE_TABLE_LEN; i++)
    if (dtype_table[i].dtype == dtype) return dtype_table[i].format;
  return NULL;
}

const char *pystk_dtype_name(stk_dtype dtype) {
  for (size_t i = 0; i < DTYPE_TABLE_LEN; i++)
    if (dtype_table[i].dtype == dtype) return dtype_table[i].name;
  return NULL;
}

int pystk_dtype_from_name(const char *name) {
  for (size_t i = 0; i < DTYPE_TABLE_LEN; i++)
    if (strcmp(dtype_table[i].name, name) == 0) return (int)dtype_table[i].dtype;
  return -1;
}

const char *pystk_dtype_typestr(stk_dtype dtype) {
  for (size_t i = 0; i < DTYPE_TABLE_LEN; i++)
    if (dtype_table[i].dtype == dtype) return dtype_table[i].typestr;
  return NULL;
}

/* Integer format letters whose size depends on the platform ('l', 'L', 'n'...) are
 * resolved by itemsize, so "l" on LP64 reads as int64. */
int pystk_dtype_from_format(const char *format, Py_ssize_t itemsize) {
  if (!format) return STK_DTYPE_UINT8; /* PyBUF without FORMAT means unsigned bytes */
  if (*format == '<' || *format == '=' || *format == '@' || *format == '|') format++;
  if (format[0] == '\0' || format[1] != '\0') return -1;
  int is_signed;
  switch (format[0]) {
    case 'e':
      return itemsize == 2 ? STK_DTYPE_FLOAT16 : -1;
    case 'f':
      return itemsize == 4 ? STK_DTYPE_FLOAT32 : -1;
    case 'd':
      return itemsize == 8 ? STK_DTYPE_FLOAT64 : -1;
    case '?':
      return itemsize == 1 ? STK_DTYPE_BOOL : -1;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      is_signed = 1;
      break;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
    case 'c':
      is_signed = 0;
      break;
    default:
      return -1;
  }
  switch (itemsize) {
    case 1:
      return is_signed ? STK_DTYPE_INT8 : STK_DTYPE_UINT8;
    case 2:
      return is_signed ? STK_DTYPE_INT16 : STK_DTYPE_UINT16;
    case 4:
      return is_signed ? STK_DTYPE_INT32 : STK_DTYPE_UINT32;
    case 8:
      return is_signed ? STK_DTYPE_INT64 : STK_DTYPE_UINT64;
    default:
      return -1;
  }
}

/* ---- registry introspection ---- */

static const char *arg_type_name(stk_arg_type t) {
  static const char *const names[] = {"bool", "int", "float", "str", "ints", "floats", "strs"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

static PyObject *str_or_none(const char *s) {
  if (s) return PyUnicode_FromString(s);
  Py_RETURN_NONE;
}

static PyObject *port_list(const stk_port_schema *ports, int count) {
  PyObject *list = PyList_New(0);
  for (int i = 0; list && ports && i < count; i++) {
    PyObject *item = Py_BuildValue("(NN)", str_or_none(ports[i].name), str_or_none(ports[i].doc));
    if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
    Py_XDECREF(item);
  }
  return list;
}

static PyObject *arg_dict(const stk_arg_schema *a) {
  PyObject *range = Py_None;
  Py_INCREF(range);
  if (a->flags & STK_ARGF_RANGE) {
    Py_DECREF(range);
    range = Py_BuildValue("(dd)", a->min, a->max);
    if (!range) return NULL;
  }
  return Py_BuildValue(
      "{s:s,s:s,s:O,s:O,s:N,s:N,s:N,s:N}", "name", a->name, "type", arg_type_name(a->type),
      "required", (a->flags & STK_ARGF_REQUIRED) ? Py_True : Py_False, "per_sample",
      (a->flags & STK_ARGF_PER_SAMPLE) ? Py_True : Py_False, "range", range, "default",
      str_or_none(a->default_text), "choices", str_or_none(a->choices), "doc", str_or_none(a->doc));
}

static PyObject *schema_dict(const stk_op_schema *s) {
  PyObject *args = PyList_New(0);
  for (int i = 0; args && i < s->num_args; i++) {
    PyObject *d = arg_dict(&s->args[i]);
    if (!d || PyList_Append(args, d) < 0) Py_CLEAR(args);
    Py_XDECREF(d);
  }
  if (!args) return NULL;
  PyObject *devices = PyList_New(0);
  static const struct {
    unsigned bit;
    const char *name;
  } devs[] = {{STK_DEVICE_CPU, "cpu"}, {STK_DEVICE_MIXED, "mixed"}, {STK_DEVICE_GPU, "gpu"}};
  for (size_t i = 0; devices && i < sizeof devs / sizeof devs[0]; i++) {
    if (!(s->devices & devs[i].bit)) continue;
    PyObject *n = PyUnicode_FromString(devs[i].name);
    if (!n || PyList_Append(devices, n) < 0) Py_CLEAR(devices);
    Py_XDECREF(n);
  }
  if (!devices) {
    Py_DECREF(args);
    return NULL;
  }
  int n_out_ports = s->num_outputs < 0 ? (s->outputs ? 1 : 0) : s->num_outputs;
  int n_in_ports = s->max_inputs; /* the schema contract: one entry per possible input */
  return Py_BuildValue("{s:s,s:N,s:N,s:O,s:O,s:O,s:i,s:i,s:N,s:i,s:N,s:N,s:N}", "name", s->name,
                       "doc", str_or_none(s->doc), "devices", devices, "reader",
                       (s->flags & STK_OPF_READER) ? Py_True : Py_False, "random",
                       (s->flags & STK_OPF_RANDOM) ? Py_True : Py_False, "no_input",
                       (s->flags & STK_OPF_NO_INPUT) ? Py_True : Py_False, "min_inputs",
                       s->min_inputs, "max_inputs", s->max_inputs, "inputs",
                       port_list(s->inputs, n_in_ports), "num_outputs", s->num_outputs, "outputs",
                       port_list(s->outputs, n_out_ports), "args", args, "gpu_check",
                       str_or_none(s->gpu_check));
}

static PyObject *registry(PyObject *self, PyObject *unused) {
  size_t n = stk_registry_count();
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list && i < n; i++) {
    const stk_op_schema *s = stk_registry_get(i);
    if (!s) continue;
    PyObject *d = schema_dict(s);
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  return list;
}

static PyObject *status_table(PyObject *self, PyObject *unused) {
  PyObject *list = PyList_New(0);
#define PYSTK_STATUS_ITEM(name, value, desc)                            \
  if (list) {                                                           \
    PyObject *item = Py_BuildValue("(iss)", value, "STK_" #name, desc); \
    if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);         \
    Py_XDECREF(item);                                                   \
  }
  STK_STATUS_MAP(PYSTK_STATUS_ITEM)
#undef PYSTK_STATUS_ITEM
  return list;
}

/* Raises the exception for a status, for tests of the mapping. */
static PyObject *raise_status(PyObject *self, PyObject *args) {
  int status;
  const char *msg;
  if (!PyArg_ParseTuple(args, "is", &status, &msg)) return NULL;
  return pystk_raise_msg((stk_status)status, msg);
}

static PyMethodDef module_methods[] = {
    {"registry", registry, METH_NOARGS, "registry() -> list of operator schemas as dicts"},
    {"status_table", status_table, METH_NOARGS, "status_table() -> [(code, name, text)]"},
    {"_set_error_classes", set_error_classes, METH_O, "installs {status: exception class}"},
    {"_raise_status", raise_status, METH_VARARGS, "raises the exception of a status"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                                        "_stoker",
                                        "stoker's C extension (use the `stoker` package)",
                                        -1,
                                        module_methods,
                                        NULL,
                                        NULL,
                                        NULL,
                                        NULL};

PyMODINIT_FUNC PyInit__stoker(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (PyModule_AddIntConstant(m, "version", stk_version()) < 0 ||
      PyModule_AddStringConstant(m, "version_string", stk_version_string()) < 0 ||
      pystk_tensorlist_init_type(m) < 0 || pystk_pipeline_init_type(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
