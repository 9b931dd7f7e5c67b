/* kdajit._runner: Plan.run's common case in C (CPython's stable ABI, 3.10+).
 *
 * A Runner is made by kdajit.Plan for a plan whose signature holds torch
 * tensors. Called with the arguments of Plan.run, it checks each tensor of
 * the signature (dtype identity, shape, device, strides or contiguity, the
 * same tests as Plan.run in Python), writes the data pointers and torch's
 * current stream into the plan's kda_prefill_args and calls kda_plan_run
 * through the function pointer the package's ctypes binding resolved, so
 * exactly one libkdajit.so is in use. The GIL stays held from the first
 * pointer written to the end of kda_plan_run: runs of one plan from several
 * threads cannot interleave their arguments.
 *
 * Anything else (a tensor that differs from the signature, a tensor the
 * signature lacks, an explicit stream or workspace, an unknown keyword, a
 * failed attribute lookup) goes to the fallback, Plan.run in Python, which
 * runs the call or raises the error naming the argument. Nothing here
 * changes results: both paths pass kda_plan_run the same arguments.
 */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

typedef int (*PlanRunFn)(void* plan, void* args, void* workspace, int64_t workspace_bytes);

enum { MAX_POSITIONS = 15, POSITIONAL = 7 };

typedef struct {
  int position;           /* among Plan.run's tensor parameters */
  Py_ssize_t pointer_at;  /* byte offset of its kda_tensor.data in the args */
  PyObject* dtype;        /* torch dtype, compared by identity */
  PyObject* shape;        /* tuple */
  PyObject* strides;      /* tuple, or NULL: must be contiguous */
  PyObject* device;       /* int */
} Slot;

typedef struct {
  PyObject_HEAD
  PlanRunFn plan_run;
  void* plan;
  char* args;
  Py_ssize_t stream_at;
  void* workspace;
  int64_t workspace_bytes;
  int slot_count;
  Slot slots[MAX_POSITIONS];
  unsigned absent; /* bit p: the signature has no tensor at position p */
  /* the result tuple: element e is the first given tensor among positions
   * results[e][0 .. result_sizes[e]), None when none is given */
  int result_count;
  int result_sizes[3];
  int results[3][MAX_POSITIONS];
  PyObject* names;  /* tuple of the tensor parameters' names, in position order */
  PyObject* device; /* the plan's device, an int */
  PyObject* current_stream; /* callable(device) -> int CUstream */
  PyObject* data_ptr, *get_device, *stride, *is_contiguous; /* torch.Tensor's, unbound */
  PyObject* raise_status;   /* callable(status): raises kdajit's error */
  PyObject* fallback;       /* callable(*args, **kwargs): Plan.run in Python */
  PyObject* keepalive;      /* what owns plan, args and workspace */
} Runner;

static PyObject* s_dtype;
static PyObject* s_shape;
static PyObject* s_stream;
static PyObject* s_workspace;

static int runner_traverse(Runner* self, visitproc visit, void* arg) {
  for (int i = 0; i < self->slot_count; ++i) {
    Py_VISIT(self->slots[i].dtype);
    Py_VISIT(self->slots[i].shape);
    Py_VISIT(self->slots[i].strides);
    Py_VISIT(self->slots[i].device);
  }
  Py_VISIT(self->names);
  Py_VISIT(self->device);
  Py_VISIT(self->current_stream);
  Py_VISIT(self->data_ptr);
  Py_VISIT(self->get_device);
  Py_VISIT(self->stride);
  Py_VISIT(self->is_contiguous);
  Py_VISIT(self->raise_status);
  Py_VISIT(self->fallback);
  Py_VISIT(self->keepalive);
  return 0;
}

static int runner_clear(Runner* self) {
  for (int i = 0; i < self->slot_count; ++i) {
    Py_CLEAR(self->slots[i].dtype);
    Py_CLEAR(self->slots[i].shape);
    Py_CLEAR(self->slots[i].strides);
    Py_CLEAR(self->slots[i].device);
  }
  self->slot_count = 0;
  self->plan = NULL; /* a cleared runner only falls back */
  Py_CLEAR(self->names);
  Py_CLEAR(self->device);
  Py_CLEAR(self->current_stream);
  Py_CLEAR(self->data_ptr);
  Py_CLEAR(self->get_device);
  Py_CLEAR(self->stride);
  Py_CLEAR(self->is_contiguous);
  Py_CLEAR(self->raise_status);
  Py_CLEAR(self->fallback);
  Py_CLEAR(self->keepalive);
  return 0;
}

