/*
 * Shared declarations of the stoker CPython extension (`stoker._stoker`).
 *
 * The extension is built against the stable ABI (Py_LIMITED_API 3.11), so one binary
 * runs on CPython 3.11 and later. It is a thin layer over the public C API: the
 * DALI-shaped Python API (graphs, argument validation, iterators) lives in the pure
 * Python package; this file's types only own C handles and export memory.
 */
#ifndef STOKER_PYSTK_H
#define STOKER_PYSTK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

#include "stoker/stoker.h"

/* ---- module state (single-phase module: one interpreter) ---- */

/* Raises the Python exception for `status` with the calling thread's C message and
 * returns NULL. The class comes from the table installed by stoker.errors. */
PyObject *pystk_raise(stk_status status);
/* Same, with an explicit message (for failures seen on another thread). */
PyObject *pystk_raise_msg(stk_status status, const char *message);

/* dtype <-> buffer-protocol format characters and NumPy type strings. */
const char *pystk_dtype_format(stk_dtype dtype);
/* Parses a buffer format ("<f", "B", "=e", "?"...) into a dtype; -1 if unsupported. */
int pystk_dtype_from_format(const char *format, Py_ssize_t itemsize);
/* "uint8", "float32"... (the names of STK_DTYPE_MAP); NULL if invalid. */
const char *pystk_dtype_name(stk_dtype dtype);
/* The dtype with that exact name, -1 if none. */
int pystk_dtype_from_name(const char *name);
/* "<f4", "|u1", "|b1" ... for __array_interface__ / __cuda_array_interface__. */
const char *pystk_dtype_typestr(stk_dtype dtype);

/* ---- TensorList (tensorlist.c) ---- */

typedef struct {
  PyObject_HEAD stk_tensor_list *tl; /* one reference, released in dealloc */
} pystk_TensorList;

extern PyObject *pystk_TensorListType; /* the C base type */
int pystk_tensorlist_init_type(PyObject *module);
/* A new Python object of the registered class owning one new reference to `tl`. */
PyObject *pystk_tensorlist_wrap(stk_tensor_list *tl);
/* Non-zero if `obj` is a TensorList (or subclass); sets *out to its handle. */
int pystk_tensorlist_check(PyObject *obj, stk_tensor_list **out);

/* ---- DLPack export (dlpack.c) ---- */

/* Implements TensorList.__dlpack__ for the whole (dense) list or one sample. */
/* `reshape` (reshape_ndim values; NULL: none) exports a dense whole list under another
 * shape of the same element count (TensorList.as_reshaped_tensor). */
PyObject *pystk_dlpack_export(stk_tensor_list *tl, Py_ssize_t sample, const int64_t *reshape,
                              int reshape_ndim, PyObject *args, PyObject *kwargs);
/* (device_type, device_id) for __dlpack_device__. */
PyObject *pystk_dlpack_device(stk_tensor_list *tl);
/* Makes CUDA stream `stream` (a cudaStream_t as integer; 1 legacy, 2 per-thread) wait
 * for the producer's event of `tl`. Returns 0, or -1 with a Python error set. */
int pystk_cuda_wait(stk_tensor_list *tl, uintptr_t stream);
/* Reads `obj` (a DLPack capsule, or an object with __dlpack__, asked for `stream` when it
 * lives on a CUDA device) as a description of its memory; *device_type gets the DLPack
 * device type (1 CPU, 2 CUDA...). *keep receives the capsule: the memory stays valid while
 * it lives. Returns 0, or -1 with a Python error set. */
int pystk_dlpack_import(PyObject *obj, uintptr_t stream, stk_tensor_desc *out, int *device_type,
                        PyObject **keep);

/* ---- Pipeline (pipeline.c) ---- */

int pystk_pipeline_init_type(PyObject *module);

/* ---- host functions (hostfn.c) ---- */

/* The user data behind one python_function instance: a strong reference to the Python
 * trampoline, and a flag that stops calls into Python once the pipeline is closing. */
typedef struct pystk_hostfn pystk_hostfn;
pystk_hostfn *pystk_hostfn_new(PyObject *trampoline);
/* Marks the function closed: later calls fail without touching Python. */
void pystk_hostfn_close(pystk_hostfn *h);
stk_status pystk_hostfn_call(void *user, stk_host_call *call);
void pystk_hostfn_free(void *user);

#endif /* STOKER_PYSTK_H */
