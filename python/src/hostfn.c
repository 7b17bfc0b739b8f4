/* The "python_function" bridge: the executor calls pystk_hostfn_call on a worker thread
 * for every sample (or once per batch: batch_processing on the CPU, every call on the
 * GPU); it takes the GIL, hands the inputs to a Python trampoline (which copies them into
 * NumPy arrays, or wraps device lists, and calls the user's function), and copies the
 * returned arrays into the outputs the executor allocates (device outputs: from their
 * DLPack description, by the C library on its stream). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pystk.h"

struct pystk_hostfn {
  PyObject *trampoline; /* strong reference, dropped by pystk_hostfn_close with the GIL */
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

/* Called with the GIL held, before the C pipeline is destroyed. A call in progress holds
 * its own reference to the trampoline; the record itself stays for calls still to come
 * from a stage thread that outlives the destroy (timeout_ms), which fail on `closed`. */
void pystk_hostfn_close(pystk_hostfn *h) {
  atomic_store(&h->closed, 1);
  Py_CLEAR(h->trampoline);
}

/* The C pipeline's free_user: called once its threads are joined (never while one may
 * still call in), without the GIL, after pystk_hostfn_close dropped the trampoline; or
 * with the GIL held for a record the pipeline refused. */
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

/* Sample `sample`'s inputs as (pointer, shape, byte strides, dtype name, layout) tuples. */
static PyObject *input_tuple(stk_host_call *call, size_t sample) {
  size_t n = stk_host_call_num_inputs(call);
  PyObject *inputs = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; inputs && i < n; i++) {
    stk_tensor_desc d;
    stk_status st = stk_host_call_sample_input(call, sample, i, &d);
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

/* Copies one returned (array, layout) pair into output `index` of sample `sample`. */
static stk_status store_output(stk_host_call *call, size_t sample, size_t index, PyObject *pair,
                               char *err, size_t cap) {
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
    st = stk_host_call_sample_output(call, sample, index, (stk_dtype)dtype, view.ndim, shape,
                                     layout, &data);
    if (st != STK_OK)
      snprintf(err, cap, "%s", stk_last_error());
    else if (view.len)
      memcpy(data, view.buf, (size_t)view.len);
  }
  PyBuffer_Release(&view);
  return st;
}

/* Stores the per-sample call's [(array, layout), ...] (or the error text) in the call. */
static stk_status store_sample_outputs(stk_host_call *call, size_t sample, PyObject *res, char *err,
                                       size_t cap) {
  if (PyUnicode_Check(res)) { /* the trampoline caught the user's exception and formatted it */
    const char *msg = PyUnicode_AsUTF8AndSize(res, NULL);
    snprintf(err, cap, "%s", msg ? msg : "python_function failed");
    return STK_ERR_INVALID_ARGUMENT;
  }
  Py_ssize_t n = PySequence_Check(res) ? PySequence_Size(res) : -1;
  if (n < 0) {
    PyErr_Clear();
    snprintf(err, cap, "python_function: the trampoline returned no output list");
    return STK_ERR_INTERNAL;
  }
  stk_status st = STK_OK;
  for (Py_ssize_t i = 0; st == STK_OK && i < n; i++) {
    PyObject *pair = PySequence_GetItem(res, i);
    st = pair ? store_output(call, sample, (size_t)i, pair, err, cap) : STK_ERR_INTERNAL;
    Py_XDECREF(pair);
  }
  return st;
}

static stk_status call_per_sample(PyObject *trampoline, stk_host_call *call, char *err,
                                  size_t cap) {
  PyObject *inputs = input_tuple(call, 0);
  PyObject *res = inputs ? PyObject_CallFunction(trampoline, "(NL)", inputs,
                                                 (long long)stk_host_call_ordinal(call))
                         : NULL;
  stk_status st;
  if (!res) {
    exception_text(err, cap);
    st = STK_ERR_INVALID_ARGUMENT;
  } else {
    st = store_sample_outputs(call, 0, res, err, cap);
  }
  Py_XDECREF(res);
  return st;
}

/* A batch call's inputs: per input, a list of per-sample tuples (host calls) or the
 * device tensor list itself (device calls). */
static PyObject *batch_inputs(stk_host_call *call) {
  size_t num = stk_host_call_num_inputs(call), n = stk_host_call_batch_size(call);
  bool device = stk_host_call_device(call) >= 0;
  PyObject *inputs = PyTuple_New((Py_ssize_t)num);
  for (size_t i = 0; inputs && i < num; i++) {
    PyObject *item = NULL;
    if (device) {
      item = pystk_tensorlist_wrap(stk_host_call_input_list(call, i));
    } else if ((item = PyList_New((Py_ssize_t)n))) {
      for (size_t k = 0; k < n; k++) {
        PyObject *t = input_tuple(call, k);
        if (!t) {
          Py_CLEAR(item);
          break;
        }
        PyObject *one = PyTuple_GetItem(t, (Py_ssize_t)i);
        Py_INCREF(one);
        PyList_SetItem(item, (Py_ssize_t)k, one);
        Py_DECREF(t);
      }
    }
    if (!item)
      Py_CLEAR(inputs);
    else
      PyTuple_SetItem(inputs, (Py_ssize_t)i, item);
  }
  return inputs;
}

