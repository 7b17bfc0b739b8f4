/* DLPack export of tensor lists, following the DLPack Python specification: versioned
 * capsules ("dltensor_versioned", DLPack 1.x) when the consumer's max_version allows,
 * legacy capsules ("dltensor") otherwise. The structures below are declared from the
 * DLPack ABI (dlpack.h, version 1.0); they must keep that exact layout. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "pystk.h"

/* ---- the DLPack ABI ---- */
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BOOL = 6 };
#define DL_FLAG_READ_ONLY (1ull << 0)
#define DL_FLAG_IS_COPIED (1ull << 1)

typedef struct {
  int32_t device_type;
  int32_t device_id;
} dl_device;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} dl_dtype;

typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* in elements */
  uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
  dl_tensor tensor;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed;

typedef struct {
  uint32_t major, minor;
} dl_version;

typedef struct dl_managed_versioned {
  dl_version version;
  void *manager_ctx;
  void (*deleter)(struct dl_managed_versioned *self);
  uint64_t flags;
  dl_tensor tensor;
} dl_managed_versioned;

/* ---- one export: the managed tensor plus what it points into ---- */
typedef struct {
  dl_managed legacy;
  dl_managed_versioned versioned;
  int64_t shape[STK_MAX_NDIM + 1];
  int64_t strides[STK_MAX_NDIM + 1];
  stk_tensor_list *tl; /* the reference that keeps the memory alive (NULL for copies) */
  void *copy;          /* the malloc'd copy when the consumer asked for one */
} export_ctx;

/* Deleters may run on any thread without the GIL (a framework frees its tensor
 * wherever it likes): they touch only C state, and tensor-list release is thread-safe. */
static void ctx_free(export_ctx *ctx) {
  if (ctx->tl) stk_tensor_list_release(ctx->tl);
  free(ctx->copy);
  free(ctx);
}
static void delete_legacy(dl_managed *m) { ctx_free(m->manager_ctx); }
static void delete_versioned(dl_managed_versioned *m) { ctx_free(m->manager_ctx); }

static void capsule_legacy_dtor(PyObject *cap) {
  if (PyCapsule_IsValid(cap, "used_dltensor")) return; /* the consumer owns it now */
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter) m->deleter(m);
  PyErr_Restore(t, v, tb);
}

static void capsule_versioned_dtor(PyObject *cap) {
  if (PyCapsule_IsValid(cap, "used_dltensor_versioned")) return;
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  dl_managed_versioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
  if (m && m->deleter) m->deleter(m);
  PyErr_Restore(t, v, tb);
}

static int dl_dtype_of(stk_dtype d, dl_dtype *out) {
  out->lanes = 1;
  out->bits = (uint8_t)(stk_dtype_size(d) * 8);
  switch (d) {
    case STK_DTYPE_UINT8:
    case STK_DTYPE_UINT16:
    case STK_DTYPE_UINT32:
    case STK_DTYPE_UINT64:
      out->code = DL_UINT;
      return 0;
    case STK_DTYPE_INT8:
    case STK_DTYPE_INT16:
    case STK_DTYPE_INT32:
    case STK_DTYPE_INT64:
      out->code = DL_INT;
      return 0;
    case STK_DTYPE_FLOAT16:
    case STK_DTYPE_FLOAT32:
    case STK_DTYPE_FLOAT64:
      out->code = DL_FLOAT;
      return 0;
    case STK_DTYPE_BOOL:
      out->code = DL_BOOL;
      out->bits = 8;
      return 0;
    default:
      return -1;
  }
}

static dl_device device_of(stk_tensor_list *tl) {
  dl_device d = {DL_CPU, 0};
  /* Pinned memory is reported as CPU memory: every consumer can read it there. */
  if (stk_tensor_list_storage(tl) == STK_STORAGE_DEVICE) {
    d.device_type = DL_CUDA;
    d.device_id = stk_tensor_list_device_id(tl);
  }
  return d;
}

PyObject *pystk_dlpack_device(stk_tensor_list *tl) {
  dl_device d = device_of(tl);
  return Py_BuildValue("(ii)", d.device_type, d.device_id);
}

/* ---- CUDA stream ordering ---- */

/* The consumer's stream waits for the batch; the batch's memory returns to the pool only
 * after that stream has passed the point where the last reference was dropped. */
