/* TensorList: one output of one batch. The object owns one reference to the C tensor
 * list; views (buffer protocol, DLPack capsules) hold their own C or Python references,
 * so the memory stays valid while any view lives and returns to the pool after. */
#include <string.h>

#include "pystk.h"

PyObject *pystk_TensorListType;
/* The class run() instantiates: the Python subclass stoker.tensors.TensorList once
 * registered, the C base before. */
static PyObject *tensorlist_class;

static stk_tensor_list *handle(PyObject *self) { return ((pystk_TensorList *)self)->tl; }

PyObject *pystk_tensorlist_wrap(stk_tensor_list *tl) {
  PyTypeObject *cls = (PyTypeObject *)(tensorlist_class ? tensorlist_class : pystk_TensorListType);
  allocfunc alloc = (allocfunc)PyType_GetSlot(cls, Py_tp_alloc);
  PyObject *obj = alloc(cls, 0);
  if (!obj) return NULL;
  stk_tensor_list_retain(tl);
  ((pystk_TensorList *)obj)->tl = tl;
  return obj;
}

int pystk_tensorlist_check(PyObject *obj, stk_tensor_list **out) {
  int r = PyObject_IsInstance(obj, pystk_TensorListType);
  if (r > 0) *out = handle(obj);
  return r;
}

static void tl_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  stk_tensor_list *tl = handle(self);
  ((pystk_TensorList *)self)->tl = NULL;
  if (tl) stk_tensor_list_release(tl);
  freefunc free_fn = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  free_fn(self);
  Py_DECREF(tp);
}

static PyObject *tl_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyErr_SetString(PyExc_TypeError,
                  "TensorList objects come from Pipeline.run(); they cannot be created directly");
  return NULL;
}

static Py_ssize_t tl_len(PyObject *self) {
  return handle(self) ? (Py_ssize_t)stk_tensor_list_num_samples(handle(self)) : 0;
}

static int check_valid(PyObject *self) {
  if (handle(self)) return 0;
  PyErr_SetString(PyExc_ValueError, "TensorList is empty (not produced by a pipeline)");
  return -1;
}

static PyObject *tl_layout(PyObject *self, PyObject *unused) {
  if (check_valid(self) < 0) return NULL;
  const char *l = stk_tensor_list_layout(handle(self));
  return PyUnicode_FromString(l ? l : "");
}

static PyObject *tl_get_dtype(PyObject *self, void *closure) {
  if (check_valid(self) < 0) return NULL;
  const char *n = pystk_dtype_name(stk_tensor_list_dtype(handle(self)));
  return PyUnicode_FromString(n ? n : "unknown");
}

static PyObject *tl_get_storage(PyObject *self, void *closure) {
  if (check_valid(self) < 0) return NULL;
  static const char *const names[] = {"host", "pinned", "device"};
  stk_storage s = stk_tensor_list_storage(handle(self));
  return PyUnicode_FromString((unsigned)s < 3 ? names[s] : "unknown");
}

static PyObject *tl_get_device_id(PyObject *self, void *closure) {
  if (check_valid(self) < 0) return NULL;
  return PyLong_FromLong(stk_tensor_list_device_id(handle(self)));
}

static PyObject *tl_get_ndim(PyObject *self, void *closure) {
  if (check_valid(self) < 0) return NULL;
  return PyLong_FromLong(stk_tensor_list_ndim(handle(self)));
}

static PyObject *tl_is_dense(PyObject *self, PyObject *unused) {
  if (check_valid(self) < 0) return NULL;
  return PyBool_FromLong(stk_tensor_list_is_dense(handle(self)));
}

static PyObject *tl_data_ptr(PyObject *self, PyObject *unused) {
  if (check_valid(self) < 0) return NULL;
  void *p = stk_tensor_list_is_dense(handle(self)) ? stk_tensor_list_data(handle(self)) : NULL;
  if (!p) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(p);
}

static PyObject *int64_tuple(const int64_t *v, int n) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(v[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SetItem(t, i, x); /* steals x */
  }
  return t;
}

/* _sample(i) -> (data pointer, shape, byte strides, dtype name, layout). */
static PyObject *tl_sample(PyObject *self, PyObject *arg) {
  if (check_valid(self) < 0) return NULL;
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  Py_ssize_t n = tl_len(self), given = i;
  if (i < 0) i += n;
  if (i < 0 || i >= n) {
    PyErr_Format(PyExc_IndexError, "sample index %zd out of range for a batch of %zd", given, n);
    return NULL;
  }
  stk_tensor_desc d;
  stk_status st = stk_tensor_list_sample(handle(self), (size_t)i, &d);
  if (st != STK_OK) return pystk_raise(st);
  const char *dt = pystk_dtype_name(d.dtype);
  return Py_BuildValue("(NNNss)", PyLong_FromVoidPtr(d.data), int64_tuple(d.shape, d.ndim),
                       int64_tuple(d.strides, d.ndim), dt ? dt : "unknown", d.layout);
}