static void runner_dealloc(Runner* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  runner_clear(self);
  freefunc release = (freefunc)PyType_GetSlot(type, Py_tp_free);
  release(self);
  Py_DECREF(type);
}

static void* address_of(PyObject* value, const char* what) {
  void* address = PyLong_AsVoidPtr(value);
  if (address == NULL && !PyErr_Occurred())
    PyErr_Format(PyExc_ValueError, "Runner: %s is a null address", what);
  return address;
}

/* Runner(plan_run, plan, args, stream_at, workspace, workspace_bytes, slots,
 *        absent, results, names, device, current_stream, tensor_methods,
 *        raise_status, fallback, keepalive)
 * slots: tuple of (position, pointer_at, dtype, shape, strides or None, device)
 * results: tuple (at most 3) of tuples of positions
 * tensor_methods: (data_ptr, get_device, stride, is_contiguous) */
static int runner_init(Runner* self, PyObject* args, PyObject* kwargs) {
  PyObject *plan_run, *plan, *base, *workspace, *slots, *results, *names, *device, *current_stream, *methods, *raise_status,
      *fallback, *keepalive;
  Py_ssize_t stream_at;
  long long workspace_bytes;
  unsigned int absent;
  if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "Runner takes no keyword arguments");
    return -1;
  }
  if (!PyArg_ParseTuple(args, "OOOnOLO!IO!O!OOO!OOO", &plan_run, &plan, &base, &stream_at, &workspace,
                        &workspace_bytes, &PyTuple_Type, &slots, &absent, &PyTuple_Type, &results, &PyTuple_Type, &names,
                        &device, &current_stream, &PyTuple_Type, &methods, &raise_status, &fallback, &keepalive))
    return -1;
  runner_clear(self);
  self->plan_run = (PlanRunFn)address_of(plan_run, "kda_plan_run");
  self->plan = address_of(plan, "the plan");
  self->args = (char*)address_of(base, "the arguments");
  if (PyErr_Occurred()) return -1;
  self->workspace = workspace == Py_None ? NULL : PyLong_AsVoidPtr(workspace);
  if (PyErr_Occurred()) return -1;
  self->stream_at = stream_at;
  self->workspace_bytes = workspace_bytes;
  self->absent = absent;
  if (PyTuple_Size(results) > 3) {
    PyErr_SetString(PyExc_ValueError, "Runner: at most 3 results");
    return -1;
  }
  self->result_count = (int)PyTuple_Size(results);
  for (int e = 0; e < self->result_count; ++e) {
    PyObject* positions = PyTuple_GetItem(results, e);
    Py_ssize_t size = PyTuple_Check(positions) ? PyTuple_Size(positions) : -1;
    if (size < 0 || size > MAX_POSITIONS) {
      PyErr_SetString(PyExc_ValueError, "Runner: a result is a tuple of at most 15 positions");
      return -1;
    }
    self->result_sizes[e] = (int)size;
    for (Py_ssize_t j = 0; j < size; ++j) {
      long position = PyLong_AsLong(PyTuple_GetItem(positions, j));
      if (position < 0 || position >= MAX_POSITIONS) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Runner: result position out of range");
        return -1;
      }
      self->results[e][j] = (int)position;
    }
  }
  if (PyTuple_Size(names) != MAX_POSITIONS || PyTuple_Size(methods) != 4 || PyTuple_Size(slots) > MAX_POSITIONS) {
    PyErr_SetString(PyExc_ValueError, "Runner: 15 names, 4 tensor methods and at most 15 slots");
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_Size(slots); ++i) {
    PyObject* item = PyTuple_GetItem(slots, i);
    int position;
    Py_ssize_t pointer_at;
    PyObject *dtype, *shape, *strides, *slot_device;
    if (!PyArg_ParseTuple(item, "inOO!OO", &position, &pointer_at, &dtype, &PyTuple_Type, &shape, &strides,
                          &slot_device))
      return -1;
    if (position < 0 || position >= MAX_POSITIONS) {
      PyErr_SetString(PyExc_ValueError, "Runner: slot position out of range");
      return -1;
    }
    Slot* slot = &self->slots[self->slot_count++];
    slot->position = position;
    slot->pointer_at = pointer_at;
    Py_INCREF(dtype);
    slot->dtype = dtype;
    Py_INCREF(shape);
    slot->shape = shape;
    slot->strides = strides == Py_None ? NULL : strides;
    Py_XINCREF(slot->strides);
    Py_INCREF(slot_device);
    slot->device = slot_device;
  }
  PyObject** held[] = {&self->names, &self->device, &self->current_stream, &self->raise_status, &self->fallback,
                       &self->keepalive};
  PyObject* given[] = {names, device, current_stream, raise_status, fallback, keepalive};
  for (size_t i = 0; i < sizeof held / sizeof held[0]; ++i) {
    Py_INCREF(given[i]);
    *held[i] = given[i];
  }
  PyObject** method_slots[] = {&self->data_ptr, &self->get_device, &self->stride, &self->is_contiguous};
  for (Py_ssize_t i = 0; i < 4; ++i) {
    PyObject* method = PyTuple_GetItem(methods, i);
    Py_INCREF(method);
    *method_slots[i] = method;
  }
  return 0;
}

