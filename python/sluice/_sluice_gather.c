// The _Gather type: a table's batches copied, as they arrive and in any
// order, into one preallocated column per field at each batch's row offset,
// so that a whole read ends as a single batch (one chunk per column) that
// pandas and numpy wrap without another copy, while every decoded batch is
// released as soon as it is copied (peak: the final columns + what is in
// flight, not twice the data).
//
// Only flat fixed-width columns (numbers, bools, temporals, decimals,
// fixed-size binary) are gathered; sluice.read keeps the batches of other
// tables as they are. Columns whose rows are known ahead take their memory
// from the module's buffer cache (sp_allocator), so that a table read after
// another was dropped reuses its pages instead of faulting in fresh ones;
// other column memory is mmap'd directly so that pages are touched only
// where rows land, grow without copies (mremap) and go back to the system
// as soon as the table is freed. No MADV_HUGEPAGE: where the
// kernel's THP defrag setting is "madvise", it makes every fault of the
// region compact memory synchronously (seconds of system time for a GB).
// No Python objects in the copy: it runs without the GIL.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE 1  // mremap: growing a column moves page tables, not bytes
#endif
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "_sluice.h"

/* ---- page-backed growable buffers --------------------------------------- */

struct big_buffer {
  uint8_t* data;
  size_t size;  // bytes usable from data (0: nothing mapped)
  /// Non-NULL: the memory is a block of this allocator (skew + size bytes
  /// from data - skew), not a mapping of our own; growing moves it to one.
  const struct sluice_allocator* alloc;
  /// Bytes of the mapping before `data` (a multiple of 64, set before the
  /// first reserve): columns start at different offsets within a page.
  /// Measured: with page-aligned columns, a placed Avro read (which writes
  /// all of a row's columns at once) spent 6x the user time in its decode
  /// loop; staggered, it runs as fast as into its own batches. (Likely
  /// cache-set or 4K aliasing among the row's stores; a one-thread
  /// micro-benchmark did not show it.)
  size_t skew;
};

static size_t page_round(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (n == 0) n = 1;
  return (n + page - 1) / page * page;
}

static void big_free(struct big_buffer* b);

/// Makes room for `bytes` (contents kept; new bytes are undefined). The
/// first room comes from `alloc` when given (recycled memory), growth from
/// mappings of our own. 0 or ENOMEM.
static int big_reserve(struct big_buffer* b, size_t bytes, const struct sluice_allocator* alloc) {
  if (bytes <= b->size) return 0;
  if (bytes > SIZE_MAX - b->skew - 4096) return ENOMEM;
  size_t total = page_round(b->skew + bytes);
  void* p;
  if (b->size == 0 && alloc != NULL) {
    p = alloc->allocate(alloc->ctx, total, 64);
    if (p == NULL) return ENOMEM;
    b->alloc = alloc;
    b->data = (uint8_t*)p + b->skew;
    b->size = total - b->skew;
    return 0;
  }
  if (b->size == 0) {
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } else if (b->alloc != NULL) {  // an allocator's block cannot be remapped: copy it
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      memcpy((uint8_t*)p + b->skew, b->data, b->size);
      big_free(b);
    }
  } else {
#ifdef MREMAP_MAYMOVE
    p = mremap(b->data - b->skew, b->skew + b->size, total, MREMAP_MAYMOVE);
#else
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      memcpy((uint8_t*)p + b->skew, b->data, b->size);
      munmap(b->data - b->skew, b->skew + b->size);
    }
#endif
  }
  if (p == MAP_FAILED) return ENOMEM;
  b->data = (uint8_t*)p + b->skew;
  b->size = total - b->skew;
  return 0;
}

static void big_free(struct big_buffer* b) {
  if (b->size != 0 && b->alloc != NULL) {
    b->alloc->deallocate(b->alloc->ctx, b->data - b->skew, b->skew + b->size);
  } else if (b->size != 0) {
    munmap(b->data - b->skew, b->skew + b->size);
  }
  b->data = NULL;
  b->size = 0;
  b->alloc = NULL;
}

