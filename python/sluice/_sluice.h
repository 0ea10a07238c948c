// Internal declarations shared by the C files of the extension sluice._sluice.
//
// Layout, one concern per file:
//   _sluice_arrow.c    C Data Interface plumbing without Python: refcounted
//                      shared arrays, zero-copy export of (parts of) them,
//                      deep copies of schemas, a stream over shared arrays
//   _sluice_errors.c   C error code + message -> sluice.Error subclass
//   _sluice_schema.c   the _Schema type (owns one struct ArrowSchema)
//   _sluice_batch.c    the _Batch type (one shared struct array) and the
//                      _BufferView type (numpy's zero-copy window on a buffer)
//   _sluice_dataset.c  the _Dataset and _Scanner types (open, scan, stats)
//   _sluice_pump.c     a scanner driven from its own thread, so that waits
//                      for a batch can be cut short by Ctrl-C
//   _sluice_splits.c   a scan of a range of splits (Dask partitions) through
//                      sluice_scanner_open_with; planned rows per split
//   _sluice_views.c    string/binary views -> large string/binary for writers
//   _sluice_write.c    write(stream capsule) and make_batch (arrays from
//                      Python buffers, for pandas without pyarrow)
//   _sluice_import.c   other producers' streams and arrays into _Batch objects
//   _sluice_gather.c   the _Gather type: batches copied into one preallocated
//                      batch at their row offsets, in any order
//   _sluice_module.c   the module: functions, types, capsule helpers
#ifndef SLUICE_PY_H
#define SLUICE_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sluice.h"

/* ---- _sluice_arrow.c: no Python objects, callable without the GIL --------- */

/// One decoded batch (a struct array), shared by every export of it. The
/// consumer-side release callbacks of exports may run on any thread, so the
/// count is atomic and nothing here touches Python objects.
struct sp_shared_array {
  atomic_long refs;
  struct ArrowArray array;
  /// Every buffer is memory this batch alone allocated (a gather's columns),
  /// never a view of a file or of another batch: a consumer that takes the
  /// batch over (to_pandas(self_destruct=True)) may get writable views.
  int own_memory;
  /// Buffers handed out read-only (a view, a PyCapsule, a stream): a
  /// writable view of one would let edits show there. Touched with the GIL
  /// held only (exports run their callbacks without it, so they are marked
  /// when made).
  const void** marked;
  int64_t n_marked, cap_marked;
  int mark_failed;  ///< out of memory while marking: every buffer counts as marked
};

/// Moves `array` into a new shared holder with one reference (NULL on ENOMEM,
/// in which case `array` is left untouched for the caller to release).
struct sp_shared_array* sp_shared_new(struct ArrowArray* array);
void sp_shared_retain(struct sp_shared_array* shared);
/// Marks the buffers of `a` (a node of shared->array), its children's and
/// its dictionary's as handed out read-only (with the GIL held).
void sp_shared_mark(struct sp_shared_array* shared, const struct ArrowArray* a);
void sp_shared_mark_buffer(struct sp_shared_array* shared, const void* buffer);
/// Whether `buffer` was marked (with the GIL held).
int sp_shared_marked(const struct sp_shared_array* shared, const void* buffer);
void sp_shared_release(struct sp_shared_array* shared);

/// A node of an array tree exported (or converted, _sluice_views.c) from a
/// shared batch: what its release frees. Buffers not listed here belong to
/// `shared`.
struct sp_export_node {
  struct sp_shared_array* shared;
  struct ArrowArray* children;    // n_children nodes
  struct ArrowArray** child_ptrs;
  struct ArrowArray* dictionary;  // NULL when none
  const void* buffers[3];         // the node's own buffer list, when it needs one
  int64_t* offsets;               // a converted view's offsets and data (else NULL)
  char* data;
};
/// The release callback of arrays whose private_data is an sp_export_node.
void sp_export_release(struct ArrowArray* array);

/// Exports the whole batch as a struct array whose children are cut to the
/// batch's offset and length (a limit may shorten the top level only).
int sp_export_batch(struct sp_shared_array* shared, struct ArrowArray* out);
/// Exports column `i` of the batch, cut to the batch's offset and length.
int sp_export_column(struct sp_shared_array* shared, int64_t i, struct ArrowArray* out);

/// Deep copy of a schema (format, name, metadata, children, dictionary).
int sp_schema_copy(const struct ArrowSchema* src, struct ArrowSchema* out);
/// A schema node with our release callback: copies of the strings, room for
/// `n_children` children (each zeroed, to be filled by the caller).
int sp_schema_new(struct ArrowSchema* out, const char* format, const char* name,
                  const char* metadata, int64_t flags, int64_t n_children);

/// A stream over `n` shared batches (retained) with schema `schema` (copied).
/// column < 0: whole batches; else that column of each batch.
int sp_stream_new(const struct ArrowSchema* schema, struct sp_shared_array* const* batches,
                  int64_t n, int64_t column, struct ArrowArrayStream* out);