/* _shapes() -> list of per-sample shape tuples. */
static PyObject *tl_shapes(PyObject *self, PyObject *unused) {
  if (check_valid(self) < 0) return NULL;
  Py_ssize_t n = tl_len(self);
  PyObject *list = PyList_New(n);
  for (Py_ssize_t i = 0; list && i < n; i++) {
    stk_tensor_desc d;
    stk_status st = stk_tensor_list_sample(handle(self), (size_t)i, &d);
    PyObject *t = st == STK_OK ? int64_tuple(d.shape, d.ndim) : pystk_raise(st);
    if (!t) {
      Py_CLEAR(list);
      break;
    }
    PyList_SetItem(list, i, t);
  }
  return list;
}

/* ---- buffer protocol: the dense list as one [N, *sample_shape] array ---- */

static int tl_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  stk_tensor_list *tl = handle(self);
  if (check_valid(self) < 0) return -1;
  if (stk_tensor_list_storage(tl) == STK_STORAGE_DEVICE) {
    PyErr_SetString(PyExc_BufferError,
                    "TensorList: GPU memory has no buffer protocol; use __dlpack__, "
                    "__cuda_array_interface__ or as_cpu()");
    return -1;
  }
  size_t n = stk_tensor_list_num_samples(tl);
  if (n == 0 || !stk_tensor_list_is_dense(tl)) {
    PyErr_SetString(PyExc_BufferError,
                    "TensorList: samples differ in shape (ragged batch); index the list to "
                    "get each sample");
    return -1;
  }
  stk_tensor_desc d;
  stk_status st = stk_tensor_list_sample(tl, 0, &d);
  if (st != STK_OK) {
    pystk_raise(st);
    return -1;
  }
  int ndim = d.ndim + 1;
  Py_ssize_t *dims = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)ndim);
  if (!dims) {
    PyErr_NoMemory();
    return -1;
  }
  Py_ssize_t itemsize = (Py_ssize_t)stk_dtype_size(d.dtype);
  dims[0] = (Py_ssize_t)n;
  for (int k = 0; k < d.ndim; k++) dims[k + 1] = (Py_ssize_t)d.shape[k];
  Py_ssize_t stride = itemsize; /* dense means C-contiguous */
  for (int k = ndim - 1; k >= 0; k--) {
    dims[ndim + k] = stride;
    stride *= dims[k];
  }
  view->buf = stk_tensor_list_data(tl);
  view->obj = self;
  Py_INCREF(self);
  view->len = stride;
  view->itemsize = itemsize;
  view->readonly = 0;
  view->ndim = ndim;
  view->format = (flags & PyBUF_FORMAT) ? (char *)pystk_dtype_format(d.dtype) : NULL;
  /* Consumers that ask for less structure get less (PyBUF_SIMPLE: a flat byte run). */
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? dims : NULL;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? dims + ndim : NULL;
  view->suboffsets = NULL;
  view->internal = dims;
  return 0;
}

static void tl_releasebuffer(PyObject *self, Py_buffer *view) { PyMem_Free(view->internal); }

/* ---- DLPack and CUDA array interface ---- */

static PyObject *tl_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  if (check_valid(self) < 0) return NULL;
  return pystk_dlpack_export(handle(self), -1, NULL, -1, args, kwargs);
}

/* _reshaped_dlpack(shape, stream=None, max_version=None, dl_device=None, copy=None): the
 * dense batch exported under another shape (as_reshaped_tensor). */
static PyObject *tl_reshaped_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  if (check_valid(self) < 0) return NULL;
  Py_ssize_t nargs = PyTuple_Size(args);
  PyObject *seq = nargs >= 1 ? PyTuple_GetItem(args, 0) : NULL;
  Py_ssize_t ndim = seq ? PySequence_Size(seq) : -1;
  if (ndim < 0) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, "_reshaped_dlpack(shape, ...) needs a shape");
    return NULL;
  }
  int64_t shape[STK_MAX_NDIM + 1];
  for (Py_ssize_t k = 0; k < ndim && k <= STK_MAX_NDIM; k++) {
    PyObject *item = PySequence_GetItem(seq, k);
    shape[k] = item ? PyLong_AsLongLong(item) : -1;
    Py_XDECREF(item);
    if (shape[k] == -1 && PyErr_Occurred()) return NULL;
  }
  PyObject *rest = PyTuple_GetSlice(args, 1, nargs);
  if (!rest) return NULL;
  PyObject *r = pystk_dlpack_export(handle(self), -1, shape,
                                    ndim > STK_MAX_NDIM + 1 ? -1 : (int)ndim, rest, kwargs);
  Py_DECREF(rest);
  return r;
}

