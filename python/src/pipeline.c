/* _stoker.Pipeline: owns one stk_pipeline. Calls that can block (build, run, feed,
 * destroy) release the GIL, so python_function callbacks on worker threads can run and
 * other Python threads keep going. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pystk.h"

/* One stk_pipeline_run on a helper thread, so that the caller waits for it in short
 * slices and Ctrl-C (a signal handler raising KeyboardInterrupt) is seen within 50 ms, not
 * after the batch in flight. An interrupted run is kept: the next run() collects its batch
 * (none is lost or produced twice), close() waits for it. Freed by whichever side lets go
 * of it last. */
typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  stk_pipeline *p;
  stk_batch *b;
  stk_status st;
  char msg[1024];
  int done, refs;
} run_job;

static void job_release(run_job *j) {
  pthread_mutex_lock(&j->m);
  int left = --j->refs;
  pthread_mutex_unlock(&j->m);
  if (left) return;
  if (j->b) stk_batch_release(j->b);
  pthread_mutex_destroy(&j->m);
  pthread_cond_destroy(&j->c);
  free(j);
}

static void *job_main(void *arg) {
  run_job *j = arg;
  stk_batch *b = NULL;
  stk_status st = stk_pipeline_run(j->p, &b);
  pthread_mutex_lock(&j->m);
  j->st = st;
  j->b = b;
  if (st != STK_OK) snprintf(j->msg, sizeof j->msg, "%s", stk_last_error());
  j->done = 1;
  pthread_cond_broadcast(&j->c);
  pthread_mutex_unlock(&j->m);
  job_release(j);
  return NULL;
}

/* A run started on a helper thread, or NULL (no memory or no thread: run inline). */
static run_job *job_start(stk_pipeline *p) {
  run_job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  pthread_mutex_init(&j->m, NULL);
  pthread_cond_init(&j->c, NULL);
  j->p = p;
  j->refs = 2;
  pthread_t t;
  if (pthread_create(&t, NULL, job_main, j) != 0) {
    pthread_mutex_destroy(&j->m);
    pthread_cond_destroy(&j->c);
    free(j);
    return NULL;
  }
  pthread_detach(t);
  return j;
}

/* Waits for the job with the GIL released, 50 ms at a time, running Python's signal
 * handlers in between (when `interruptible`). 0 when done; -1 with the handler's exception
 * (KeyboardInterrupt) set. */
static int job_wait(run_job *j, int interruptible) {
  for (;;) {
    int done;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&j->m);
    if (!j->done) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 50 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&j->c, &j->m, &ts);
    }
    done = j->done;
    pthread_mutex_unlock(&j->m);
    Py_END_ALLOW_THREADS if (done) return 0;
    if (interruptible && PyErr_CheckSignals() < 0) return -1;
  }
}

typedef struct {
  PyObject_HEAD stk_pipeline *p;
  pystk_hostfn **fns; /* host functions attached to this pipeline (the C pipeline frees them) */
  size_t num_fns;
  int busy;         /* a call with the GIL released is in flight */
  run_job *pending; /* a run() interrupted by a signal, still finishing (busy stays set) */
} pystk_Pipeline;

static PyObject *PipelineType;

static stk_pipeline *pipe_of(PyObject *self) { return ((pystk_Pipeline *)self)->p; }

/* Checks that the pipeline is open and not in use by another thread. */
static int enter(PyObject *self) {
  pystk_Pipeline *pp = (pystk_Pipeline *)self;
  if (!pp->p) {
    pystk_raise_msg(STK_ERR_STATE, "Pipeline: the pipeline is closed");
    return -1;
  }
  if (pp->busy) {
    pystk_raise_msg(STK_ERR_STATE,
                    pp->pending ? "Pipeline: an interrupted run() is still finishing; call "
                                  "run() to collect its batch, or close()"
                                : "Pipeline: another thread is using this pipeline; a pipeline "
                                  "serves one thread at a time");
    return -1;
  }
  pp->busy = 1;
  return 0;
}

static void leave(PyObject *self) { ((pystk_Pipeline *)self)->busy = 0; }