/* Calls the Python fallback with the call's own arguments. */
static PyObject* fall_back(Runner* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (self->fallback == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "kdajit.Plan.run: the plan is gone");
    return NULL;
  }
  PyObject* positional = PyTuple_New(nargs);
  if (positional == NULL) return NULL;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SetItem(positional, i, args[i]);
  }
  PyObject* keywords = NULL;
  Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
  if (nkw > 0) {
    keywords = PyDict_New();
    for (Py_ssize_t i = 0; keywords != NULL && i < nkw; ++i)
      if (PyDict_SetItem(keywords, PyTuple_GetItem(kwnames, i), args[nargs + i]) != 0) Py_CLEAR(keywords);
    if (keywords == NULL) {
      Py_DECREF(positional);
      return NULL;
    }
  }
  PyObject* result = PyObject_Call(self->fallback, positional, keywords);
  Py_DECREF(positional);
  Py_XDECREF(keywords);
  return result;
}

/* Position of a keyword among the tensor parameters, -2 for stream or
 * workspace, -1 for anything else. */
static int keyword_position(Runner* self, PyObject* name) {
  for (int p = 0; p < MAX_POSITIONS; ++p)
    if (PyTuple_GetItem(self->names, p) == name) return p; /* keyword names are interned */
  if (name == s_stream || name == s_workspace) return -2;
  for (int p = 0; p < MAX_POSITIONS; ++p) {
    int cmp = PyUnicode_Compare(PyTuple_GetItem(self->names, p), name);
    if (cmp == 0) return p;
  }
  if (PyUnicode_Compare(name, s_stream) == 0 || PyUnicode_Compare(name, s_workspace) == 0) return -2;
  PyErr_Clear();
  return -1;
}

/* 1: x matches the slot; 0: it does not (or a lookup failed: the fallback says why). */
static int matches(Runner* self, const Slot* slot, PyObject* x) {
  PyObject* value = PyObject_GetAttr(x, s_dtype);
  if (value == NULL) goto failed;
  int same = value == slot->dtype;
  Py_DECREF(value);
  if (!same) return 0;
  value = PyObject_GetAttr(x, s_shape);
  if (value == NULL) goto failed;
  same = PyObject_RichCompareBool(value, slot->shape, Py_EQ);
  Py_DECREF(value);
  if (same != 1) goto mismatch;
  value = PyObject_CallFunctionObjArgs(self->get_device, x, NULL);
  if (value == NULL) goto failed;
  same = PyObject_RichCompareBool(value, slot->device, Py_EQ);
  Py_DECREF(value);
  if (same != 1) goto mismatch;
  if (slot->strides != NULL) {
    value = PyObject_CallFunctionObjArgs(self->stride, x, NULL);
    if (value == NULL) goto failed;
    same = PyObject_RichCompareBool(value, slot->strides, Py_EQ);
  } else {
    value = PyObject_CallFunctionObjArgs(self->is_contiguous, x, NULL);
    if (value == NULL) goto failed;
    same = value == Py_True;
  }
  Py_DECREF(value);
  if (same != 1) goto mismatch;
  return 1;
mismatch:
failed:
  PyErr_Clear();
  return 0;
}

