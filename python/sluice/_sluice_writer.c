// _Writer: sluice.Writer's C side over sluice_writer (batches handed over one
// write at a time, written on the writer's own thread). Its options borrow
// their strings from the constructor's arguments, which it keeps.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "_sluice.h"

static void set_error(struct sluice_error* error, int code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(error->message, sizeof error->message, fmt, args);
  va_end(args);
  error->code = code;
}

typedef struct {
  PyObject_HEAD
  PyObject* args;    // kept: setup's strings point into them
  PyObject* kwargs;
  struct sp_write_setup setup;
  struct sluice_writer* writer;  // NULL before the first write (no schema given) and after close
  struct ArrowSchema schema;     // the writer's (release == NULL before it is known)
  int finished;                  // closed or aborted
  int failed;                    // aborted by a write() that failed after rows were taken
  int committed;                 // closed, and the output is there
  int busy;                      // a write() runs (without the GIL): no other call now
} WriterObject;

static int busy_error(WriterObject* self) {
  if (!self->busy) return 0;
  PyErr_SetString(PyExc_RuntimeError, "a write() of this writer is running in another thread");
  return -1;
}

/// A node's type for messages: a dictionary's with its value type
/// ("dictionary<int8, string>": its index type alone hid that the values
/// differ too, pandas' string against polars' large_string).
static void type_named(const struct ArrowSchema* s, char* out, size_t cap) {
  char index[64], values[64];
  sluice_type_name(s->format, index, sizeof index);
  if (s->dictionary == NULL) {
    snprintf(out, cap, "%s", index);
    return;
  }
  sluice_type_name(s->dictionary->format, values, sizeof values);
  snprintf(out, cap, "dictionary<%s, %s>", index, values);
}

/// Whether `got` has the types and names of `want` (nullability and metadata
/// aside); else the first difference in `why`, the column named by its path
/// (`where` is its parent's, "li." say). A batch is read by the writer's
/// schema: a large_string column read as string would be garbage. The names
/// of a list's element and of a map's entries, key and value are not part of
/// the type (as in pyarrow, whose ParquetWriter takes list<item> after
/// list<element>): `named` is 0 for those nodes, -1 for map entries (whose
/// children's names do not count either).
static int same_schema(const struct ArrowSchema* want, const struct ArrowSchema* got,
                       const char* where, int named, char* why, size_t cap) {
  const char* name = got->name != NULL ? got->name : "";
  const char* want_name = want->name != NULL ? want->name : "";
  if (strcmp(want->format, got->format) != 0) {
    char got_type[160], want_type[160];
    type_named(got, got_type, sizeof got_type);
    type_named(want, want_type, sizeof want_type);
    snprintf(why, cap, "%s%s: type %s, the writer's is %s", where, name, got_type, want_type);
    return 0;
  }
  if (named > 0 && strcmp(want_name, name) != 0) {
    snprintf(why, cap, "column '%s%s', the writer's is '%s%s'", where, name, where, want_name);
    return 0;
  }
  if (want->n_children != got->n_children && where[0] == '\0' && name[0] == '\0') {
    // The table itself: name the columns (a pandas index kept as columns
    // is one the first piece may not have had).
    char have[256] = "", had[256] = "";
    for (int side = 0; side < 2; ++side) {
      const struct ArrowSchema* s = side == 0 ? got : want;
      char* out = side == 0 ? have : had;
      size_t at = 0;
      for (int64_t i = 0; i < s->n_children && at + 1 < sizeof have; ++i) {
        int n = snprintf(out + at, sizeof have - at, "%s%s", i > 0 ? ", " : "",
                         s->children[i]->name != NULL ? s->children[i]->name : "");
        if (n < 0) break;
        at += (size_t)n;
      }
    }
    snprintf(why, cap, "%lld columns (%s), the writer's %lld (%s)%s", (long long)got->n_children,
             have, (long long)want->n_children, had,
             " (a pandas DataFrame's index other than a plain RangeIndex is written as "
             "columns: index=False leaves it out)");
    return 0;
  }
  if (want->n_children != got->n_children) {
    snprintf(why, cap, "%s%s: %lld fields, the writer's has %lld", where, name,
             (long long)got->n_children, (long long)want->n_children);
    return 0;
  }
  // The children's path: the writer's names (a list's child, whatever this
  // write calls it, is reported as the writer calls it).
  char sub[512];
  int len = snprintf(sub, sizeof sub, "%s%s", where, want_name);
  if (len > 0 && (size_t)len + 1 < sizeof sub && sub[len - 1] != '.') {
    sub[len] = '.';
    sub[len + 1] = '\0';
  }
  char values[512];
  snprintf(values, sizeof values, "%s%s's dictionary", where, name);
  if ((want->dictionary == NULL) != (got->dictionary == NULL) ||
      (want->dictionary != NULL &&
       !same_schema(want->dictionary, got->dictionary, values, 0, why, cap))) {
    if ((want->dictionary == NULL) != (got->dictionary == NULL)) {
      snprintf(why, cap, "%s%s: dictionary-encoded in one and not the other", where, name);
    }
    return 0;
  }
  const char* f = want->format;
  int list = f[0] == '+' && (strcmp(f + 1, "l") == 0 || strcmp(f + 1, "L") == 0 ||
                             strncmp(f + 1, "w:", 2) == 0 || strcmp(f + 1, "vl") == 0 ||
                             strcmp(f + 1, "vL") == 0);
  int kids = named < 0 ? 0 : strcmp(f, "+m") == 0 ? -1 : !list;
  for (int64_t i = 0; i < want->n_children; ++i) {
    if (!same_schema(want->children[i], got->children[i], sub, kids, why, cap)) return 0;
  }
  return 1;
}