/* Destroys the C pipeline (stopping its producer) and then the host functions. */
static void close_pipeline(pystk_Pipeline *pp) {
  if (pp->pending) { /* an interrupted run: let it finish before the pipeline goes */
    job_wait(pp->pending, 0);
    job_release(pp->pending);
    pp->pending = NULL;
    pp->busy = 0;
  }
  stk_pipeline *p = pp->p;
  pp->p = NULL;
  for (size_t i = 0; i < pp->num_fns; i++) pystk_hostfn_close(pp->fns[i]);
  if (p) { /* frees the functions' records, unless a stage thread outlived it (timeout_ms) */
    Py_BEGIN_ALLOW_THREADS stk_pipeline_destroy(p);
    Py_END_ALLOW_THREADS
  }
  free(pp->fns);
  pp->fns = NULL;
  pp->num_fns = 0;
}

static PyObject *wrap_handle(PyTypeObject *type, stk_pipeline *p) {
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  PyObject *self = alloc(type, 0);
  if (!self) {
    stk_pipeline_destroy(p);
    return NULL;
  }
  ((pystk_Pipeline *)self)->p = p;
  return self;
}

static PyObject *pl_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  if (PyTuple_Size(args) != 0 || (kwargs && PyDict_Size(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "_stoker.Pipeline() takes no arguments");
    return NULL;
  }
  stk_pipeline *p;
  stk_status st = stk_pipeline_create(&p);
  if (st != STK_OK) return pystk_raise(st);
  return wrap_handle(type, p);
}

static void pl_dealloc(PyObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  close_pipeline((pystk_Pipeline *)self);
  freefunc free_fn = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  free_fn(self);
  Py_DECREF(tp);
}

static PyObject *pl_close(PyObject *self, PyObject *unused) {
  if (((pystk_Pipeline *)self)->busy && !((pystk_Pipeline *)self)->pending)
    return pystk_raise_msg(STK_ERR_STATE, "Pipeline.close: in use by another thread");
  close_pipeline((pystk_Pipeline *)self);
  Py_RETURN_NONE;
}

static PyObject *pl_closed(PyObject *self, void *closure) {
  return PyBool_FromLong(pipe_of(self) == NULL);
}

/* ---- settings ---- */