static PyObject* runner_run(PyObject* object, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  Runner* self = (Runner*)object;
  if (self->plan == NULL || nargs > POSITIONAL) return fall_back(self, args, nargs, kwnames);
  PyObject* given[MAX_POSITIONS] = {NULL};
  for (Py_ssize_t i = 0; i < nargs; ++i) given[i] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nkw; ++i) {
    PyObject* value = args[nargs + i];
    int p = keyword_position(self, PyTuple_GetItem(kwnames, i));
    if (p == -1 || (p == -2 && value != Py_None) || (p >= 0 && given[p] != NULL))
      return fall_back(self, args, nargs, kwnames);
    if (p >= 0) given[p] = value;
  }
  for (int p = 0; p < MAX_POSITIONS; ++p) {
    if (given[p] == Py_None) given[p] = NULL;
    if ((self->absent >> p & 1u) && given[p] != NULL) return fall_back(self, args, nargs, kwnames);
  }
  for (int i = 0; i < self->slot_count; ++i) {
    const Slot* slot = &self->slots[i];
    if (given[slot->position] == NULL || !matches(self, slot, given[slot->position]))
      return fall_back(self, args, nargs, kwnames);
  }
  /* every check passed: nothing below returns to the fallback. The pointers
   * are collected first (torch may run Python code for a subclass) and
   * written with no Python call between them and kda_plan_run. */
  void* data[MAX_POSITIONS];
  for (int i = 0; i < self->slot_count; ++i) {
    PyObject* pointer = PyObject_CallFunctionObjArgs(self->data_ptr, given[self->slots[i].position], NULL);
    if (pointer == NULL) return NULL;
    data[i] = PyLong_AsVoidPtr(pointer);
    Py_DECREF(pointer);
    if (PyErr_Occurred()) return NULL;
  }
  PyObject* stream = PyObject_CallFunctionObjArgs(self->current_stream, self->device, NULL);
  if (stream == NULL) return NULL;
  void* handle = stream == Py_None ? NULL : PyLong_AsVoidPtr(stream);
  Py_DECREF(stream);
  if (PyErr_Occurred()) return NULL;
  for (int i = 0; i < self->slot_count; ++i) memcpy(self->args + self->slots[i].pointer_at, &data[i], sizeof data[i]);
  memcpy(self->args + self->stream_at, &handle, sizeof handle);
  int status = self->plan_run(self->plan, self->args, self->workspace, self->workspace_bytes);
  if (status != 0) {
    PyObject* raised = PyObject_CallFunction(self->raise_status, "i", status);
    Py_XDECREF(raised);
    if (raised != NULL)
      PyErr_Format(PyExc_RuntimeError, "kdajit: kda_plan_run returned %d and raised nothing", status);
    return NULL;
  }
  PyObject* result = PyTuple_New(self->result_count);
  if (result == NULL) return NULL;
  for (int e = 0; e < self->result_count; ++e) {
    PyObject* value = Py_None;
    for (int j = 0; j < self->result_sizes[e] && value == Py_None; ++j)
      if (given[self->results[e][j]] != NULL) value = given[self->results[e][j]];
    Py_INCREF(value);
    PyTuple_SetItem(result, e, value);
  }
  return result;
}

static PyMethodDef runner_methods[] = {
    {"run", (PyCFunction)(void (*)(void))runner_run, METH_FASTCALL | METH_KEYWORDS,
     "run(q, k, v, g, beta, A_log, dt_bias, *, out, ...): Plan.run's arguments and result."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot runner_type_slots[] = {
    {Py_tp_doc, (void*)"Plan.run's checks and kda_plan_run call for torch tensors (kdajit.Plan makes these)."},
    {Py_tp_init, (void*)runner_init},
    {Py_tp_new, (void*)PyType_GenericNew},
    {Py_tp_dealloc, (void*)runner_dealloc},
    {Py_tp_traverse, (void*)runner_traverse},
    {Py_tp_clear, (void*)runner_clear},
    {Py_tp_methods, runner_methods},
    {0, NULL},
};

static PyType_Spec runner_type_spec = {
    "kdajit._runner.Runner",
    sizeof(Runner),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    runner_type_slots,
};

static int module_exec(PyObject* module) {
  s_dtype = PyUnicode_InternFromString("dtype");
  s_shape = PyUnicode_InternFromString("shape");
  s_stream = PyUnicode_InternFromString("stream");
  s_workspace = PyUnicode_InternFromString("workspace");
  if (!s_dtype || !s_shape || !s_stream || !s_workspace) return -1;
  PyObject* type = PyType_FromSpec(&runner_type_spec);
  if (type == NULL) return -1;
  if (PyModule_AddObject(module, "Runner", type) != 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, (void*)module_exec},
    {0, NULL},
};

static struct PyModuleDef runner_module = {
    PyModuleDef_HEAD_INIT, "kdajit._runner", "Plan.run's common case in C (stable ABI).", 0, NULL, module_slots,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__runner(void) { return PyModuleDef_Init(&runner_module); }