/* _sample_dlpack(index, stream=None, max_version=None, dl_device=None, copy=None) */
static PyObject *tl_sample_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  if (check_valid(self) < 0) return NULL;
  Py_ssize_t nargs = PyTuple_Size(args);
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "_sample_dlpack(index, ...) needs an index");
    return NULL;
  }
  Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GetItem(args, 0));
  if (i == -1 && PyErr_Occurred()) return NULL;
  Py_ssize_t n = tl_len(self), given = i;
  if (i < 0) i += n;
  if (i < 0 || i >= n) {
    PyErr_Format(PyExc_IndexError, "sample index %zd out of range for a batch of %zd", given, n);
    return NULL;
  }
  PyObject *rest = PyTuple_GetSlice(args, 1, nargs);
  if (!rest) return NULL;
  PyObject *r = pystk_dlpack_export(handle(self), i, NULL, -1, rest, kwargs);
  Py_DECREF(rest);
  return r;
}

static PyObject *tl_dlpack_device(PyObject *self, PyObject *unused) {
  if (check_valid(self) < 0) return NULL;
  return pystk_dlpack_device(handle(self));
}

/* Version 3 of the CUDA array interface, for dense GPU lists. The legacy default stream
 * is made to wait for the producer's event and reported as the synchronisation
 * stream. */
static PyObject *tl_cuda_array_interface(PyObject *self, void *closure) {
  stk_tensor_list *tl = handle(self);
  if (!tl || stk_tensor_list_storage(tl) != STK_STORAGE_DEVICE) {
    PyErr_SetString(PyExc_AttributeError,
                    "__cuda_array_interface__ exists only for GPU TensorLists");
    return NULL;
  }
  size_t n = stk_tensor_list_num_samples(tl);
  stk_tensor_desc d;
  if (n == 0 || !stk_tensor_list_is_dense(tl)) {
    PyErr_SetString(PyExc_AttributeError,
                    "__cuda_array_interface__: the batch is ragged (samples differ in shape)");
    return NULL;
  }
  stk_status st = stk_tensor_list_sample(tl, 0, &d);
  if (st != STK_OK) return pystk_raise(st);
  int64_t shape[STK_MAX_NDIM + 1];
  shape[0] = (int64_t)n;
  memcpy(shape + 1, d.shape, sizeof(int64_t) * (size_t)d.ndim);
  PyObject *stream = Py_None;
  Py_INCREF(stream);
  if (stk_tensor_list_ready_event(tl)) {
    if (pystk_cuda_wait(tl, 1) < 0) {
      Py_DECREF(stream);
      return NULL;
    }
    Py_DECREF(stream);
    stream = PyLong_FromLong(1);
  }
  return Py_BuildValue("{s:N,s:s,s:(NO),s:O,s:i,s:N}", "shape", int64_tuple(shape, d.ndim + 1),
                       "typestr", pystk_dtype_typestr(d.dtype), "data",
                       PyLong_FromVoidPtr(stk_tensor_list_data(tl)), Py_False, "strides", Py_None,
                       "version", 3, "stream", stream);
}

/* _to_host() -> TensorList: a host copy (GPU batches are copied after they are ready). */
static PyObject *tl_to_host(PyObject *self, PyObject *unused) {
  if (check_valid(self) < 0) return NULL;
  stk_tensor_list *host = NULL;
  stk_status st;
  Py_BEGIN_ALLOW_THREADS st = stk_tensor_list_to_host(handle(self), &host);
  Py_END_ALLOW_THREADS if (st != STK_OK) return pystk_raise(st);
  PyObject *obj = pystk_tensorlist_wrap(host);
  stk_tensor_list_release(host); /* the wrapper holds its own reference */
  return obj;
}