/// Makes bytes [from, from + n) of `b` resident in one call instead of a page
/// fault per page (a third of the copy's time otherwise; CSV batches of W1
/// are 0.5 MB a column, so the floor is the library's sl_prefault one, not
/// 1 MiB). Only where rows land: planned row counts come from the input and
/// are not trusted with memory. Best effort (Linux 5.14+); the copy faults
/// the pages in anyway.
static void big_populate(struct big_buffer* b, size_t from, size_t n) {
#if defined(__linux__)
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  if (n < ((size_t)32 << 10) || from + n > b->size) return;
  uintptr_t start = (uintptr_t)(b->data + from) / page * page;
  uintptr_t end = (uintptr_t)(b->data + from + n);
  // Recycled memory is mapped already: populating it would walk every page
  // for nothing. Resident first and last pages are taken to mean so.
  unsigned char first = 0, last = 0;
  if (b->alloc != NULL && mincore((void*)start, (size_t)page, &first) == 0 && (first & 1) &&
      mincore((void*)((end - 1) / page * page), (size_t)page, &last) == 0 && (last & 1)) {
    return;
  }
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels say EINVAL
#endif
  (void)madvise((void*)start, end - start, MADV_POPULATE_WRITE);
#else
  (void)b;
  (void)from;
  (void)n;
#endif
}

/// Gives back the pages past `bytes` (the table came out shorter than planned);
/// an allocator's block stays whole until freed.
static void big_shrink(struct big_buffer* b, size_t bytes) {
  if (b->alloc != NULL) return;
  size_t keep = page_round(b->skew + bytes);  // of the mapping
  if (b->skew + b->size > keep) {
    munmap(b->data - b->skew + keep, b->skew + b->size - keep);
    b->size = keep - b->skew;
  }
}

/* ---- bits --------------------------------------------------------------- */