int pystk_cuda_wait(stk_tensor_list *tl, uintptr_t stream) {
  if (stk_tensor_list_set_consumer_stream(tl, stream) != STK_OK) {
    PyErr_Format(PyExc_BufferError, "__dlpack__: %s", stk_last_error());
    return -1;
  }
  return 0;
}

/* ---- export ---- */

typedef struct {
  PyObject *stream, *max_version, *dl_device, *copy;
} export_args;

static int parse_args(PyObject *args, PyObject *kwargs, export_args *a) {
  static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  a->stream = a->max_version = a->dl_device = a->copy = Py_None;
  return PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO:__dlpack__", kwlist, &a->stream,
                                     &a->max_version, &a->dl_device, &a->copy)
             ? 0
             : -1;
}

/* 1 when the consumer accepts DLPack 1.x capsules. */
static int wants_versioned(PyObject *max_version) {
  if (max_version == Py_None) return 0;
  PyObject *major = PySequence_GetItem(max_version, 0);
  if (!major) return -1;
  long v = PyLong_AsLong(major);
  Py_DECREF(major);
  if (v == -1 && PyErr_Occurred()) return -1;
  return v >= 1;
}

static int check_device(PyObject *requested, dl_device own) {
  if (requested == Py_None) return 0;
  int type, id;
  if (!PyArg_ParseTuple(requested, "ii:dl_device", &type, &id)) return -1;
  if (type == own.device_type && (type == DL_CPU || id == own.device_id)) return 0;
  if (type == DL_CPU && own.device_type == DL_CPU) return 0;
  PyErr_Format(PyExc_BufferError,
               "__dlpack__: the data lives on device (%d, %d); exporting to (%d, %d) "
               "would need a cross-device copy (use as_cpu() first)",
               own.device_type, own.device_id, type, id);
  return -1;
}

/* Orders the consumer's stream after the producer's work (GPU lists only). */
static int sync_stream(stk_tensor_list *tl, PyObject *stream, dl_device dev) {
  if (dev.device_type != DL_CUDA) {
    if (stream == Py_None) return 0;
    long s = PyLong_Check(stream) ? PyLong_AsLong(stream) : 0;
    if (s == -1 && PyErr_Occurred())
      PyErr_Clear(); /* (an int too large: refused below) */
    else if (s == -1)
      return 0; /* "no synchronisation" is harmless on the CPU */
    PyErr_SetString(PyExc_BufferError, "__dlpack__: stream must be None for CPU data");
    return -1;
  }
  uintptr_t handle = 1; /* None: the legacy default stream */
  if (stream != Py_None) {
    long long s = PyLong_AsLongLong(stream);
    if (s == -1 && PyErr_Occurred()) return -1;
    if (s == -1) return 0; /* the consumer synchronises itself */
    if (s == 0) {
      PyErr_SetString(PyExc_ValueError,
                      "__dlpack__: stream 0 is ambiguous for CUDA; pass 1 (legacy default) "
                      "or 2 (per-thread default)");
      return -1;
    }
    handle = (uintptr_t)s;
  }
  return pystk_cuda_wait(tl, handle);
}

/* Describes the whole dense list (sample < 0) or one sample in `ctx`. */
static int describe(stk_tensor_list *tl, Py_ssize_t sample, export_ctx *ctx, dl_tensor *t) {
  stk_tensor_desc d;
  size_t n = stk_tensor_list_num_samples(tl);
  if (sample < 0 && (n == 0 || !stk_tensor_list_is_dense(tl))) {
    PyErr_SetString(PyExc_BufferError,
                    "__dlpack__: the batch is ragged (samples differ in shape); export "
                    "samples one by one");
    return -1;
  }
  stk_status st = stk_tensor_list_sample(tl, sample < 0 ? 0 : (size_t)sample, &d);
  if (st != STK_OK) {
    pystk_raise(st);
    return -1;
  }
  int64_t item = (int64_t)stk_dtype_size(d.dtype);
  if (dl_dtype_of(d.dtype, &t->dtype) < 0 || item == 0) {
    PyErr_SetString(PyExc_BufferError, "__dlpack__: unsupported dtype");
    return -1;
  }
  int lead = sample < 0 ? 1 : 0;
  t->ndim = d.ndim + lead;
  if (lead) ctx->shape[0] = (int64_t)n;
  memcpy(ctx->shape + lead, d.shape, sizeof(int64_t) * (size_t)d.ndim);
  for (int k = 0; k < d.ndim; k++) {
    if (d.strides[k] % item != 0) {
      PyErr_SetString(PyExc_BufferError, "__dlpack__: strides are not whole elements");
      return -1;
    }
    ctx->strides[k + lead] = d.strides[k] / item;
  }
  if (lead) {
    int64_t per_sample = 1;
    for (int k = 0; k < d.ndim; k++) per_sample *= d.shape[k];
    ctx->strides[0] = per_sample;
    /* Dense lists are C-contiguous whatever strides a sample reports. */
    int64_t s = 1;
    for (int k = t->ndim - 1; k >= 1; k--) {
      ctx->strides[k] = s;
      s *= ctx->shape[k];
    }
  }
  t->data = lead ? stk_tensor_list_data(tl) : d.data;
  t->shape = ctx->shape;
  t->strides = ctx->strides;
  t->byte_offset = 0;
  return 0;
}