/* _copy_out(first, count, address, nbytes, stream, blocking): stk_tensor_list_copy_out. */
static PyObject *tl_copy_out(PyObject *self, PyObject *args) {
  Py_ssize_t first, count;
  unsigned long long address, nbytes, stream;
  int blocking;
  if (!PyArg_ParseTuple(args, "nnKKKp:_copy_out", &first, &count, &address, &nbytes, &stream,
                        &blocking))
    return NULL;
  if (first < 0 || count < 0) {
    PyErr_SetString(PyExc_ValueError, "copy_to_external: negative sample range");
    return NULL;
  }
  if (check_valid(self) < 0) return NULL;
  stk_status st;
  Py_BEGIN_ALLOW_THREADS st = stk_tensor_list_copy_out(handle(self), (size_t)first, (size_t)count,
                                                       (void *)(uintptr_t)address, (size_t)nbytes,
                                                       (uintptr_t)stream, blocking);
  Py_END_ALLOW_THREADS if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

static PyMethodDef tl_methods[] = {
    {"_copy_out", tl_copy_out, METH_VARARGS,
     "_copy_out(first, count, address, nbytes, stream, blocking): samples into external memory"},
    {"_to_host", tl_to_host, METH_NOARGS, "_to_host() -> TensorList: a copy in host memory"},
    {"layout", tl_layout, METH_NOARGS, "layout() -> str: the batch's layout (\"HWC\", \"\"...)"},
    {"is_dense", tl_is_dense, METH_NOARGS,
     "is_dense() -> bool: every sample has one shape and the samples are contiguous"},
    {"is_dense_tensor", tl_is_dense, METH_NOARGS, "alias of is_dense() (DALI's name)"},
    {"data_ptr", tl_data_ptr, METH_NOARGS, "data_ptr() -> int | None: start of a dense list"},
    {"_sample", tl_sample, METH_O, "_sample(i) -> (ptr, shape, byte strides, dtype, layout)"},
    {"_shapes", tl_shapes, METH_NOARGS, "_shapes() -> list of shape tuples"},
    {"__dlpack__", (PyCFunction)(void (*)(void))tl_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(stream=None, max_version=None, dl_device=None, copy=None) -> capsule\n\n"
     "Exports the dense batch as one [N, ...] tensor without a copy (DLPack Python "
     "spec). max_version >= (1, 0) gives a versioned capsule, else a legacy one."},
    {"_reshaped_dlpack", (PyCFunction)(void (*)(void))tl_reshaped_dlpack,
     METH_VARARGS | METH_KEYWORDS, "__dlpack__ of the dense batch under another shape"},
    {"_sample_dlpack", (PyCFunction)(void (*)(void))tl_sample_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__ of one sample"},
    {"__dlpack_device__", tl_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (device_type, device_id)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef tl_getset[] = {
    {"dtype_name", tl_get_dtype, NULL, "the element type's name (\"uint8\", \"float32\"...)", NULL},
    {"storage", tl_get_storage, NULL, "\"host\", \"pinned\" or \"device\"", NULL},
    {"device_id", tl_get_device_id, NULL, "CUDA device of the memory, -1 for host", NULL},
    {"ndim", tl_get_ndim, NULL, "dimensions of each sample", NULL},
    {"__cuda_array_interface__", tl_cuda_array_interface, NULL,
     "CUDA array interface v3 (dense GPU lists only)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot tl_slots[] = {
    {Py_tp_dealloc, tl_dealloc},
    {Py_tp_new, tl_new},
    {Py_tp_methods, tl_methods},
    {Py_tp_getset, tl_getset},
    {Py_sq_length, tl_len},
    {Py_mp_length, tl_len},
    {Py_bf_getbuffer, tl_getbuffer},
    {Py_bf_releasebuffer, tl_releasebuffer},
    {Py_tp_doc, "A batch of samples (one pipeline output); see stoker.tensors.TensorList."},
    {0, NULL}};

static PyType_Spec tl_spec = {"stoker._stoker.TensorList", sizeof(pystk_TensorList), 0,
                              Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, tl_slots};

static PyObject *set_tensorlist_class(PyObject *self, PyObject *cls) {
  if (!PyType_Check(cls) || PyObject_IsSubclass(cls, pystk_TensorListType) <= 0) {
    PyErr_SetString(PyExc_TypeError, "_set_tensorlist_class expects a TensorList subclass");
    return NULL;
  }
  PyObject *old = tensorlist_class;
  Py_INCREF(cls);
  tensorlist_class = cls;
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

static PyMethodDef extra_methods[] = {{"_set_tensorlist_class", set_tensorlist_class, METH_O,
                                       "sets the class Pipeline.run() instantiates for outputs"},
                                      {NULL, NULL, 0, NULL}};

int pystk_tensorlist_init_type(PyObject *module) {
  pystk_TensorListType = PyType_FromSpec(&tl_spec);
  if (!pystk_TensorListType) return -1;
  Py_INCREF(pystk_TensorListType);
  if (PyModule_AddObject(module, "TensorList", pystk_TensorListType) < 0) {
    Py_DECREF(pystk_TensorListType);
    return -1;
  }
  return PyModule_AddFunctions(module, extra_methods);
}