static int get_bit(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

static void set_bit(uint8_t* bits, int64_t i, int v) {
  if (v) {
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
  } else {
    bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
  }
}

/// Copies bits [src_at, src_at + n) of `src` to [dst_at, ...) of `dst`.
static void copy_bits(uint8_t* dst, int64_t dst_at, const uint8_t* src, int64_t src_at,
                      int64_t n) {
  if ((dst_at & 7) == (src_at & 7)) {
    // Same phase: bit by bit up to a byte boundary, then whole bytes.
    while (n > 0 && (dst_at & 7) != 0) {
      set_bit(dst, dst_at++, get_bit(src, src_at++));
      --n;
    }
    memcpy(dst + (dst_at >> 3), src + (src_at >> 3), (size_t)(n >> 3));
    int64_t done = n & ~(int64_t)7;
    dst_at += done;
    src_at += done;
    n -= done;
  }
  for (int64_t i = 0; i < n; ++i) set_bit(dst, dst_at + i, get_bit(src, src_at + i));
}

static int64_t count_zero_bits(const uint8_t* bits, int64_t n) {
  int64_t ones = 0;
  int64_t whole = n >> 3;
  for (int64_t i = 0; i < whole; ++i) ones += __builtin_popcount(bits[i]);
  for (int64_t i = whole << 3; i < n; ++i) ones += get_bit(bits, i);
  return n - ones;
}

/* ---- column types ------------------------------------------------------- */

/// Bytes per value of a flat fixed-width Arrow format; 0 for bool (bits);
/// -1 when the format is not gathered.
static int64_t fixed_width(const struct ArrowSchema* s) {
  const char* f = s->format;
  if (s->n_children != 0 || s->dictionary != NULL || f == NULL) return -1;
  if (f[0] != '\0' && f[1] == '\0') {
    switch (f[0]) {
      case 'b': return 0;
      case 'c': case 'C': return 1;
      case 's': case 'S': case 'e': return 2;
      case 'i': case 'I': case 'f': return 4;
      case 'l': case 'L': case 'g': return 8;
      default: return -1;
    }
  }
  if (strcmp(f, "tdD") == 0 || strcmp(f, "tts") == 0 || strcmp(f, "ttm") == 0 ||
      strcmp(f, "tiM") == 0) {
    return 4;
  }
  if (strcmp(f, "tdm") == 0 || strcmp(f, "ttu") == 0 || strcmp(f, "ttn") == 0 ||
      strcmp(f, "tiD") == 0 || strncmp(f, "ts", 2) == 0 || strncmp(f, "tD", 2) == 0) {
    return 8;
  }
  if (strcmp(f, "tin") == 0) return 16;
  if (strncmp(f, "d:", 2) == 0) {
    // d:precision,scale[,bitwidth]; 128 bits by default.
    const char* first = strchr(f, ',');
    const char* second = first != NULL ? strchr(first + 1, ',') : NULL;
    long bits = second != NULL ? strtol(second + 1, NULL, 10) : 128;
    return bits == 32 || bits == 64 || bits == 128 || bits == 256 ? bits / 8 : -1;
  }
  if (strncmp(f, "w:", 2) == 0) {
    long n = strtol(f + 2, NULL, 10);
    return n > 0 && n < INT_MAX ? n : -1;
  }
  return -1;
}

struct gather_column {
  int64_t width;             // bytes per value; 0 = bits (bool)
  struct big_buffer values;  // owned by the hold once there is one
  struct big_buffer validity;  // mapped once a null arrives; all ones before
};

/// The columns' value memory once a scan decodes into it (a placed scan):
/// the scan's workers write there and its arrays point there, and a
/// cancelled scan stops on its own thread, possibly after the _Gather (or
/// its finished batch) is gone. So the memory is unmapped when the last of
/// them lets go, and never moves meanwhile.
struct gather_hold {
  atomic_int refs;
  int64_t n;
  struct big_buffer* values;  // n
};

static void hold_release(void* ctx) {
  struct gather_hold* h = ctx;
  if (h == NULL || atomic_fetch_sub(&h->refs, 1) != 1) return;
  for (int64_t i = 0; i < h->n; ++i) big_free(&h->values[i]);
  PyMem_RawFree(h->values);
  PyMem_RawFree(h);
}

typedef struct {
  PyObject_HEAD
  SchemaObject* schema;
  int64_t n_columns;
  struct gather_column* columns;
  int64_t capacity;  // rows every buffer has room for
  int busy;          // a copy runs without the GIL
  struct gather_hold* hold;  // set by a placed scan (sp_gather_placement)
  int64_t copied_bytes;      // value bytes add() copied (not already in place)
  /// The first room of each buffer: the module's cache when the rows are
  /// known ahead (a capacity at init), else NULL (mappings that grow).
  const struct sluice_allocator* alloc;
} GatherObject;

static size_t column_bytes(const struct gather_column* c, int64_t rows) {
  return c->width == 0 ? (size_t)((rows + 7) / 8) : (size_t)rows * (size_t)c->width;
}

static int column_reserve(struct gather_column* c, int64_t rows,
                          const struct sluice_allocator* alloc) {
  // Counts come from the input (planned rows per split): refuse sizes that
  // do not fit in size_t rather than wrap.
  if (c->width > 0 && (uint64_t)rows > SIZE_MAX / (uint64_t)c->width) return ENOMEM;
  int rc = big_reserve(&c->values, column_bytes(c, rows), alloc);
  if (rc == 0 && c->validity.size != 0) {
    size_t old = c->validity.size;
    rc = big_reserve(&c->validity, (size_t)(rows + 7) / 8, alloc);
    // Rows not written yet are valid until a batch says otherwise.
    if (rc == 0) memset(c->validity.data + old, 0xff, c->validity.size - old);
  }
  return rc;
}

static int gather_reserve(GatherObject* self, int64_t rows) {
  if (rows <= self->capacity) return 0;
  if (self->hold != NULL) return ENOMEM;  // a scan writes there: it cannot move
  int64_t want = rows;
  if (self->capacity > 0 && self->capacity < INT64_MAX / 2 &&
      want < self->capacity + self->capacity / 4) {
    want = self->capacity + self->capacity / 4;  // grow geometrically
  }
  for (int64_t i = 0; i < self->n_columns; ++i) {
    int rc = column_reserve(&self->columns[i], want, self->alloc);
    if (rc != 0) return rc;
  }
  self->capacity = want;
  return 0;
}

static void gather_free_columns(GatherObject* self) {
  for (int64_t i = 0; self->columns != NULL && i < self->n_columns; ++i) {
    if (self->hold == NULL) big_free(&self->columns[i].values);
    big_free(&self->columns[i].validity);
  }
  hold_release(self->hold);
  self->hold = NULL;
  PyMem_RawFree(self->columns);
  self->columns = NULL;
  self->n_columns = 0;
  self->capacity = 0;
}

static int gather_init(GatherObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"schema", "capacity", NULL};
  PyObject* schema;
  long long capacity = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|L", keywords, &SpSchemaType, &schema,
                                   &capacity)) {
    return -1;
  }
  if (self->schema != NULL || self->columns != NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_Gather is already initialised");
    return -1;
  }
  if (capacity < 0) capacity = 0;
  self->alloc = capacity > 0 ? sp_allocator() : NULL;
  const struct ArrowSchema* s = &((SchemaObject*)schema)->schema;
  for (int64_t i = 0; i < s->n_children; ++i) {
    if (fixed_width(s->children[i]) < 0) {
      PyErr_Format(PyExc_TypeError, "column %lld (%s, format %s) is not a flat fixed-width "
                   "column", (long long)i, s->children[i]->name ? s->children[i]->name : "",
                   s->children[i]->format ? s->children[i]->format : "?");
      return -1;
    }
  }
  int64_t n = s->n_children;
  self->columns = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *self->columns);
  if (self->columns == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  self->n_columns = n;
  for (int64_t i = 0; i < n; ++i) {
    self->columns[i].width = fixed_width(s->children[i]);
    self->columns[i].values.skew = (size_t)(i * 17 % 64) * 64;  // see big_buffer.skew
  }
  Py_INCREF(schema);
  self->schema = (SchemaObject*)schema;
  if (gather_reserve(self, (int64_t)capacity) != 0) {
    gather_free_columns(self);
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

static void gather_dealloc(GatherObject* self) {
  gather_free_columns(self);
  Py_XDECREF(self->schema);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/// Copies rows [start, start + count) of column `src` (a child of a batch
/// whose window starts at `top_offset`) to row `at`, unless a placed scan
/// decoded them there already. Adds the bytes copied to *copied. Returns 0
/// or ENOMEM.
static int copy_column(struct gather_column* c, const struct ArrowArray* src, int64_t top_offset,
                       int64_t start, int64_t count, int64_t at, int64_t capacity,
                       const struct sluice_allocator* alloc, int64_t* copied) {
  int64_t from = src->offset + top_offset + start;
  const uint8_t* values = src->buffers[1];
  if (c->width == 0) {
    copy_bits(c->values.data, at, values, from, count);
  } else if (values + from * c->width != c->values.data + at * c->width) {
    size_t bytes = (size_t)(count * c->width);
    big_populate(&c->values, (size_t)(at * c->width), bytes);
    memcpy(c->values.data + at * c->width, values + from * c->width, bytes);
    *copied += (int64_t)bytes;
  }
  const uint8_t* bits = src->buffers[0];
  if (bits == NULL || src->null_count == 0) return 0;
  if (c->validity.size == 0) {
    int rc = big_reserve(&c->validity, (size_t)(capacity + 7) / 8, alloc);
    if (rc != 0) return rc;
    memset(c->validity.data, 0xff, c->validity.size);
  }
  copy_bits(c->validity.data, at, bits, from, count);
  return 0;
}

static PyObject* gather_add(GatherObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"batch", "at", "start", "count", NULL};
  PyObject* obj;
  long long at, start = 0, count = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!L|LL", keywords, &SpBatchType, &obj, &at,
                                   &start, &count)) {
    return NULL;
  }
  if (self->schema == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_Gather is not initialised or already finished");
    return NULL;
  }
  if (self->busy) {
    PyErr_SetString(PyExc_RuntimeError, "_Gather.add is already running in another thread");
    return NULL;
  }
  BatchObject* batch = (BatchObject*)obj;
  const struct ArrowArray* top = &batch->shared->array;
  if (count < 0) count = top->length - start;
  if (at < 0 || start < 0 || count < 0 || start > top->length || count > top->length - start ||
      at > INT64_MAX / 64 - count) {
    PyErr_Format(PyExc_ValueError, "rows %lld..%lld of a %lld-row batch cannot go to row %lld",
                 start, start + count, (long long)top->length, at);
    return NULL;
  }
  if (top->n_children != self->n_columns) {
    PyErr_Format(PyExc_ValueError, "the batch has %lld columns, the table %lld",
                 (long long)top->n_children, (long long)self->n_columns);
    return NULL;
  }
  for (int64_t i = 0; i < self->n_columns; ++i) {
    const struct ArrowArray* c = top->children[i];
    if (c->n_buffers != 2 || c->buffers == NULL || (c->buffers[1] == NULL && count > 0) ||
        c->offset < 0 || top->offset < 0 || c->length < top->offset + start + count) {
      PyErr_Format(PyExc_ValueError, "column %lld of the batch does not hold rows %lld..%lld",
                   (long long)i, start, start + count);
      return NULL;
    }
  }
  if (count == 0) Py_RETURN_NONE;
  int rc = 0;
  self->busy = 1;
  Py_BEGIN_ALLOW_THREADS
  rc = gather_reserve(self, at + count);
  for (int64_t i = 0; rc == 0 && i < self->n_columns; ++i) {
    rc = copy_column(&self->columns[i], top->children[i], top->offset, start, count, at,
                     self->capacity, self->alloc, &self->copied_bytes);
  }
  Py_END_ALLOW_THREADS
  self->busy = 0;
  if (rc != 0) return PyErr_NoMemory();
  Py_RETURN_NONE;
}