/// Bytes of Arrow metadata ("int32 n, then n (key, value)" pairs), 0 for NULL.
int64_t sp_metadata_size(const char* metadata);

/// If `schema` (`input`'s, taken; released is none) has string or binary
/// views, moves `input` into `out`, a stream that delivers them as large
/// strings / binaries, and sets *wrapped; else leaves `input` alone.
/// Returns 0 or ENOMEM.
int sp_plain_stream(struct ArrowArrayStream* input, struct ArrowSchema* schema,
                    struct ArrowArrayStream* out, int* wrapped);

/// Something that yields tagged batches (a sluice_scanner, of all splits or a
/// range of them: _sluice_splits.c).
struct sp_scan_source {
  void* handle;
  int (*next)(void* handle, struct ArrowArray* out, struct sluice_batch_tag* tag,
              struct sluice_error* error);
  void (*close)(void* handle);
};
/// The source of a public scanner.
struct sp_scan_source sp_scanner_source(struct sluice_scanner* scanner);
/// The rows each split of `dataset` is planned to hold (-1 = not known ahead),
/// as a new list of ints.
PyObject* sp_split_rows(struct sluice_dataset* dataset);
/// Starts a scan of splits [first, first + count) of `dataset` (count < 0:
/// to the end) with sluice_scanner_open_with; tags keep the dataset's split
/// numbers. slow_split >= 0 delays that split by slow_delay_us (a test hook).
/// ordered >= 0 overrides the order the dataset was opened with, memory > 0
/// its budget of bytes in flight.
int sp_split_scan_start(struct sluice_dataset* dataset, int64_t first, int64_t count,
                        int64_t slow_split, int64_t slow_delay_us, int ordered, int64_t memory,
                        const struct sluice_placement* placement, struct sp_scan_source* out,
                        struct sluice_error* error);

/// A scan on its own thread (takes `source`; on failure the caller closes it).
struct sp_pump;
int sp_pump_start(const struct sp_scan_source* source, struct sp_pump** out);
/// The next batch as sluice_scanner_next gives it, or ETIMEDOUT when none came
/// within timeout_ms (call again to keep waiting for the same batch), or
/// ECANCELED when the pump was cancelled meanwhile (by another thread).
int sp_pump_next(struct sp_pump* pump, struct ArrowArray* out, struct sluice_batch_tag* tag,
                 struct sluice_error* error, int timeout_ms);
/// Gives the pump up without waiting: its thread closes the scanner when its
/// current call returns, releasing everything.
void sp_pump_cancel(struct sp_pump* pump);
/// sp_pump_cancel, but when the thread is not making a batch the scanner is
/// closed here, before this returns (its sources let go). Without the GIL:
/// closing joins the scan's workers.
void sp_pump_close(struct sp_pump* pump);
/// An ArrowArrayStream of `schema` that takes the pump over: its get_next
/// waits for the pump's batches without the GIL, its release cancels it.
int sp_pump_stream(struct sp_pump* pump, const struct ArrowSchema* schema,
                   struct ArrowArrayStream* out);

/* ---- _sluice_errors.c ----------------------------------------------------- */

/// Raises the sluice.Error subclass for `code` with `message`; returns NULL.
PyObject* sp_raise(int code, const char* message);
/// Raises from a filled struct sluice_error.
PyObject* sp_raise_error(const struct sluice_error* error);