static PyObject *pl_set(PyObject *self, PyObject *args) {
  int key;
  long long value;
  if (!PyArg_ParseTuple(args, "iL:set", &key, &value) || enter(self) < 0) return NULL;
  stk_status st = stk_pipeline_set(pipe_of(self), (stk_pipeline_setting)key, value);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

static PyObject *pl_get(PyObject *self, PyObject *args) {
  int key;
  if (!PyArg_ParseTuple(args, "i:get", &key) || enter(self) < 0) return NULL;
  int64_t v = 0;
  stk_status st = stk_pipeline_get(pipe_of(self), (stk_pipeline_setting)key, &v);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  return PyLong_FromLongLong(v);
}

/* ---- graph ---- */

/* Sets one argument, converting the Python value by the schema's type. */
static stk_status set_list_arg(stk_op *op, const char *name, stk_arg_type type, PyObject *value);

/* UTF-8 of a str for the C side, which reads NUL-terminated strings: an embedded NUL
 * would silently cut it (a path "a.jpg\0.png" read as "a.jpg"), so it is a ValueError
 * naming `what`. NULL with an exception set on failure. */
static const char *checked_utf8(PyObject *v, const char *what) {
  Py_ssize_t n;
  const char *s = PyUnicode_AsUTF8AndSize(v, &n);
  if (s && (size_t)n != strlen(s)) {
    PyErr_Format(PyExc_ValueError, "%s: embedded NUL character in %R", what, v);
    return NULL;
  }
  return s;
}

/* Re-raises an OverflowError from converting argument `name` with the argument named. */
static void name_overflow(const char *name, PyObject *v) {
  if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return;
  PyErr_Clear();
  PyErr_Format(PyExc_OverflowError, "argument '%s': %R does not fit in a 64-bit integer", name, v);
}

static stk_status set_arg(stk_op *op, const stk_arg_schema *a, const char *name, PyObject *v) {
  stk_arg_type type = a ? a->type : STK_ARG_STRING;
  if (!a) { /* unknown to the schema: let the C side name the culprit */
    if (PyBool_Check(v))
      type = STK_ARG_BOOL;
    else if (PyLong_Check(v))
      type = STK_ARG_INT;
    else if (PyFloat_Check(v))
      type = STK_ARG_FLOAT;
  }
  switch (type) {
    case STK_ARG_BOOL: {
      int b = PyObject_IsTrue(v);
      return b < 0 ? STK_ERR_INVALID_ARGUMENT : stk_op_set_bool(op, name, b);
    }
    case STK_ARG_INT: {
      long long x = PyLong_AsLongLong(v);
      if (x == -1 && PyErr_Occurred()) {
        name_overflow(name, v);
        return STK_ERR_INVALID_ARGUMENT;
      }
      return stk_op_set_int(op, name, x);
    }
    case STK_ARG_FLOAT: {
      double x = PyFloat_AsDouble(v);
      if (x == -1.0 && PyErr_Occurred()) return STK_ERR_INVALID_ARGUMENT;
      return stk_op_set_float(op, name, x);
    }
    case STK_ARG_STRING: {
      const char *s = checked_utf8(v, name);
      return s ? stk_op_set_string(op, name, s) : STK_ERR_INVALID_ARGUMENT;
    }
    default:
      return set_list_arg(op, name, type, v);
  }
}

static stk_status set_list_arg(stk_op *op, const char *name, stk_arg_type type, PyObject *value) {
  PyObject *seq = PySequence_Fast(value, "list argument expects a sequence");
  if (!seq) return STK_ERR_INVALID_ARGUMENT;
  Py_ssize_t n = PySequence_Size(seq);
  stk_status st = STK_ERR_INVALID_ARGUMENT;
  void *buf = malloc((size_t)(n ? n : 1) * sizeof(double) + sizeof(char *));
  if (!buf) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return STK_ERR_OUT_OF_MEMORY;
  }
  Py_ssize_t i = 0;
  for (; i < n; i++) {
    PyObject *x = PySequence_GetItem(seq, i);
    if (!x) break;
    if (type == STK_ARG_INTS)
      ((int64_t *)buf)[i] = PyLong_AsLongLong(x);
    else if (type == STK_ARG_FLOATS)
      ((double *)buf)[i] = PyFloat_AsDouble(x);
    else
      ((const char **)buf)[i] = checked_utf8(x, name); /* kept alive by seq */
    if (PyErr_Occurred()) name_overflow(name, x);
    Py_DECREF(x);
    if (PyErr_Occurred()) break;
  }
  if (i == n) {
    if (type == STK_ARG_INTS)
      st = stk_op_set_ints(op, name, buf, (size_t)n);
    else if (type == STK_ARG_FLOATS)
      st = stk_op_set_floats(op, name, buf, (size_t)n);
    else
      st = stk_op_set_strings(op, name, buf, (size_t)n);
  }
  free(buf);
  Py_DECREF(seq);
  return st;
}

static const stk_arg_schema *find_arg(const stk_op_schema *s, const char *name) {
  for (int i = 0; s && i < s->num_args; i++)
    if (strcmp(s->args[i].name, name) == 0) return &s->args[i];
  return NULL;
}

/* Adds each string of `list` through `add` (inputs or outputs). */
static stk_status add_edges(stk_op *op, PyObject *list, stk_status (*add)(stk_op *, const char *)) {
  Py_ssize_t n = PySequence_Size(list);
  if (n < 0) return STK_ERR_INVALID_ARGUMENT;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *x = PySequence_GetItem(list, i);
    const char *s = x ? checked_utf8(x, "an edge name") : NULL;
    stk_status st = s ? add(op, s) : STK_ERR_INVALID_ARGUMENT;
    Py_XDECREF(x);
    if (st != STK_OK) return st;
  }
  return STK_OK;
}

static stk_status fill_op(stk_op *op, const stk_op_schema *schema, const char *name,
                          PyObject *inputs, PyObject *outputs, PyObject *args,
                          PyObject *arg_inputs) {
  stk_status st = name ? stk_op_set_name(op, name) : STK_OK;
  if (st == STK_OK) st = add_edges(op, inputs, stk_op_add_input);
  if (st == STK_OK) st = add_edges(op, outputs, stk_op_add_output);
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (st == STK_OK && PyDict_Next(args, &pos, &key, &value)) {
    const char *k = checked_utf8(key, "an argument name");
    st = k ? set_arg(op, find_arg(schema, k), k, value) : STK_ERR_INVALID_ARGUMENT;
  }
  pos = 0;
  while (st == STK_OK && PyDict_Next(arg_inputs, &pos, &key, &value)) {
    const char *k = checked_utf8(key, "an argument name");
    const char *e = k ? checked_utf8(value, k) : NULL;
    st = k && e ? stk_op_set_arg_input(op, k, e) : STK_ERR_INVALID_ARGUMENT;
  }
  return st;
}