/* ---- the finished batch ------------------------------------------------- */

/// Owns the columns of a finished gather: one allocation for the struct's
/// children, their buffer lists and the mapped buffers.
struct gathered {
  int64_t n;
  struct ArrowArray* children;
  struct ArrowArray** child_ptrs;
  const void** buffers;      // 2 per child, then 1 for the struct
  struct big_buffer* maps;   // 2 per child (values: the hold's when there is one)
  struct gather_hold* hold;  // the value memory of a placed scan, or NULL
};

static void gathered_free(struct gathered* g) {
  if (g == NULL) return;
  for (int64_t i = 0; g->maps != NULL && i < 2 * g->n; ++i) {
    if (g->hold == NULL || i % 2 == 0) big_free(&g->maps[i]);
  }
  hold_release(g->hold);
  PyMem_RawFree(g->children);
  PyMem_RawFree(g->child_ptrs);
  PyMem_RawFree(g->buffers);
  PyMem_RawFree(g->maps);
  PyMem_RawFree(g);
}

// Children are released with their parent (they own nothing themselves).
static void child_release(struct ArrowArray* array) { array->release = NULL; }

static void gathered_release(struct ArrowArray* array) {
  gathered_free(array->private_data);
  array->release = NULL;
}

static PyObject* gather_finish(GatherObject* self, PyObject* arg) {
  long long length = PyLong_AsLongLong(arg);
  if (length == -1 && PyErr_Occurred()) return NULL;
  if (self->schema == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_Gather is not initialised or already finished");
    return NULL;
  }
  if (self->busy) {
    PyErr_SetString(PyExc_RuntimeError, "_Gather.add is running in another thread");
    return NULL;
  }
  if (length < 0 || length > self->capacity) {
    PyErr_Format(PyExc_ValueError, "cannot finish %lld rows: room for %lld", length,
                 (long long)self->capacity);
    return NULL;
  }
  int64_t n = self->n_columns;
  struct gathered* g = PyMem_RawCalloc(1, sizeof *g);
  if (g != NULL) {
    g->n = n;
    g->children = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *g->children);
    g->child_ptrs = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *g->child_ptrs);
    g->buffers = PyMem_RawCalloc((size_t)(2 * n + 1), sizeof *g->buffers);
    g->maps = PyMem_RawCalloc(n > 0 ? 2 * (size_t)n : 1, sizeof *g->maps);
  }
  struct sp_shared_array* shared = NULL;
  struct ArrowArray top;
  memset(&top, 0, sizeof top);
  if (g == NULL || g->children == NULL || g->child_ptrs == NULL || g->buffers == NULL ||
      g->maps == NULL) {
    gathered_free(g);
    return PyErr_NoMemory();
  }
  for (int64_t i = 0; i < n; ++i) {
    struct gather_column* c = &self->columns[i];
    // The buffers move to the batch: the gather is spent.
    g->maps[2 * i] = c->validity;
    g->maps[2 * i + 1] = c->values;
    c->validity.size = 0;
    c->values.size = 0;
    // A hold's memory stays whole: the hold unmaps what it mapped.
    if (self->hold == NULL) big_shrink(&g->maps[2 * i + 1], column_bytes(c, length));
    int64_t nulls = 0;
    if (g->maps[2 * i].size != 0) {
      big_shrink(&g->maps[2 * i], (size_t)(length + 7) / 8);
      nulls = count_zero_bits(g->maps[2 * i].data, length);
      if (nulls == 0) big_free(&g->maps[2 * i]);
    }
    g->buffers[2 * i] = nulls != 0 ? g->maps[2 * i].data : NULL;
    g->buffers[2 * i + 1] = g->maps[2 * i + 1].data;
    struct ArrowArray* child = &g->children[i];
    child->length = length;
    child->null_count = nulls;
    child->offset = 0;
    child->n_buffers = 2;
    child->n_children = 0;
    child->buffers = &g->buffers[2 * i];
    child->release = child_release;
    g->child_ptrs[i] = child;
  }
  g->buffers[2 * n] = NULL;
  top.length = length;
  top.null_count = 0;
  top.offset = 0;
  top.n_buffers = 1;
  top.n_children = n;
  top.buffers = &g->buffers[2 * n];
  top.children = g->child_ptrs;
  top.release = gathered_release;
  top.private_data = g;
  SchemaObject* schema = self->schema;
  g->hold = self->hold;  // the batch holds the value memory now
  self->hold = NULL;
  gather_free_columns(self);
  self->schema = NULL;
  shared = sp_shared_new(&top);
  if (shared == NULL) {
    top.release(&top);
    Py_DECREF(schema);
    return PyErr_NoMemory();
  }
  shared->own_memory = 1;  // anonymous mappings of our own
  PyObject* out = (PyObject*)sp_batch_wrap(shared, schema, 0, 0, NULL);
  Py_DECREF(schema);
  return out;
}