/* ---- types ---------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  struct ArrowSchema schema;
} SchemaObject;

typedef struct {
  PyObject_HEAD
  struct sp_shared_array* shared;
  SchemaObject* schema;  // the batch's struct schema
  int64_t split;
  int64_t index;
  PyObject* metadata;    // bytes (Arrow metadata layout) the source attached, or None
} BatchObject;

typedef struct {
  PyObject_HEAD
  struct sp_shared_array* shared;  // keeps the bytes alive
  const void* data;
  Py_ssize_t size;
  int writable;  // the buffer protocol says writable (see own_memory)
} BufferViewObject;

typedef struct {
  PyObject_HEAD
  struct sluice_dataset* dataset;
  SchemaObject* schema;
} DatasetObject;

/// Why a scanner's pump is gone (ScannerObject.state).
enum sp_scan_state {
  SP_SCAN_RUNNING = 0,
  SP_SCAN_ENDED,        // its last batch was taken: next() is StopIteration
  SP_SCAN_FAILED,       // next() raised the scan's error
  SP_SCAN_CLOSED,       // close(): next() raises, also in a thread waiting for a batch
  SP_SCAN_INTERRUPTED,  // Ctrl-C while waiting
  SP_SCAN_EXPORTED,     // __arrow_c_stream__ took the rest
};

typedef struct {
  PyObject_HEAD
  struct sp_pump* pump;  // the scan, driven from its own thread
  DatasetObject* dataset;
  SchemaObject* schema;
  int state;             // enum sp_scan_state
} ScannerObject;

extern PyTypeObject SpSchemaType;
extern PyTypeObject SpBatchType;
extern PyTypeObject SpBufferViewType;
extern PyTypeObject SpDatasetType;
extern PyTypeObject SpScannerType;
extern PyTypeObject SpGatherType;

/// A sluice_placement over a _Gather's columns for a scan of n_scan_splits
/// splits whose planned rows are `split_rows` (a sequence of that many, whose
/// sum fits the gather's room); the arrays it points to are
/// the caller's until sp_placement_free (after sluice_scanner_open_with,
/// which copies them). The library releases the gather's memory hold.
/// -1 with a Python error set.
struct sp_placement {
  struct sluice_placement placement;
  void** values;
  int32_t* widths;
  int64_t* split_rows;
};
int sp_gather_placement(PyObject* gather, PyObject* split_rows, int64_t n_scan_splits,
                        struct sp_placement* out);
void sp_placement_free(struct sp_placement* p);

/// A new _Schema taking ownership of `schema` (moved; released on failure).
SchemaObject* sp_schema_wrap(struct ArrowSchema* schema);
/// A new _Batch holding one reference to `shared` (its own, taken), with a
/// copy of the batch's custom metadata (NULL = none).
BatchObject* sp_batch_wrap(struct sp_shared_array* shared, SchemaObject* schema, int64_t split,
                           int64_t index, const char* metadata);

/// Capsules of the PyCapsule protocol; each owns a heap struct whose release
/// (if not NULL) the capsule's destructor calls.
PyObject* sp_schema_capsule(const struct ArrowSchema* schema_to_copy);
PyObject* sp_array_capsule_from(struct ArrowArray* moved);
PyObject* sp_stream_capsule_from(struct ArrowArrayStream* moved);

/// The C string of a str (its UTF-8) or bytes object, owned by it; NULL
/// with TypeError for another type, ValueError for one that holds a NUL
/// character (C would read it cut short there). `what` names it.
const char* sp_c_string(PyObject* object, const char* what);
/// sp_c_string of an optional argument into *out (None gives NULL): 0, or -1
/// with an exception set.
int sp_c_string_or_none(PyObject* object, const char* what, const char** out);

/* ---- module functions defined outside _sluice_module.c -------------------- */

/// The allocator of every handle the module opens: the module's buffer
/// cache (NULL: each handle's own). With the GIL held.
const struct sluice_allocator* sp_allocator(void);
PyObject* sp_open(PyObject* self, PyObject* args, PyObject* kwargs);
PyObject* sp_write(PyObject* self, PyObject* args, PyObject* kwargs);

/// sluice.write's arguments (stream, location, then the keywords of
/// _sluice.write) as sluice_write_options. Strings are borrowed from the
/// arguments: they must outlive the options (a Writer keeps them).
struct sp_write_setup {
  PyObject* stream;  ///< borrowed
  const char* location;
  struct sluice_write_options options;  ///< s3 and partition_by point into this struct
  struct sluice_s3_options s3;
  const char* keys[64];
};
int sp_write_setup_parse(PyObject* args, PyObject* kwargs, struct sp_write_setup* out);
/// Raises a failed write's error (rc): the producer's own exception when it
/// raised, KeyboardInterrupt for a Ctrl-C in a Python producer, else the
/// sluice error. Returns NULL.
PyObject* sp_raise_write_error(struct sluice_error* error, int rc);
/// 0 when `stream`'s schema is a struct (record batches), else -1 with a
/// TypeError "sluice writes record batches (struct arrays), not Arrow type
/// 'l'" (a Series or chunked array: each writer refused it in its own
/// words), which the Python side words for the object passed. The schema
/// goes to *out (released when the stream could not give it: the write
/// reports that) for sp_plain_stream, so that a write gets it once.
int sp_check_struct_stream(struct ArrowArrayStream* stream, struct ArrowSchema* out);
/// 0 when `schema` is a struct, else -1 with a TypeError "sluice <verb>
/// record batches (struct arrays), not Arrow type '...'".
int sp_check_struct(const struct ArrowSchema* schema, const char* verb);
extern PyTypeObject SpWriterType;
/// A dict of sluice_s3_options fields (None = none) into *out, whose strings
/// point into the dict's values. Returns 0, or -1 with an exception set.
int sp_s3_options(PyObject* dict, struct sluice_s3_options* out);
PyObject* sp_make_batch(PyObject* self, PyObject* args);
PyObject* sp_batches_stream(PyObject* self, PyObject* args);
PyObject* sp_import_stream(PyObject* self, PyObject* capsule);
PyObject* sp_import_array(PyObject* self, PyObject* args);

#endif