static PyObject* closed_error(WriterObject* self) {
  PyErr_SetString(PyExc_ValueError,
                  self->failed      ? "the writer was aborted: an earlier write() failed "
                                      "after some of its rows were taken (nothing was written)"
                  : self->committed ? "the writer is closed"
                                    : "the writer was aborted, or its close failed: nothing "
                                      "was written");
  return NULL;
}

/// Opens the writer with `schema` (GIL held; released while opening).
static int writer_open(WriterObject* self, const struct ArrowSchema* schema) {
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (self->writer != NULL) {
    PyErr_SetString(PyExc_RuntimeError, "the writer is open already");
    return -1;
  }
  if (sp_schema_copy(schema, &self->schema) != 0) {
    PyErr_NoMemory();
    return -1;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = sluice_writer_open(self->setup.location, schema, &self->setup.options, &self->writer,
                          &error);
  Py_END_ALLOW_THREADS
  if (rc != 0) {
    self->schema.release(&self->schema);
    if (error.code == 0) error.code = rc;
    sp_raise_error(&error);
    return -1;
  }
  return 0;
}

static int writer_init(WriterObject* self, PyObject* args, PyObject* kwargs) {
  if (self->args != NULL) {
    PyErr_SetString(PyExc_TypeError, "_Writer is initialized once");
    return -1;
  }
  if (sp_write_setup_parse(args, kwargs, &self->setup) != 0) return -1;
  Py_INCREF(args);
  self->args = args;
  Py_XINCREF(kwargs);
  self->kwargs = kwargs;
  // The first argument: an 'arrow_schema' capsule, or None to take the
  // schema of the first write.
  if (self->setup.stream == Py_None) return 0;
  struct ArrowSchema* schema = PyCapsule_GetPointer(self->setup.stream, "arrow_schema");
  if (schema == NULL) return -1;
  return writer_open(self, schema);
}

static PyObject* write_stream(WriterObject* self, struct ArrowArrayStream* stream,
                              struct ArrowSchema* input_schema);

static PyObject* writer_write(WriterObject* self, PyObject* capsule) {
  if (self->finished) return closed_error(self);
  if (busy_error(self) != 0) return NULL;
  struct ArrowArrayStream* stream = PyCapsule_GetPointer(capsule, "arrow_array_stream");
  if (stream == NULL) return NULL;
  if (stream->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the arrow_array_stream capsule was already consumed");
    return NULL;
  }
  struct ArrowSchema schema;
  if (sp_check_struct_stream(stream, &schema) != 0) return NULL;  // (the writer stays as it was)
  // Busy from before the GIL is first released to the end: another
  // thread's close, abort or write is refused meanwhile.
  self->busy = 1;
  PyObject* result = write_stream(self, stream, &schema);
  self->busy = 0;
  return result;
}

/// write() with the writer busy: hands over every batch of `stream`
/// (`input_schema`, its schema, is taken).
static PyObject* write_stream(WriterObject* self, struct ArrowArrayStream* stream,
                              struct ArrowSchema* input_schema) {
  struct ArrowArrayStream input = *stream;
  stream->release = NULL;  // ours now
  // Writers take offsets + data: views (polars' strings) are rewritten.
  struct ArrowArrayStream plain;
  int wrapped = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = sp_plain_stream(&input, input_schema, &plain, &wrapped);
  Py_END_ALLOW_THREADS
  if (rc != 0) {
    input.release(&input);
    return PyErr_NoMemory();
  }
  struct ArrowArrayStream* in = wrapped ? &plain : &input;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  Py_BEGIN_ALLOW_THREADS
  rc = in->get_schema(in, &schema);
  Py_END_ALLOW_THREADS
  if (rc != 0) {
    const char* why = in->get_last_error != NULL ? in->get_last_error(in) : NULL;
    set_error(&error, rc, "reading the input's schema: %s", why != NULL ? why : strerror(rc));
    in->release(in);
    return sp_raise_error(&error);
  }
  if (self->writer == NULL) {
    rc = writer_open(self, &schema);
  } else if (!same_schema(&self->schema, &schema, "", 1, error.message, sizeof error.message)) {
    char why[sizeof error.message];
    memcpy(why, error.message, sizeof why);
    set_error(&error, EINVAL, "%s: this write's columns differ from the writer's: %.900s",
              self->setup.location, why);
    sp_raise_error(&error);
    rc = -1;
  }
  schema.release(&schema);
  if (rc != 0) {
    in->release(in);
    return NULL;
  }
  int64_t handed = 0;  // batches the writer took
  int writer_failed = 0;
  Py_BEGIN_ALLOW_THREADS
  for (;;) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    rc = in->get_next(in, &batch);
    if (rc != 0) {
      const char* why = in->get_last_error != NULL ? in->get_last_error(in) : NULL;
      set_error(&error, rc, "reading the input: %s", why != NULL ? why : strerror(rc));
      break;
    }
    if (batch.release == NULL) break;
    rc = sluice_writer_write(self->writer, &batch, &error);  // takes the batch
    if (rc != 0) {
      writer_failed = 1;
      break;
    }
    handed++;
  }
  in->release(in);
  Py_END_ALLOW_THREADS
  if (rc != 0 && (handed > 0 || writer_failed)) {
    // Part of this write was taken, or the output failed: nothing of it
    // may be committed by a later close. The writer is aborted.
    struct sluice_writer* writer = self->writer;
    self->writer = NULL;
    self->finished = 1;
    self->failed = 1;
    Py_BEGIN_ALLOW_THREADS
    sluice_writer_abort(writer);
    Py_END_ALLOW_THREADS
  }
  if (rc != 0) return sp_raise_write_error(&error, rc);
  Py_RETURN_NONE;
}