/* Adds the conditions of an operator inside `if` branches: a sequence of
 * (edge, value) pairs, all of which must hold for a sample (stk_op_add_guard). */
static stk_status add_guards(stk_op *op, PyObject *guards) {
  if (!guards || guards == Py_None) return STK_OK;
  Py_ssize_t n = PySequence_Size(guards);
  if (n < 0) return STK_ERR_INVALID_ARGUMENT;
  stk_status st = STK_OK;
  for (Py_ssize_t i = 0; st == STK_OK && i < n; i++) {
    const char *edge;
    long long value;
    PyObject *pair = PySequence_GetItem(guards, i);
    if (!pair || !PyTuple_Check(pair) ||
        !PyArg_ParseTuple(pair, "sL:add_op guard", &edge, &value)) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "add_op: a guard must be an (edge, value) tuple");
      Py_XDECREF(pair);
      return STK_ERR_INVALID_ARGUMENT;
    }
    st = stk_op_add_guard(op, edge, (int64_t)value); /* copies the edge name */
    Py_DECREF(pair);
  }
  return st;
}

/* add_op(schema, device, name, inputs, outputs, args, arg_inputs, guards=None) */
static PyObject *pl_add_op(PyObject *self, PyObject *a) {
  const char *schema_name, *device, *name;
  PyObject *inputs, *outputs, *args, *arg_inputs, *guards = NULL;
  if (!PyArg_ParseTuple(a, "szzOOO!O!|O:add_op", &schema_name, &device, &name, &inputs, &outputs,
                        &PyDict_Type, &args, &PyDict_Type, &arg_inputs, &guards))
    return NULL;
  if (enter(self) < 0) return NULL;
  stk_op *op = NULL;
  stk_status st = stk_op_create(schema_name, device, &op);
  if (st == STK_OK)
    st = fill_op(op, stk_registry_find(schema_name), name, inputs, outputs, args, arg_inputs);
  if (st == STK_OK) st = add_guards(op, guards);
  if (st == STK_OK) st = stk_pipeline_add_op(pipe_of(self), op);
  stk_op_destroy(op);
  leave(self);
  if (st != STK_OK) return PyErr_Occurred() ? NULL : pystk_raise(st);
  Py_RETURN_NONE;
}

static PyObject *pl_set_outputs(PyObject *self, PyObject *list) {
  PyObject *seq = PySequence_Fast(list, "set_outputs expects a list of edge names");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Size(seq);
  const char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1));
  if (!names) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  Py_ssize_t i = 0;
  for (; i < n; i++) {
    PyObject *x = PySequence_GetItem(seq, i);
    names[i] = x ? checked_utf8(x, "an output name") : NULL; /* kept alive by seq */
    Py_XDECREF(x);
    if (!names[i]) break;
  }
  stk_status st = STK_OK;
  int ok = i == n && enter(self) == 0;
  if (ok) {
    st = stk_pipeline_set_outputs(pipe_of(self), names, (size_t)n);
    leave(self);
  }
  free(names);
  Py_DECREF(seq);
  if (!ok) return NULL;
  if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

/* set_host_function(op_name, trampoline) */
static PyObject *pl_set_host_function(PyObject *self, PyObject *args) {
  const char *name;
  PyObject *fn;
  if (!PyArg_ParseTuple(args, "sO:set_host_function", &name, &fn) || enter(self) < 0) return NULL;
  pystk_Pipeline *pp = (pystk_Pipeline *)self;
  pystk_hostfn **grown = realloc(pp->fns, sizeof(*grown) * (pp->num_fns + 1));
  pystk_hostfn *h = grown ? pystk_hostfn_new(fn) : NULL;
  if (grown) pp->fns = grown;
  if (!h) {
    leave(self);
    return PyErr_NoMemory();
  }
  /* The C pipeline frees `h` when it is destroyed, after close_pipeline dropped its
   * trampoline: a stage thread that outlives the destroy may still call in. */
  stk_status st =
      stk_pipeline_set_host_function(pp->p, name, pystk_hostfn_call, h, pystk_hostfn_free);
  leave(self);
  if (st != STK_OK) {
    pystk_hostfn_free(h);
    return pystk_raise(st);
  }
  pp->fns[pp->num_fns++] = h;
  Py_RETURN_NONE;
}