static PyObject* gather_get_capacity(GatherObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromLongLong(self->capacity);
}

static PyObject* gather_get_copied_bytes(GatherObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromLongLong(self->copied_bytes);
}

int sp_gather_placement(PyObject* obj, PyObject* split_rows, int64_t n_scan_splits,
                        struct sp_placement* out) {
  memset(out, 0, sizeof *out);
  if (!PyObject_TypeCheck(obj, &SpGatherType)) {
    PyErr_SetString(PyExc_TypeError, "placement: expected a _Gather");
    return -1;
  }
  GatherObject* self = (GatherObject*)obj;
  if (self->schema == NULL || self->busy) {
    PyErr_SetString(PyExc_RuntimeError, "placement: the _Gather is finished or busy");
    return -1;
  }
  PyObject* rows = PySequence_Fast(split_rows, "placement: split rows must be a sequence");
  if (rows == NULL) return -1;
  Py_ssize_t n_splits = PySequence_Fast_GET_SIZE(rows);
  if ((int64_t)n_splits != n_scan_splits) {  // the library reads one entry per split
    Py_DECREF(rows);
    PyErr_Format(PyExc_ValueError, "placement: %lld split row counts for a scan of %lld splits",
                 (long long)n_splits, (long long)n_scan_splits);
    return -1;
  }
  int64_t n = self->n_columns, total = 0;
  out->values = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *out->values);
  out->widths = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *out->widths);
  out->split_rows = PyMem_RawCalloc(n_splits > 0 ? (size_t)n_splits : 1, sizeof *out->split_rows);
  if (out->values == NULL || out->widths == NULL || out->split_rows == NULL) {
    Py_DECREF(rows);
    sp_placement_free(out);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t k = 0; k < n_splits; ++k) {
    long long r = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(rows, k));
    if (r == -1 && PyErr_Occurred()) {
      Py_DECREF(rows);
      sp_placement_free(out);
      return -1;
    }
    out->split_rows[k] = r;
    // Counts come from the caller: a sum past the room stays past it (no wrap).
    if (r > 0) total = r > self->capacity - total ? self->capacity + 1 : total + r;
  }
  Py_DECREF(rows);
  if (total > self->capacity) {
    sp_placement_free(out);
    PyErr_Format(PyExc_ValueError, "placement: %lld rows planned, room for %lld",
                 (long long)total, (long long)self->capacity);
    return -1;
  }
  if (self->hold == NULL) {  // the value memory moves to a hold (see gather_hold)
    struct gather_hold* h = PyMem_RawCalloc(1, sizeof *h);
    struct big_buffer* values = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *values);
    if (h == NULL || values == NULL) {
      PyMem_RawFree(h);
      PyMem_RawFree(values);
      sp_placement_free(out);
      PyErr_NoMemory();
      return -1;
    }
    for (int64_t i = 0; i < n; ++i) values[i] = self->columns[i].values;
    atomic_init(&h->refs, 1);
    h->n = n;
    h->values = values;
    self->hold = h;
  }
  for (int64_t i = 0; i < n; ++i) {
    const struct gather_column* c = &self->columns[i];
    out->values[i] = c->width > 0 ? c->values.data : NULL;  // bools are bits: not placed
    out->widths[i] = (int32_t)c->width;
  }
  atomic_fetch_add(&self->hold->refs, 1);  // the scan's, released by the library
  out->placement = (struct sluice_placement){n, out->values, out->widths, out->split_rows,
                                             hold_release, self->hold};
  return 0;
}