static PyObject* writer_close(WriterObject* self, PyObject* Py_UNUSED(ignored)) {
  // Closing again after a commit does nothing, as a file's close; after an
  // abort or a failed write or close it raises, so that it is never taken
  // for a commit.
  if (self->finished && self->committed) Py_RETURN_NONE;
  if (self->finished) return closed_error(self);
  if (busy_error(self) != 0) return NULL;
  self->finished = 1;
  if (self->writer == NULL) {
    PyErr_SetString(PyExc_ValueError,
                    "nothing was written and no schema was given: the output's columns are "
                    "not known (pass schema= to write an empty table)");
    return NULL;
  }
  struct sluice_writer* writer = self->writer;
  self->writer = NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = sluice_writer_close(writer, &error);
  Py_END_ALLOW_THREADS
  if (rc != 0) return sp_raise_write_error(&error, rc);
  self->committed = 1;
  Py_RETURN_NONE;
}

static PyObject* writer_abort(WriterObject* self, PyObject* Py_UNUSED(ignored)) {
  if (busy_error(self) != 0) return NULL;
  self->finished = 1;
  struct sluice_writer* writer = self->writer;
  self->writer = NULL;
  Py_BEGIN_ALLOW_THREADS
  sluice_writer_abort(writer);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static void writer_dealloc(WriterObject* self) {
  // Dropped without close: nothing appears (as after abort).
  struct sluice_writer* writer = self->writer;
  self->writer = NULL;
  if (writer != NULL) {
    Py_BEGIN_ALLOW_THREADS
    sluice_writer_abort(writer);
    Py_END_ALLOW_THREADS
  }
  if (self->schema.release != NULL) self->schema.release(&self->schema);
  Py_XDECREF(self->args);
  Py_XDECREF(self->kwargs);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* writer_get_closed(WriterObject* self, void* Py_UNUSED(closure)) {
  return PyBool_FromLong(self->finished);
}

static PyMethodDef writer_methods[] = {
    {"write", (PyCFunction)writer_write, METH_O,
     "write(stream_capsule): hands every batch of the stream to the writer."},
    {"close", (PyCFunction)writer_close, METH_NOARGS,
     "close(): writes the rest and commits; raises the write's error."},
    {"abort", (PyCFunction)writer_abort, METH_NOARGS,
     "abort(): stops the write; nothing appears at the location."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef writer_getset[] = {
    {"closed", (getter)writer_get_closed, NULL, "Closed or aborted.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SpWriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._Writer",
    .tp_basicsize = sizeof(WriterObject),
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Writer(schema_capsule_or_None, location, **write options) (see sluice.Writer).",
    .tp_methods = writer_methods,
    .tp_getset = writer_getset,
    .tp_init = (initproc)writer_init,
    .tp_new = PyType_GenericNew,
};