/* Replaces the exported memory by a private C-contiguous copy (host memory only). */
static int make_copy(export_ctx *ctx, dl_tensor *t, dl_device dev) {
  if (dev.device_type != DL_CPU) {
    PyErr_SetString(PyExc_BufferError, "__dlpack__: copy=True is supported for CPU data only");
    return -1;
  }
  size_t item = t->dtype.bits / 8, count = 1;
  for (int k = 0; k < t->ndim; k++) count *= (size_t)t->shape[k];
  size_t bytes = count * item;
  char *dst = malloc(bytes ? bytes : 1);
  if (!dst) {
    PyErr_NoMemory();
    return -1;
  }
  /* Walk the elements in row-major order using the source strides. */
  int64_t idx[STK_MAX_NDIM + 1] = {0};
  const char *src = t->data;
  for (size_t e = 0; e < count; e++) {
    int64_t off = 0;
    for (int k = 0; k < t->ndim; k++) off += idx[k] * t->strides[k];
    memcpy(dst + e * item, src + off * (int64_t)item, item);
    for (int k = t->ndim - 1; k >= 0; k--) {
      if (++idx[k] < t->shape[k]) break;
      idx[k] = 0;
    }
  }
  int64_t s = 1;
  for (int k = t->ndim - 1; k >= 0; k--) {
    ctx->strides[k] = s;
    s *= t->shape[k];
  }
  ctx->copy = dst;
  t->data = dst;
  return 0;
}

/* The dense whole list `t` describes takes `shape` instead (C-contiguous, the same
 * element count). */
static int apply_reshape(export_ctx *ctx, dl_tensor *t, const int64_t *shape, int ndim) {
  int64_t have = 1, want = 1;
  for (int k = 0; k < t->ndim; k++) have *= ctx->shape[k];
  for (int k = 0; k < ndim; k++) want *= shape[k] >= 0 ? shape[k] : -1;
  if (ndim < 0 || ndim > STK_MAX_NDIM + 1 || want != have) {
    PyErr_Format(PyExc_BufferError,
                 "__dlpack__: a reshape to %d dimensions of %lld elements does not fit "
                 "the batch's %lld",
                 ndim, (long long)want, (long long)have);
    return -1;
  }
  t->ndim = ndim;
  int64_t stride = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    ctx->shape[k] = shape[k];
    ctx->strides[k] = stride;
    stride *= shape[k];
  }
  return 0;
}

PyObject *pystk_dlpack_export(stk_tensor_list *tl, Py_ssize_t sample, const int64_t *reshape,
                              int reshape_ndim, PyObject *args, PyObject *kwargs) {
  export_args a;
  if (parse_args(args, kwargs, &a) < 0) return NULL;
  int versioned = wants_versioned(a.max_version);
  int copy = a.copy == Py_None ? 0 : PyObject_IsTrue(a.copy);
  if (versioned < 0 || copy < 0) return NULL;
  dl_device dev = device_of(tl);
  if (check_device(a.dl_device, dev) < 0 || sync_stream(tl, a.stream, dev) < 0) return NULL;
  export_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return PyErr_NoMemory();
  dl_tensor t;
  memset(&t, 0, sizeof t);
  t.device = dev;
  if (describe(tl, sample, ctx, &t) < 0 ||
      (reshape && (sample >= 0 || apply_reshape(ctx, &t, reshape, reshape_ndim) < 0)) ||
      (copy && make_copy(ctx, &t, dev) < 0)) {
    ctx_free(ctx);
    return NULL;
  }
  if (!copy) {
    stk_tensor_list_retain(tl);
    ctx->tl = tl;
  }
  PyObject *cap;
  if (versioned) {
    ctx->versioned.version.major = 1;
    ctx->versioned.version.minor = 0;
    ctx->versioned.manager_ctx = ctx;
    ctx->versioned.deleter = delete_versioned;
    ctx->versioned.flags = copy ? DL_FLAG_IS_COPIED : 0;
    ctx->versioned.tensor = t;
    cap = PyCapsule_New(&ctx->versioned, "dltensor_versioned", capsule_versioned_dtor);
  } else {
    ctx->legacy.manager_ctx = ctx;
    ctx->legacy.deleter = delete_legacy;
    ctx->legacy.tensor = t;
    cap = PyCapsule_New(&ctx->legacy, "dltensor", capsule_legacy_dtor);
  }
  if (!cap) ctx_free(ctx);
  return cap;
}