/* ---- running ---- */

static PyObject *pl_build(PyObject *self, PyObject *unused) {
  if (enter(self) < 0) return NULL;
  stk_status st;
  Py_BEGIN_ALLOW_THREADS st = stk_pipeline_build(pipe_of(self));
  Py_END_ALLOW_THREADS leave(self);
  if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

static PyObject *batch_tuple(stk_batch *b) {
  size_t n = stk_batch_num_outputs(b);
  PyObject *t = PyTuple_New((Py_ssize_t)n);
  for (size_t i = 0; t && i < n; i++) {
    PyObject *o = pystk_tensorlist_wrap(stk_batch_output(b, i));
    if (!o)
      Py_CLEAR(t);
    else
      PyTuple_SetItem(t, (Py_ssize_t)i, o);
  }
  return t;
}

static PyObject *pl_run(PyObject *self, PyObject *unused) {
  pystk_Pipeline *pp = (pystk_Pipeline *)self;
  run_job *j = pp->pending; /* an interrupted run's batch comes first */
  if (!j) {
    if (enter(self) < 0) return NULL;
    j = job_start(pp->p);
  }
  stk_status st;
  stk_batch *b = NULL;
  if (j) {
    pp->pending = NULL; /* (only an interrupted run is pending: another thread calling
                           run() meanwhile finds the pipeline busy) */
    if (job_wait(j, 1) < 0) {
      pp->pending = j; /* Ctrl-C: the run goes on; the next run() takes its batch */
      return NULL;
    }
    st = j->st;
    b = j->b;
    j->b = NULL;
    leave(self);
    if (st != STK_OK) pystk_raise_msg(st, j->msg);
    job_release(j);
    if (st != STK_OK) return NULL;
  } else {
    Py_BEGIN_ALLOW_THREADS st = stk_pipeline_run(pipe_of(self), &b);
    Py_END_ALLOW_THREADS leave(self);
    if (st != STK_OK) return pystk_raise(st);
  }
  PyObject *t = batch_tuple(b);
  PyObject *r = t ? Py_BuildValue("(NLO)", t, (long long)stk_batch_epoch(b),
                                  stk_batch_ends_epoch(b) ? Py_True : Py_False)
                  : NULL;
  stk_batch_release(b); /* each TensorList holds its own reference */
  return r;
}

/* feed(op_name, samples, layout): copies a batch of buffer objects into the queue of
 * the external_source instance `op_name`. */
static PyObject *pl_feed(PyObject *self, PyObject *args) {
  const char *name, *layout = NULL;
  PyObject *samples;
  if (!PyArg_ParseTuple(args, "sO|z:feed", &name, &samples, &layout)) return NULL;
  PyObject *seq = PySequence_Fast(samples, "feed expects a sequence of arrays");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Size(seq), got = 0;
  Py_buffer *views = calloc((size_t)(n ? n : 1), sizeof *views);
  stk_tensor_desc *descs = calloc((size_t)(n ? n : 1), sizeof *descs);
  int ok = views && descs;
  if (!ok) PyErr_NoMemory();
  for (; ok && got < n; got++) {
    PyObject *x = PySequence_GetItem(seq, got);
    int r = x ? PyObject_GetBuffer(x, &views[got], PyBUF_STRIDES | PyBUF_FORMAT) : -1;
    Py_XDECREF(x);
    if (r < 0) {
      ok = 0;
      break;
    }
    Py_buffer *v = &views[got];
    stk_tensor_desc *d = &descs[got];
    int dtype = pystk_dtype_from_format(v->format, v->itemsize);
    if (dtype < 0 || v->ndim > STK_MAX_NDIM) {
      PyErr_Format(PyExc_TypeError, "feed: sample %zd of '%s' has an unsupported %s (%s)", got,
                   name, dtype < 0 ? "element type" : "number of dimensions",
                   v->format ? v->format : "?");
      got++;
      ok = 0;
      break;
    }
    d->data = v->buf;
    d->ndim = v->ndim;
    d->dtype = (stk_dtype)dtype;
    for (int k = 0; k < v->ndim; k++) {
      d->shape[k] = v->shape[k];
      d->strides[k] = v->strides[k];
    }
    snprintf(d->layout, sizeof d->layout, "%s", layout ? layout : "");
  }
  stk_status st = STK_OK;
  if (ok && enter(self) == 0) {
    Py_BEGIN_ALLOW_THREADS st = stk_pipeline_feed(pipe_of(self), name, descs, (size_t)n);
    Py_END_ALLOW_THREADS leave(self);
  } else {
    ok = 0;
  }
  for (Py_ssize_t i = 0; views && i < got; i++) PyBuffer_Release(&views[i]);
  free(views);
  free(descs);
  Py_DECREF(seq);
  if (!ok) return NULL;
  if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

static PyObject *pl_feed_end(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s:feed_end", &name) || enter(self) < 0) return NULL;
  stk_status st = stk_pipeline_feed_end(pipe_of(self), name);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

/* ---- queries ---- */

static PyObject *pl_epoch_size(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s:epoch_size", &name) || enter(self) < 0) return NULL;
  int64_t n = 0;
  stk_status st = stk_pipeline_epoch_size(pipe_of(self), name, &n);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  return PyLong_FromLongLong(n);
}

static PyObject *pl_reader_meta(PyObject *self, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s:reader_meta", &name) || enter(self) < 0) return NULL;
  stk_reader_meta m;
  memset(&m, 0, sizeof m);
  stk_status st = stk_pipeline_reader_meta(pipe_of(self), name, &m);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:O,s:O}", "epoch_size", (long long)m.epoch_size,
                       "epoch_size_padded", (long long)m.epoch_size_padded, "shard_size",
                       (long long)m.shard_size, "shard_id", (long long)m.shard_id,
                       "number_of_shards", (long long)m.number_of_shards, "pad_last_batch",
                       m.pad_last_batch ? Py_True : Py_False, "stick_to_shard",
                       m.stick_to_shard ? Py_True : Py_False);
}

/* The first STK_SKIP_MESSAGES_KEPT messages `get` gives (a skipped sample's or file's), a
 * list. */
static PyObject *skip_messages(PyObject *self, stk_status (*get)(stk_pipeline *, size_t, char **)) {
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list && i < STK_SKIP_MESSAGES_KEPT; i++) {
    char *message = NULL;
    if (get(pipe_of(self), i, &message) != STK_OK) break;
    PyObject *m = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
    stk_free(message);
    if (!m || PyList_Append(list, m) < 0) Py_CLEAR(list);
    Py_XDECREF(m);
  }
  stk_clear_error();
  return list;
}