/* Puts "sample i: " before the error text of a batch call. */
static void name_sample(char *err, size_t cap, size_t i) {
  char inner[1024];
  snprintf(inner, sizeof inner, "%s", err);
  snprintf(err, cap, "sample %zu: %s", i, inner);
}

/* Device output `index` from the returned per-sample DLPack objects. */
static stk_status store_device_output(stk_host_call *call, size_t index, PyObject *samples,
                                      const char *layout, char *err, size_t cap) {
  size_t n = (size_t)PyList_Size(samples);
  stk_tensor_desc *descs = calloc(n ? n : 1, sizeof *descs);
  PyObject **keep = calloc(n ? n : 1, sizeof *keep);
  stk_status st = descs && keep ? STK_OK : STK_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; st == STK_OK && i < n; i++) {
    int type;
    if (pystk_dlpack_import(PyList_GetItem(samples, (Py_ssize_t)i), stk_host_call_stream(call),
                            &descs[i], &type, &keep[i]) < 0) {
      exception_text(err, cap);
      name_sample(err, cap, i);
      st = STK_ERR_INVALID_ARGUMENT;
    } else if (type != 1 && type != 2 && type != 3) { /* CPU, CUDA, CUDA host */
      snprintf(err, cap,
               "python_function: output %zu, sample %zu: DLPack device type %d is "
               "neither CUDA nor CPU memory",
               index, i, type);
      st = STK_ERR_INVALID_ARGUMENT;
    }
  }
  if (st == STK_OK) {
    Py_BEGIN_ALLOW_THREADS /* the copies wait for the stream */
        st = stk_host_call_set_device_output(call, index, descs, n, layout);
    Py_END_ALLOW_THREADS if (st != STK_OK)
        snprintf(err, cap, "python_function: %s", stk_last_error());
  }
  for (size_t i = 0; keep && i < n; i++) Py_XDECREF(keep[i]);
  free(keep);
  free(descs);
  return st;
}

/* The trampoline's batch result: per output, (list of per-sample objects, layout). */
static stk_status store_batch_outputs(stk_host_call *call, PyObject *res, char *err, size_t cap) {
  if (PyUnicode_Check(res)) return store_sample_outputs(call, 0, res, err, cap);
  bool device = stk_host_call_device(call) >= 0;
  size_t n = stk_host_call_batch_size(call);
  Py_ssize_t outs = PyList_Check(res) ? PyList_Size(res) : -1;
  stk_status st = outs < 0 ? STK_ERR_INTERNAL : STK_OK;
  if (outs < 0) snprintf(err, cap, "python_function: the trampoline returned no output list");
  for (Py_ssize_t k = 0; st == STK_OK && k < outs; k++) {
    PyObject *pair = PyList_GetItem(res, k), *samples = PyTuple_GetItem(pair, 0);
    PyObject *layout_obj = PyTuple_GetItem(pair, 1);
    const char *layout = layout_obj != Py_None ? PyUnicode_AsUTF8AndSize(layout_obj, NULL) : NULL;
    if (!PyList_Check(samples) || (size_t)PyList_Size(samples) != n) {
      snprintf(err, cap, "python_function: the trampoline returned a bad sample list");
      st = STK_ERR_INTERNAL;
    } else if (device) {
      st = store_device_output(call, (size_t)k, samples, layout, err, cap);
    } else {
      for (size_t i = 0; st == STK_OK && i < n; i++) {
        PyObject *arr = PyList_GetItem(samples, (Py_ssize_t)i);
        PyObject *one = Py_BuildValue("(OO)", arr, layout_obj);
        st = one ? store_output(call, i, (size_t)k, one, err, cap) : STK_ERR_OUT_OF_MEMORY;
        Py_XDECREF(one);
        if (st != STK_OK) name_sample(err, cap, i);
      }
    }
  }
  return st;
}

static stk_status call_per_batch(PyObject *trampoline, stk_host_call *call, char *err, size_t cap) {
  PyObject *inputs = batch_inputs(call);
  PyObject *res = inputs ? PyObject_CallMethod(trampoline, "call_batch", "(NLniK)", inputs,
                                               (long long)stk_host_call_ordinal(call),
                                               (Py_ssize_t)stk_host_call_batch_size(call),
                                               stk_host_call_device(call),
                                               (unsigned long long)stk_host_call_stream(call))
                         : NULL;
  stk_status st;
  if (!res) {
    exception_text(err, cap);
    st = STK_ERR_INVALID_ARGUMENT;
  } else {
    st = store_batch_outputs(call, res, err, cap);
  }
  Py_XDECREF(res);
  return st;
}

static stk_status call_with_gil(PyObject *trampoline, stk_host_call *call) {
  char err[1024] = "";
  bool batch = stk_host_call_batch_size(call) > 0 || stk_host_call_device(call) >= 0;
  stk_status st = batch ? call_per_batch(trampoline, call, err, sizeof err)
                        : call_per_sample(trampoline, call, err, sizeof err);
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
  /* close may have run while this thread waited for the GIL */
  PyObject *trampoline = atomic_load(&h->closed) ? NULL : h->trampoline;
  Py_XINCREF(trampoline);
  stk_status st = STK_ERR_STATE;
  if (trampoline)
    st = call_with_gil(trampoline, call);
  else
    stk_host_call_fail(call, "python_function: the pipeline is closing");
  Py_XDECREF(trampoline);
  PyGILState_Release(g);
  return st;
}