void sp_placement_free(struct sp_placement* p) {
  PyMem_RawFree(p->values);
  PyMem_RawFree(p->widths);
  PyMem_RawFree(p->split_rows);
  memset(p, 0, sizeof *p);
}

static PyMethodDef gather_methods[] = {
    {"add", (PyCFunction)(void (*)(void))gather_add, METH_VARARGS | METH_KEYWORDS,
     "add(batch, at, start=0, count=-1): copy rows [start, start + count) of the _Batch to "
     "row `at` of the columns (growing them if needed)."},
    {"finish", (PyCFunction)gather_finish, METH_O,
     "finish(length) -> _Batch of the first `length` rows (the buffers move into it)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef gather_getset[] = {
    {"capacity", (getter)gather_get_capacity, NULL, "Rows the columns have room for.", NULL},
    {"copied_bytes", (getter)gather_get_copied_bytes, NULL,
     "Value bytes add() copied; bytes a placed scan decoded in place are not copied.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SpGatherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._Gather",
    .tp_basicsize = sizeof(GatherObject),
    .tp_dealloc = (destructor)gather_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Gather(schema, capacity=0): flat fixed-width batches copied into one "
              "preallocated batch at given row offsets, in any order.",
    .tp_methods = gather_methods,
    .tp_getset = gather_getset,
    .tp_init = (initproc)gather_init,
    .tp_new = PyType_GenericNew,
};