static PyObject *skipped_samples(PyObject *self) {
  return skip_messages(self, stk_pipeline_skipped_sample);
}

/* The messages of the first files readers left out at build (stk_pipeline_skipped_file). */
static PyObject *skipped_files(PyObject *self) {
  return skip_messages(self, stk_pipeline_skipped_file);
}

typedef struct {
  const char *key;
  int64_t value;
} stat_item;

/* A dict of the items; NULL with an exception on failure. */
static PyObject *stats_dict(const stat_item *items, size_t count) {
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < count; i++) {
    PyObject *v = PyLong_FromLongLong((long long)items[i].value);
    if (!v || PyDict_SetItemString(d, items[i].key, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

/* d[key] = value (taken); d is released on failure. */
static PyObject *dict_put(PyObject *d, const char *key, PyObject *value) {
  if (d && (!value || PyDict_SetItemString(d, key, value) < 0)) Py_CLEAR(d);
  Py_XDECREF(value);
  return d;
}

static PyObject *pl_stats(PyObject *self, PyObject *unused) {
  if (enter(self) < 0) return NULL;
  stk_stats s = {.struct_size = sizeof s};
  stk_status st = stk_pipeline_stats(pipe_of(self), &s);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  const stat_item items[] = {
      {"batches", s.batches},
      {"samples", s.samples},
      {"skipped", s.skipped},
      {"host_bytes_in_use", s.host_bytes_in_use},
      {"host_bytes_cached", s.host_bytes_cached},
      {"host_bytes_peak", s.host_bytes_peak},
      {"device_bytes_in_use", s.device_bytes_in_use},
      {"device_bytes_cached", s.device_bytes_cached},
      {"cpu_stage_ns", s.cpu_stage_ns},
      {"producer_blocked_ns", s.producer_blocked_ns},
      {"gpu_stage_ns", s.gpu_stage_ns},
      {"gpu_idle_ns", s.gpu_idle_ns},
      {"consumer_wait_ns", s.consumer_wait_ns},
      {"decode_stage_ns", s.decode_stage_ns},
      {"host_decoded", s.host_decoded},
      {"cache_hits", s.cache_hits},
      {"cache_misses", s.cache_misses},
      {"cache_bytes", s.cache_bytes},
      {"cache_entries", s.cache_entries},
      {"cache_dropped", s.cache_dropped},
      {"skipped_files", s.skipped_files},
  };
  PyObject *d = stats_dict(items, sizeof items / sizeof items[0]);
  d = dict_put(d, "skipped_samples", d ? skipped_samples(self) : NULL);
  return dict_put(d, "skipped_file_messages", d ? skipped_files(self) : NULL);
}

/* decoder_diagnostics() -> dict: the GPU decoders' instrumentation. */
static PyObject *pl_decoder_diagnostics(PyObject *self, PyObject *unused) {
  if (enter(self) < 0) return NULL;
  stk_decoder_diagnostics g = {.struct_size = sizeof g};
  stk_status st = stk_pipeline_decoder_diagnostics(pipe_of(self), &g);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  const stat_item items[] = {
      {"decode_parse_ns", g.decode_parse_ns},
      {"decode_fence_ns", g.decode_fence_ns},
      {"decode_hw_call_ns", g.decode_hw_call_ns},
      {"decode_hybrid_wait_ns", g.decode_hybrid_wait_ns},
      {"host_blocks_pinned", g.host_blocks_pinned},
      {"host_pin_failures", g.host_pin_failures},
      {"host_decode_quota", g.host_decode_quota},
      {"own_decoded", g.own_decoded},
  };
  PyObject *d = stats_dict(items, sizeof items / sizeof items[0]);
  d = dict_put(d, "own_share", d ? PyFloat_FromDouble(g.own_share) : NULL);
  return dict_put(d, "decode_hw_share", d ? PyFloat_FromDouble(g.decode_hw_share) : NULL);
}

/* op_times() -> list of (instance name, nanoseconds) in graph order. */
static PyObject *pl_op_times(PyObject *self, PyObject *unused) {
  if (enter(self) < 0) return NULL;
  size_t n = stk_pipeline_num_ops(pipe_of(self));
  PyObject *list = PyList_New(0);
  for (size_t i = 0; list && i < n; i++) {
    const char *name = NULL;
    int64_t ns = 0;
    stk_status st = stk_pipeline_op_time(pipe_of(self), i, &name, &ns);
    PyObject *item =
        st == STK_OK ? Py_BuildValue("(sL)", name ? name : "", (long long)ns) : pystk_raise(st);
    if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
    Py_XDECREF(item);
  }
  leave(self);
  return list;
}

/* checkpoint() -> str: the state after the last batch run() returned (checkpoint.c). */
static PyObject *pl_checkpoint(PyObject *self, PyObject *unused) {
  if (enter(self) < 0) return NULL;
  char *text = NULL;
  stk_status st = stk_pipeline_checkpoint(pipe_of(self), &text);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  PyObject *r = PyUnicode_FromString(text);
  stk_free(text);
  return r;
}

/* restore(text): resume from a checkpoint at build. */
static PyObject *pl_restore(PyObject *self, PyObject *args) {
  const char *text;
  if (!PyArg_ParseTuple(args, "s:restore", &text)) return NULL;
  if (enter(self) < 0) return NULL;
  stk_status st = stk_pipeline_restore(pipe_of(self), text);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  Py_RETURN_NONE;
}

static PyObject *pl_to_text(PyObject *self, PyObject *unused) {
  if (enter(self) < 0) return NULL;
  char *text = NULL;
  stk_status st = stk_pipeline_to_text(pipe_of(self), &text);
  leave(self);
  if (st != STK_OK) return pystk_raise(st);
  PyObject *r = PyUnicode_FromString(text);
  stk_free(text);
  return r;
}

static PyObject *pl_from_text(PyObject *cls, PyObject *args) {
  const char *text;
  if (!PyArg_ParseTuple(args, "s:from_text", &text)) return NULL;
  stk_pipeline *p = NULL;
  stk_status st = stk_pipeline_from_text(text, &p);
  if (st != STK_OK) return pystk_raise(st);
  return wrap_handle((PyTypeObject *)cls, p);
}

static PyMethodDef pl_methods[] = {
    {"close", pl_close, METH_NOARGS, "stops the producer and frees the pipeline"},
    {"set", pl_set, METH_VARARGS, "set(key, value): stk_pipeline_set"},
    {"get", pl_get, METH_VARARGS, "get(key) -> int: stk_pipeline_get"},
    {"add_op", pl_add_op, METH_VARARGS,
     "add_op(schema, device, name, inputs, outputs, args, arg_inputs, guards=None)"},
    {"set_outputs", pl_set_outputs, METH_O, "set_outputs([edge, ...])"},
    {"set_host_function", pl_set_host_function, METH_VARARGS,
     "set_host_function(op_name, trampoline)"},
    {"build", pl_build, METH_NOARGS, "validates the graph and starts the producer"},
    {"run", pl_run, METH_NOARGS,
     "run() -> (tuple of TensorList, epoch, ends_epoch): the batch, its reader epoch (-1 "
     "without readers) and whether it is the epoch's last"},
    {"feed", pl_feed, METH_VARARGS, "feed(op_name, samples, layout=None)"},
    {"feed_end", pl_feed_end, METH_VARARGS, "feed_end(op_name)"},
    {"epoch_size", pl_epoch_size, METH_VARARGS, "epoch_size(reader_name) -> int"},
    {"reader_meta", pl_reader_meta, METH_VARARGS, "reader_meta(reader_name) -> dict"},
    {"stats", pl_stats, METH_NOARGS, "stats() -> dict"},
    {"op_times", pl_op_times, METH_NOARGS, "op_times() -> [(instance name, ns)]"},
    {"to_text", pl_to_text, METH_NOARGS, "to_text() -> str"},
    {"decoder_diagnostics", pl_decoder_diagnostics, METH_NOARGS, "decoder_diagnostics() -> dict"},
    {"checkpoint", pl_checkpoint, METH_NOARGS,
     "checkpoint() -> str: the state after the last batch"},
    {"restore", pl_restore, METH_VARARGS, "restore(text): resume from a checkpoint at build"},
    {"from_text", pl_from_text, METH_VARARGS | METH_CLASS, "from_text(text) -> Pipeline"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pl_getset[] = {{"closed", pl_closed, NULL, "True once close() ran", NULL},
                                  {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot pl_slots[] = {
    {Py_tp_new, pl_new},
    {Py_tp_dealloc, pl_dealloc},
    {Py_tp_methods, pl_methods},
    {Py_tp_getset, pl_getset},
    {Py_tp_doc, "Low-level handle of a C pipeline (use stoker.Pipeline)."},
    {0, NULL}};

static PyType_Spec pl_spec = {"stoker._stoker.Pipeline", sizeof(pystk_Pipeline), 0,
                              Py_TPFLAGS_DEFAULT, pl_slots};

int pystk_pipeline_init_type(PyObject *module) {
  PipelineType = PyType_FromSpec(&pl_spec);
  if (!PipelineType) return -1;
  Py_INCREF(PipelineType);
  if (PyModule_AddObject(module, "Pipeline", PipelineType) < 0) {
    Py_DECREF(PipelineType);
    return -1;
  }
#define PYSTK_SETTING(name) \
  if (PyModule_AddIntConstant(module, #name, STK_##name) < 0) return -1;
  PYSTK_SETTING(PIPE_BATCH_SIZE)
  PYSTK_SETTING(PIPE_NUM_THREADS)
  PYSTK_SETTING(PIPE_SEED)
  PYSTK_SETTING(PIPE_PREFETCH_QUEUE_DEPTH)
  PYSTK_SETTING(PIPE_DEVICE_ID)
  PYSTK_SETTING(PIPE_ON_ERROR)
  PYSTK_SETTING(PIPE_MAX_IMAGE_PIXELS)
  PYSTK_SETTING(PIPE_MAX_FILE_BYTES)
  PYSTK_SETTING(PIPE_EXEC_ASYNC)
  PYSTK_SETTING(PIPE_TIMEOUT_MS)
  PYSTK_SETTING(PIPE_MAX_BATCH_BYTES)
  PYSTK_SETTING(ON_ERROR_FAIL)
  PYSTK_SETTING(ON_ERROR_SKIP)
#undef PYSTK_SETTING
  return 0;
}
