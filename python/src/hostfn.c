/* The "python_function" bridge: the executor calls pystk_hostfn_call on a worker thread
 * for every sample; it takes the GIL, hands the inputs to a Python trampoline (which
 * copies them into NumPy arrays and calls the user's function), and copies the returned
 * arrays into the outputs the executor allocates. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pystk.h"

struct pystk_hostfn {
  PyObject *trampoline; /* strong reference, dropped by pystk_hostfn_free with the GIL */
  atomic_int closed;
};

pystk_hostfn *pystk_hostfn_new(PyObject *trampoline) {
  pystk_hostfn *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  Py_INCREF(trampoline);
  h->trampoline = trampoline;
  atomic_init(&h->closed, 0);
  return h;
}

void pystk_hostfn_close(pystk_hostfn *h) { atomic_store(&h->closed, 1); }

/* Called with the GIL held (the pipeline owner frees its functions after destroying the
 * C pipeline, so no call can be in flight). */
void pystk_hostfn_free(void *user) {
  pystk_hostfn *h = user;
  if (!h) return;
  Py_XDECREF(h->trampoline);
  free(h);
}

static PyObject *int64_tuple(const int64_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SetItem(t, i, x);
  }
  return t;
}

/* The inputs as (pointer, shape, byte strides, dtype name, layout) tuples. */
static PyObject *input_tuple(stk_host_call *call) {
  size_t n = stk_host_call_num_inputs(call);
  PyObject *inputs = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; inputs && i < n; i++) {
    stk_tensor_desc d;
    stk_status st = stk_host_call_input(call, i, &d);
    if (st != STK_OK) {
      Py_DECREF(inputs);
      return pystk_raise(st);
    }
    const char *dt = pystk_dtype_name(d.dtype);
    PyObject *item =
        Py_BuildValue("(NNNss)", PyLong_FromVoidPtr(d.data), int64_tuple(d.shape, d.ndim),
                      int64_tuple(d.strides, d.ndim), dt ? dt : "unknown", d.layout);
    if (!item)
      Py_CLEAR(inputs);
    else
      PyTuple_SetItem(inputs, (Py_ssize_t)i, item);
  }
  return inputs;
}

/* The pending Python exception as text (consumed). */
static void exception_text(char *buf, size_t cap) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyObject *s = v ? PyObject_Str(v) : NULL;
  const char *msg = s ? PyUnicode_AsUTF8AndSize(s, NULL) : NULL;
  snprintf(buf, cap, "python_function: %s", msg ? msg : "unknown Python error");
  Py_XDECREF(s);
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  PyErr_Clear();
}

/* Copies one returned (array, layout) pair into output `index`. */
static stk_status store_output(stk_host_call *call, size_t index, PyObject *pair, char *err,
                               size_t cap) {
  PyObject *obj = PyTuple_Check(pair) ? PyTuple_GetItem(pair, 0) : pair;
  PyObject *layout_obj = PyTuple_Check(pair) ? PyTuple_GetItem(pair, 1) : Py_None;
  const char *layout = NULL;
  if (layout_obj && layout_obj != Py_None) layout = PyUnicode_AsUTF8AndSize(layout_obj, NULL);
  Py_buffer view;
  if (!obj || PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    exception_text(err, cap);
    return STK_ERR_INVALID_ARGUMENT;
  }
  stk_status st = STK_OK;
  int dtype = pystk_dtype_from_format(view.format, view.itemsize);
  if (dtype < 0 || view.ndim > STK_MAX_NDIM) {
    snprintf(err, cap, "python_function: output %zu has an unsupported %s", index,
             dtype < 0 ? "element type" : "number of dimensions");
    st = STK_ERR_INVALID_ARGUMENT;
  } else {
    int64_t shape[STK_MAX_NDIM];
    for (int k = 0; k < view.ndim; k++) shape[k] = view.shape ? view.shape[k] : view.len;
    void *data = NULL;
    st = stk_host_call_output(call, index, (stk_dtype)dtype, view.ndim, shape, layout, &data);
    if (st != STK_OK)
      snprintf(err, cap, "%s", stk_last_error());
    else if (view.len)
      memcpy(data, view.buf, (size_t)view.len);
  }
  PyBuffer_Release(&view);
  return st;
}

static stk_status call_with_gil(pystk_hostfn *h, stk_host_call *call) {
  char err[1024] = "";
  stk_status st = STK_OK;
  PyObject *inputs = input_tuple(call);
  PyObject *res = inputs ? PyObject_CallFunction(h->trampoline, "(NL)", inputs,
                                                 (long long)stk_host_call_ordinal(call))
                         : NULL;
  if (!res) {
    exception_text(err, sizeof err);
    st = STK_ERR_INVALID_ARGUMENT;
  } else if (PyUnicode_Check(res)) {
    /* The trampoline caught the user's exception and formatted it. */
    const char *msg = PyUnicode_AsUTF8AndSize(res, NULL);
    snprintf(err, sizeof err, "%s", msg ? msg : "python_function failed");
    st = STK_ERR_INVALID_ARGUMENT;
  } else {
    Py_ssize_t n = PySequence_Check(res) ? PySequence_Size(res) : -1;
    if (n < 0) {
      PyErr_Clear();
      snprintf(err, sizeof err, "python_function: the trampoline returned no output list");
      st = STK_ERR_INTERNAL;
    }
    for (Py_ssize_t i = 0; st == STK_OK && i < n; i++) {
      PyObject *pair = PySequence_GetItem(res, i);
      st = pair ? store_output(call, (size_t)i, pair, err, sizeof err) : STK_ERR_INTERNAL;
      Py_XDECREF(pair);
    }
  }
  Py_XDECREF(res);
  if (st != STK_OK) stk_host_call_fail(call, err);
  return st;
}

stk_status pystk_hostfn_call(void *user, stk_host_call *call) {
  pystk_hostfn *h = user;
  if (atomic_load(&h->closed)) {
    stk_host_call_fail(call, "python_function: the pipeline is closing");
    return STK_ERR_STATE;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  stk_status st = call_with_gil(h, call);
  PyGILState_Release(g);
  return st;
}