/* ---- import (device outputs of host functions) ---- */

static int stk_dtype_of_dl(dl_dtype t, stk_dtype *out) {
  for (int d = 0; d < STK_DTYPE_COUNT; d++) {
    dl_dtype x;
    if (dl_dtype_of((stk_dtype)d, &x) == 0 && x.code == t.code && x.bits == t.bits &&
        t.lanes == 1) {
      *out = (stk_dtype)d;
      return 0;
    }
  }
  return -1;
}

/* The capsule of `obj`: itself, or obj.__dlpack__(), asked for `stream` when the object
 * says it lives on a CUDA device (CPU producers refuse a stream). New reference. */
static PyObject *capsule_of(PyObject *obj, uintptr_t stream) {
  if (PyCapsule_CheckExact(obj)) {
    Py_INCREF(obj);
    return obj;
  }
  PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!dev) return NULL;
  int type = PyTuple_Check(dev) && PyTuple_Size(dev) >= 1
                 ? (int)PyLong_AsLong(PyTuple_GetItem(dev, 0))
                 : -1;
  Py_DECREF(dev);
  if (PyErr_Occurred()) return NULL;
  PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
  if (!method) return NULL;
  PyObject *kw = type == DL_CUDA && stream
                     ? Py_BuildValue("{s:K}", "stream", (unsigned long long)stream)
                     : PyDict_New();
  PyObject *empty = PyTuple_New(0);
  PyObject *cap = kw && empty ? PyObject_Call(method, empty, kw) : NULL;
  Py_XDECREF(kw);
  Py_XDECREF(empty);
  Py_DECREF(method);
  return cap;
}

int pystk_dlpack_import(PyObject *obj, uintptr_t stream, stk_tensor_desc *out, int *device_type,
                        PyObject **keep) {
  *keep = NULL;
  PyObject *cap = capsule_of(obj, stream);
  if (!cap) return -1;
  const dl_tensor *t = NULL;
  if (PyCapsule_IsValid(cap, "dltensor")) {
    t = &((dl_managed *)PyCapsule_GetPointer(cap, "dltensor"))->tensor;
  } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
    t = &((dl_managed_versioned *)PyCapsule_GetPointer(cap, "dltensor_versioned"))->tensor;
  } else {
    Py_DECREF(cap);
    PyErr_SetString(PyExc_TypeError, "not a DLPack tensor (a used or foreign capsule)");
    return -1;
  }
  stk_dtype dtype;
  if (t->ndim < 0 || t->ndim > STK_MAX_NDIM || stk_dtype_of_dl(t->dtype, &dtype) < 0) {
    Py_DECREF(cap);
    PyErr_Format(PyExc_TypeError, "unsupported DLPack tensor (%d dims, type code %d, %d bits)",
                 (int)t->ndim, (int)t->dtype.code, (int)t->dtype.bits);
    return -1;
  }
  memset(out, 0, sizeof *out);
  out->data = t->data ? (char *)t->data + t->byte_offset : NULL;
  out->ndim = t->ndim;
  out->dtype = dtype;
  int64_t elem = (int64_t)stk_dtype_size(dtype), dense = elem;
  for (int d = t->ndim - 1; d >= 0; d--) { /* strides NULL: C order */
    out->shape[d] = t->shape[d];
    out->strides[d] = t->strides ? t->strides[d] * elem : dense;
    dense *= t->shape[d];
  }
  *device_type = t->device.device_type;
  *keep = cap;
  return 0;
}
