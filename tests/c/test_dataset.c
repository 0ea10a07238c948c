// The public dataset API end to end (open, detect, project, limit, scan in
// order and out of order, pipes) over Arrow IPC files written by pyarrow.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/sluice_dataset_internal.h"
#include "api/sluice_stats_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_buffer_cache.h"
#include "format/sl_format.h"
#include "test_util.h"

static int compare_tags(const void* a, const void* b) {
  const struct sluice_batch_tag* x = a;
  const struct sluice_batch_tag* y = b;
  if (x->split != y->split) return x->split < y->split ? -1 : 1;
  return x->batch < y->batch ? -1 : x->batch > y->batch;
}

/* ---- Through the public API, over Arrow IPC written by pyarrow ------------- */

#define IPC_BATCHES 20
#define IPC_ROWS 1000

/// Writes `path` with pyarrow: columns a (int64 0..n-1), b (utf8), c (double)
/// in IPC_BATCHES batches; `kind` "file" or "stream". 0 on success.
static int pyarrow_write(const char* path, const char* kind, int batches) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, sys\n"
           "n=%d\n"
           "sch=pa.schema([('a',pa.int64()),('b',pa.string()),('c',pa.float64())])\n"
           "w=pa.ipc.new_%s(sys.argv[1], sch)\n"
           "for k in range(%d):\n"
           "  a=list(range(k*n,(k+1)*n))\n"
           "  w.write_batch(pa.record_batch([pa.array(a),pa.array([str(x) for x in a]),"
           "pa.array([x*0.5 for x in a])],schema=sch))\n"
           "w.close()\" '%s' 2>/dev/null",
           IPC_ROWS, kind, batches, path);
  return system(cmd);
}

static int ipc_setup(void** state) {
  (void)state;
  if (sl_format_reader_find("arrow") == NULL) return 0;
  char path[512];
  if (pyarrow_write(test_temp_path("multi.arrow", path, sizeof path), "file", IPC_BATCHES) != 0 ||
      pyarrow_write(test_temp_path("multi.bin", path, sizeof path), "file", IPC_BATCHES) != 0 ||
      pyarrow_write(test_temp_path("multi.arrows", path, sizeof path), "stream", IPC_BATCHES) != 0 ||
      pyarrow_write(test_temp_path("empty.arrow", path, sizeof path), "file", 0) != 0) {
    return 0;  // the tests skip when their file is missing
  }
  return 0;
}

static int ipc_teardown(void** state) {
  (void)state;
  const char* names[] = {"multi.arrow", "multi.bin", "multi.arrows", "empty.arrow"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    char path[512];
    unlink(test_temp_path(names[i], path, sizeof path));
  }
  return 0;
}

/// Opens a generated file or skips the test when it (or its reader) is absent.
static void ipc_path_or_skip(const char* name, char* path, size_t cap) {
  if (sl_format_reader_find("arrow") == NULL) skip();
  test_temp_path(name, path, cap);
  if (access(path, R_OK) != 0) skip();
}

/// Reads the whole stream; checks column a is 0..rows-1 in order (column
/// `a_index` of each batch). Returns the rows.
static int64_t drain_stream_in_order(struct ArrowArrayStream* stream, int64_t a_index) {
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    int rc = stream->get_next(stream, &batch);
    if (rc != 0) fail_msg("get_next: %s", stream->get_last_error(stream));
    if (batch.release == NULL) break;
    const struct ArrowArray* a = batch.children[a_index];
    const int64_t* data = a->buffers[1];
    for (int64_t i = 0; i < batch.length; ++i) {
      if (data[a->offset + batch.offset + i] != rows + i) {
        fail_msg("row %lld holds %lld", (long long)(rows + i),
                 (long long)data[a->offset + batch.offset + i]);
      }
    }
    rows += batch.length;
    batch.release(&batch);
  }
  return rows;
}

static void test_ipc_ordered_and_unordered(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.threads = 4;
  options.allocator = &ta.base;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  assert_string_equal(sluice_dataset_format(ds), "arrow");
  assert_true(sluice_dataset_num_splits(ds) >= 1);

  // Ordered, through the Arrow C stream.
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  struct ArrowSchema schema;
  assert_int_equal(stream.get_schema(&stream, &schema), 0);
  assert_int_equal(schema.n_children, 3);
  assert_string_equal(schema.children[0]->name, "a");
  assert_string_equal(schema.children[1]->format, "u");
  schema.release(&schema);
  assert_int_equal(drain_stream_in_order(&stream, 0), IPC_BATCHES * IPC_ROWS);
  stream.release(&stream);
  sluice_dataset_close(ds);

  // Unordered: same content once sorted by tag.
  options.ordered = 0;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open(ds, &scanner, &error), 0);
  struct sluice_batch_tag tags[4 * IPC_BATCHES];
  int64_t first[4 * IPC_BATCHES], lengths[4 * IPC_BATCHES];
  int n = 0;
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    assert_int_equal(sluice_scanner_next(scanner, &batch, &tag, &error), 0);
    if (batch.release == NULL) break;
    assert_true(n < 4 * IPC_BATCHES);
    const struct ArrowArray* a = batch.children[0];
    tags[n] = tag;
    first[n] = batch.length > 0 ? ((const int64_t*)a->buffers[1])[a->offset + batch.offset] : -1;
    lengths[n] = batch.length;
    rows += batch.length;
    ++n;
    batch.release(&batch);
  }
  assert_int_equal(rows, IPC_BATCHES * IPC_ROWS);
  // Sort (tag → first value) by tag with a simple insertion sort.
  for (int i = 1; i < n; ++i) {
    for (int j = i; j > 0 && compare_tags(&tags[j - 1], &tags[j]) > 0; --j) {
      struct sluice_batch_tag t = tags[j];
      tags[j] = tags[j - 1];
      tags[j - 1] = t;
      int64_t f = first[j];
      first[j] = first[j - 1];
      first[j - 1] = f;
      int64_t l = lengths[j];
      lengths[j] = lengths[j - 1];
      lengths[j - 1] = l;
    }
  }
  int64_t expect = 0;
  for (int i = 0; i < n; ++i) {
    if (lengths[i] > 0) assert_int_equal(first[i], expect);
    expect += lengths[i];
  }
  sluice_scanner_close(scanner);
  sluice_dataset_close(ds);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void test_ipc_projection_limit_and_errors(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  const char* cols[] = {"c", "a"};
  options.columns = cols;
  options.n_columns = 2;
  options.limit = 1500;
  options.memory_budget = 64 * 1024;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  struct ArrowSchema schema;
  assert_int_equal(sluice_dataset_schema(ds, &schema, &error), 0);
  assert_int_equal(schema.n_children, 2);
  assert_string_equal(schema.children[0]->name, "c");
  assert_string_equal(schema.children[1]->name, "a");
  schema.release(&schema);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  // The stream outlives the dataset handle.
  sluice_dataset_close(ds);
  assert_int_equal(drain_stream_in_order(&stream, 1), 1500);
  stream.release(&stream);

  const char* bad[] = {"a", "x"};
  options.columns = bad;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), EINVAL);
  assert_null(ds);
  char expect[700];
  snprintf(expect, sizeof expect, "no column 'x' in %s; columns are: 'a', 'b', 'c'", path);
  assert_string_equal(error.message, expect);

  sluice_open_options_init(&options);
  options.format = "nope";
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), EINVAL);
  assert_non_null(strstr(error.message, "unknown format 'nope'"));
  assert_int_equal(sluice_dataset_open("/no/such/file.arrow", NULL, &ds, &error), ENOENT);
  assert_non_null(strstr(error.message, "/no/such/file.arrow"));
}

/// Zero columns selected (a row count): batches keep their lengths.
static void test_ipc_zero_columns(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  const char* none[1] = {NULL};
  options.columns = none;
  options.n_columns = 0;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open(ds, &scanner, &error), 0);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(sluice_scanner_next(scanner, &batch, NULL, &error), 0);
    if (batch.release == NULL) break;
    assert_int_equal(batch.n_children, 0);
    rows += batch.length;
    batch.release(&batch);
  }
  assert_int_equal(rows, IPC_BATCHES * IPC_ROWS);
  sluice_scanner_close(scanner);
  sluice_dataset_close(ds);
}

static void test_ipc_detection_and_empty(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.bin", path, sizeof path);
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  // No telling extension: the magic bytes decide.
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  assert_string_equal(sluice_dataset_format(ds), "arrow");
  sluice_dataset_close(ds);

  ipc_path_or_skip("empty.arrow", path, sizeof path);
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  sluice_dataset_close(ds);
  struct ArrowSchema schema;
  assert_int_equal(stream.get_schema(&stream, &schema), 0);
  assert_int_equal(schema.n_children, 3);
  schema.release(&schema);
  struct ArrowArray batch;
  assert_int_equal(stream.get_next(&stream, &batch), 0);
  assert_null(batch.release);
  stream.release(&stream);
}

struct file_feeder {
  int fd;
  uint8_t* data;
  size_t size;
};

static void* feed_pipe(void* arg) {
  struct file_feeder* f = arg;
  size_t off = 0;
  while (off < f->size) {
    size_t n = f->size - off < 5000 ? f->size - off : 5000;
    ssize_t w = write(f->fd, f->data + off, n);
    if (w <= 0) break;
    off += (size_t)w;
  }
  close(f->fd);
  return NULL;
}

/// IPC through a pipe: a forward-only source, detection by peeking. The
/// stream format reads straight from the pipe; the file format (footer) is
/// spooled to a temporary file first.
static void run_ipc_through_pipe(const char* name, const char* format) {
  char path[512];
  ipc_path_or_skip(name, path, sizeof path);
  if (sl_format_reader_find(format) == NULL) skip();
  struct file_feeder feeder;
  feeder.data = test_read_file(path, &feeder.size);
  assert_non_null(feeder.data);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  feeder.fd = fds[1];
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, feed_pipe, &feeder), 0);
  char location[64];
  snprintf(location, sizeof location, "/dev/fd/%d", fds[0]);
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  int rc = sluice_dataset_open(location, NULL, &ds, &error);
  if (rc != 0) fail_msg("open: %s", error.message);
  assert_string_equal(sluice_dataset_format(ds), format);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  assert_int_equal(drain_stream_in_order(&stream, 0), IPC_BATCHES * IPC_ROWS);
  stream.release(&stream);
  sluice_dataset_close(ds);
  pthread_join(thread, NULL);
  close(fds[0]);
  free(feeder.data);
}

static void test_ipc_through_pipe(void** unused) {
  (void)unused;
  run_ipc_through_pipe("multi.arrows", "arrows");
  run_ipc_through_pipe("multi.arrow", "arrow");
}

/// Every allocation of open + scan failing in turn: an error or a complete
/// result, and nothing leaked either way.
static void test_ipc_allocation_failures(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  int completed = 0;
  for (long long fail_at = 1; fail_at < 400 && completed < 3; ++fail_at) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, fail_at);
    struct sluice_open_options options;
    sluice_open_options_init(&options);
    options.allocator = &ta.base;
    options.threads = 2;
    const char* cols[] = {"b", "a"};
    options.columns = cols;
    options.n_columns = 2;
    struct sluice_dataset* ds = NULL;
    struct sluice_error error;
    int rc = sluice_dataset_open(path, &options, &ds, &error);
    if (rc == 0) {
      struct ArrowArrayStream stream;
      rc = sluice_dataset_scan(ds, &stream, &error);
      sluice_dataset_close(ds);
      if (rc == 0) {
        int64_t rows = 0;
        for (;;) {
          struct ArrowArray batch;
          rc = stream.get_next(&stream, &batch);
          if (rc != 0 || batch.release == NULL) break;
          rows += batch.length;
          batch.release(&batch);
        }
        if (rc == 0) {
          assert_int_equal(rows, IPC_BATCHES * IPC_ROWS);
          ++completed;
        } else {
          assert_non_null(stream.get_last_error(&stream));
        }
        stream.release(&stream);
      }
    }
    if (atomic_load(&ta.live_bytes) != 0) {
      fail_msg("fail_at %lld: %lld bytes leaked (rc %d)", fail_at, atomic_load(&ta.live_bytes), rc);
    }
  }
}

/* ---- Bytes in memory ------------------------------------------------------------ */

/// The caller's side of sluice_dataset_open_memory: counts the releases,
/// and frees the bytes at the first.
struct held_bytes {
  uint8_t* data;
  atomic_int releases;
};

static void give_back(void* ctx) {
  struct held_bytes* h = ctx;
  if (atomic_fetch_add(&h->releases, 1) == 0) free(h->data);
}

/// Sums column a (int64) of every batch of `ds`, which it closes first, so
/// that the batches alone keep the bytes; *releases_during is how many times
/// the bytes were given back while a batch was held.
static int64_t sum_after_close(struct sluice_dataset* ds, struct held_bytes* h,
                               int* releases_during) {
  struct ArrowArrayStream stream;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  sluice_dataset_close(ds);
  struct ArrowArray held[TEST_MAX_BATCHES];
  int n = 0;
  int64_t sum = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(stream.get_next(&stream, &batch), 0);
    if (batch.release == NULL) break;
    const int64_t* a = (const int64_t*)batch.children[0]->buffers[1] + batch.children[0]->offset;
    for (int64_t i = 0; i < batch.length; ++i) sum += a[i];
    assert_true(n < TEST_MAX_BATCHES);
    held[n++] = batch;
  }
  stream.release(&stream);
  *releases_during = atomic_load(&h->releases);
  for (int i = 0; i < n; ++i) held[i].release(&held[i]);
  return sum;
}

static void test_memory_dataset(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  size_t size = 0;
  struct held_bytes h = {test_read_file(path, &size), 0};
  assert_non_null(h.data);
  // Read in place (the batches point into the bytes, so they are given back
  // only after the last batch goes), with the format told by the bytes.
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open_memory(h.data, size, NULL, give_back, &h, NULL, &ds,
                                              &error), 0);
  assert_string_equal(sluice_dataset_format(ds), "arrow");
  int during = -1;
  int64_t rows = IPC_BATCHES * IPC_ROWS;
  assert_int_equal(sum_after_close(ds, &h, &during), rows * (rows - 1) / 2);
  assert_int_equal(during, 0);
  assert_int_equal(atomic_load(&h.releases), 1);
  // Bytes that start as Parquet and are not: an error naming them, given
  // back once.
  uint8_t* junk = malloc(64);
  assert_non_null(junk);
  memset(junk, 0x01, 64);
  memcpy(junk, "PAR1", 4);
  struct held_bytes j = {junk, 0};
  assert_int_not_equal(sluice_dataset_open_memory(junk, 64, "upload.bin", give_back, &j, NULL,
                                                  &ds, &error), 0);
  assert_null(ds);
  assert_non_null(strstr(error.message, "upload.bin"));
  assert_int_equal(atomic_load(&j.releases), 1);
  // Options refused before anything is opened: given back too.
  struct held_bytes k = {malloc(8), 0};
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.timeout_s = -1;
  assert_int_equal(sluice_dataset_open_memory(k.data, 8, "x.arrow", give_back, &k, &options, &ds,
                                              &error), EINVAL);
  assert_int_equal(atomic_load(&k.releases), 1);
}

/// Every allocation failure on the way is a clean ENOMEM that gives the
/// bytes back exactly once and leaks nothing.
struct memory_case {
  const uint8_t* data;
  size_t size;
};

static int memory_open_once(void* ctx, const struct sluice_allocator* alloc,
                            struct sluice_error* error) {
  struct memory_case* c = ctx;
  struct held_bytes h = {NULL, 0};
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open_memory(c->data, c->size, "m.arrow", give_back, &h, &options, &ds,
                                      error);
  if (rc == 0) {
    assert_int_equal(atomic_load(&h.releases), 0);
    sluice_dataset_close(ds);
  }
  assert_int_equal(atomic_load(&h.releases), 1);
  return rc;
}

static void test_memory_dataset_allocation_failures(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct memory_case c = {NULL, 0};
  uint8_t* data = test_read_file(path, &c.size);
  assert_non_null(data);
  c.data = data;
  assert_true(test_alloc_sweep(memory_open_once, &c, 400) > 3);
  free(data);
}

/* ---- Many objects: a directory read as one table ------------------------------ */

/// Writes into `dir` (created) the IPC files p0.arrow, p1.arrow (empty),
/// p2.arrow, sub/p3.arrow holding column a = 0.. in that order across the
/// files, three batches of IPC_ROWS each (none in p1), plus a _SUCCESS marker
/// and a .hidden file that must be skipped; and, when `mismatch`, a file
/// whose a is a double. 0 on success.
static int pyarrow_write_dir(const char* dir, int mismatch) {
  char cmd[3072];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, sys, os\n"
           "d=sys.argv[1]; n=%d\n"
           "os.makedirs(d+'/sub', exist_ok=True)\n"
           "sch=pa.schema([('a',pa.int64()),('b',pa.string())])\n"
           "def w(name, start, k):\n"
           "  with pa.ipc.new_file(d+'/'+name, sch) as f:\n"
           "    for j in range(k):\n"
           "      a=list(range(start+j*n,start+(j+1)*n))\n"
           "      f.write_batch(pa.record_batch([pa.array(a),pa.array([str(x) for x in a])],"
           "schema=sch))\n"
           "w('p0.arrow', 0, 3); w('p1.arrow', 0, 0); w('p2.arrow', 3*n, 3)\n"
           "w('sub/p3.arrow', 6*n, 3)\n"
           "open(d+'/_SUCCESS','w').close(); open(d+'/.hidden','w').write('x')\n"
           "if %d:\n"
           "  pa.ipc.new_file(d+'/p4.arrow', pa.schema([('a',pa.float64()),('b',pa.string())]))"
           ".close()\n"
           "\" '%s' 2>/dev/null",
           IPC_ROWS, mismatch, dir);
  return system(cmd);
}

static void remove_tree(const char* dir) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static void test_directory_as_one_table(void** unused) {
  (void)unused;
  if (sl_format_reader_find("arrow") == NULL) skip();
  char dir[512];
  test_temp_path("dataset_dir", dir, sizeof dir);
  remove_tree(dir);
  if (pyarrow_write_dir(dir, 0) != 0) skip();
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.threads = 4;
  options.allocator = &ta.base;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  // Ordered: a runs 0.. across the files in name order (sub/p3 last).
  assert_int_equal(sluice_dataset_open(dir, &options, &ds, &error), 0);
  assert_string_equal(sluice_dataset_format(ds), "arrow");
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  assert_int_equal(drain_stream_in_order(&stream, 0), 9 * IPC_ROWS);
  stream.release(&stream);
  sluice_dataset_close(ds);

  // A glob, projected, unordered: the tags restore the same order.
  char glob[600];
  snprintf(glob, sizeof glob, "%s/**/p*.arrow", dir);
  const char* cols[] = {"b", "a"};
  options.columns = cols;
  options.n_columns = 2;
  options.ordered = 0;
  assert_int_equal(sluice_dataset_open(glob, &options, &ds, &error), 0);
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open(ds, &scanner, &error), 0);
  struct sluice_batch_tag tags[64];
  int64_t first[64];
  int n = 0;
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    assert_int_equal(sluice_scanner_next(scanner, &batch, &tag, &error), 0);
    if (batch.release == NULL) break;
    assert_true(n < 64);
    assert_int_equal(batch.n_children, 2);
    assert_int_equal(batch.length, IPC_ROWS);
    const struct ArrowArray* a = batch.children[1];
    tags[n] = tag;
    first[n++] = ((const int64_t*)a->buffers[1])[a->offset + batch.offset];
    batch.release(&batch);
  }
  assert_int_equal(n, 9);
  for (int i = 0; i < n; ++i) {
    int rank = 0;  // how many tags sort before tags[i]
    for (int j = 0; j < n; ++j) rank += compare_tags(&tags[j], &tags[i]) < 0;
    assert_int_equal(first[i], (int64_t)rank * IPC_ROWS);
  }
  sluice_scanner_close(scanner);
  sluice_dataset_close(ds);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  remove_tree(dir);
}

static void test_directory_errors(void** unused) {
  (void)unused;
  if (sl_format_reader_find("arrow") == NULL) skip();
  char dir[512];
  test_temp_path("dataset_dir_bad", dir, sizeof dir);
  remove_tree(dir);
  if (pyarrow_write_dir(dir, 1) != 0) skip();
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  // Columns that differ: the error names the odd file and the column.
  assert_int_equal(sluice_dataset_open(dir, NULL, &ds, &error), EINVAL);
  assert_null(ds);
  assert_non_null(strstr(error.message, "p4.arrow"));
  assert_non_null(strstr(error.message, "'a'"));
  // A glob that matches nothing.
  char glob[600];
  snprintf(glob, sizeof glob, "%s/*.parquet", dir);
  assert_int_not_equal(sluice_dataset_open(glob, NULL, &ds, &error), 0);
  assert_non_null(strstr(error.message, "*.parquet"));
  remove_tree(dir);
}

/* ---- Scans of a range of splits (sluice_scanner_open_with) ------------------ */

#define RANGE_MAX_SPLITS 256

/// Per split: batches, rows and the sum of column a (column 0) seen by a scan.
struct split_totals {
  int64_t batches[RANGE_MAX_SPLITS];
  int64_t rows[RANGE_MAX_SPLITS];
  int64_t sum[RANGE_MAX_SPLITS];
  int64_t total_batches;
};

/// Drains a scan of `options` (NULL = all splits) into `totals`; every tag
/// must fall inside the range, and with `ordered` tags must rise in plan order.
static void scan_split_totals(struct sluice_dataset* ds, const struct sluice_scan_options* options,
                              int ordered, struct split_totals* totals) {
  memset(totals, 0, sizeof *totals);
  int64_t n = sluice_dataset_num_splits(ds);
  assert_true(n <= RANGE_MAX_SPLITS);
  int64_t first = options != NULL ? options->first_split : 0;
  int64_t end = options != NULL && options->n_splits >= 0 ? first + options->n_splits : n;
  struct sluice_scanner* scanner = NULL;
  struct sluice_error error;
  int rc = sluice_scanner_open_with(ds, options, &scanner, &error);
  if (rc != 0) fail_msg("sluice_scanner_open_with: %s", error.message);
  struct sluice_batch_tag last = {-1, -1, NULL};
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    rc = sluice_scanner_next(scanner, &batch, &tag, &error);
    if (rc != 0) fail_msg("sluice_scanner_next: %s", error.message);
    if (batch.release == NULL) break;
    if (tag.split < first || tag.split >= end) {
      fail_msg("batch of split %lld outside [%lld, %lld)", (long long)tag.split,
               (long long)first, (long long)end);
    }
    if (ordered) assert_true(compare_tags(&last, &tag) < 0);
    last = tag;
    const struct ArrowArray* a = batch.children[0];
    const int64_t* data = a->buffers[1];
    for (int64_t i = 0; i < batch.length; ++i) {
      totals->sum[tag.split] += data[a->offset + batch.offset + i];
    }
    totals->rows[tag.split] += batch.length;
    totals->batches[tag.split]++;
    totals->total_batches++;
    batch.release(&batch);
  }
  sluice_scanner_close(scanner);
}

static void test_scan_range_ordered_and_unordered(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.threads = 4;
  options.allocator = &ta.base;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  int64_t n = sluice_dataset_num_splits(ds);
  assert_true(n >= 4);
  // The whole scan is the reference: a = 0..rows-1 over every split.
  struct split_totals all, part;
  scan_split_totals(ds, NULL, 1, &all);
  int64_t rows = 0, sum = 0;
  for (int64_t i = 0; i < n; ++i) rows += all.rows[i], sum += all.sum[i];
  assert_int_equal(rows, IPC_BATCHES * IPC_ROWS);
  assert_int_equal(sum, rows * (rows - 1) / 2);
  // Middle, head and tail ranges, in order and as they finish, with overrides
  // of threads and budget: the same batches under the dataset's split numbers.
  const int64_t ranges[][2] = {{1, n / 2}, {0, 1}, {n - 3, -1}, {0, -1}};
  for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; ++r) {
    for (int ordered = 0; ordered <= 1; ++ordered) {
      struct sluice_scan_options scan;
      sluice_scan_options_init(&scan);
      scan.first_split = ranges[r][0];
      scan.n_splits = ranges[r][1];
      scan.ordered = ordered;
      scan.threads = ordered ? 3 : 0;
      scan.memory_budget = ordered ? 0 : 1 << 20;
      scan_split_totals(ds, &scan, ordered, &part);
      int64_t end = scan.n_splits >= 0 ? scan.first_split + scan.n_splits : n;
      for (int64_t i = 0; i < n; ++i) {
        int inside = i >= scan.first_split && i < end;
        assert_int_equal(part.batches[i], inside ? all.batches[i] : 0);
        assert_int_equal(part.rows[i], inside ? all.rows[i] : 0);
        assert_int_equal(part.sum[i], inside ? all.sum[i] : 0);
      }
    }
  }
  // The scanner outlives the dataset handle.
  struct sluice_scan_options scan;
  sluice_scan_options_init(&scan);
  scan.first_split = n - 1;
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open_with(ds, &scan, &scanner, &error), 0);
  sluice_dataset_close(ds);
  struct ArrowArray batch;
  struct sluice_batch_tag tag;
  assert_int_equal(sluice_scanner_next(scanner, &batch, &tag, &error), 0);
  assert_non_null(batch.release);
  assert_int_equal(tag.split, n - 1);
  batch.release(&batch);
  sluice_scanner_close(scanner);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void test_scan_range_empty_and_errors(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = &ta.base;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  int64_t n = sluice_dataset_num_splits(ds);
  // Empty ranges end at once, wherever they start.
  const int64_t empty[][2] = {{0, 0}, {2, 0}, {n, 0}, {n, -1}};
  for (size_t r = 0; r < sizeof empty / sizeof empty[0]; ++r) {
    struct sluice_scan_options scan;
    sluice_scan_options_init(&scan);
    scan.first_split = empty[r][0];
    scan.n_splits = empty[r][1];
    struct split_totals totals;
    scan_split_totals(ds, &scan, 1, &totals);
    assert_int_equal(totals.total_batches, 0);
  }
  // Out of range or bad overrides: EINVAL naming the file, and no scanner.
  struct { int64_t first, count; int ordered; int64_t memory; int threads; } bad[] = {
      {-1, -1, -1, 0, 0}, {n + 1, -1, -1, 0, 0}, {0, n + 1, -1, 0, 0}, {n - 1, 2, -1, 0, 0},
      {0, -2, -1, 0, 0},  {0, -1, 2, 0, 0},     {0, -1, -2, 0, 0},    {0, -1, -1, -5, 0},
      {0, -1, -1, 0, -1}, {INT64_MAX, 1, -1, 0, 0}, {1, INT64_MAX, -1, 0, 0}};
  for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
    struct sluice_scan_options scan;
    sluice_scan_options_init(&scan);
    scan.first_split = bad[b].first;
    scan.n_splits = bad[b].count;
    scan.ordered = bad[b].ordered;
    scan.memory_budget = bad[b].memory;
    scan.threads = bad[b].threads;
    struct sluice_scanner* scanner = (struct sluice_scanner*)&scan;  // must be reset
    memset(&error, 0, sizeof error);
    assert_int_equal(sluice_scanner_open_with(ds, &scan, &scanner, &error), EINVAL);
    assert_null(scanner);
    assert_int_equal(error.code, EINVAL);
    assert_non_null(strstr(error.message, path));
  }
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open_with(NULL, NULL, &scanner, &error), EINVAL);
  assert_true(error.message[0] != '\0');
  assert_int_equal(sluice_scanner_open_with(ds, NULL, NULL, &error), EINVAL);
  // Planned rows of a split out of range (or of no dataset) are unknown.
  assert_int_equal(sluice_dataset_split_rows(ds, -1), -1);
  assert_int_equal(sluice_dataset_split_rows(ds, n), -1);
  assert_int_equal(sluice_dataset_split_rows(NULL, 0), -1);
  sluice_dataset_close(ds);

  // A dataset without splits: the default range is empty, not an error.
  ipc_path_or_skip("empty.arrow", path, sizeof path);
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  assert_int_equal(sluice_dataset_num_splits(ds), 0);
  struct split_totals totals;
  scan_split_totals(ds, NULL, 1, &totals);
  assert_int_equal(totals.total_batches, 0);
  struct sluice_scan_options scan;
  sluice_scan_options_init(&scan);
  scan.first_split = 1;
  assert_int_equal(sluice_scanner_open_with(ds, &scan, &scanner, &error), EINVAL);
  sluice_dataset_close(ds);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

/// Planned rows agree with the rows each split delivers (when known) and, for
/// Parquet, with the row groups pyarrow wrote.
static void check_planned_rows(struct sluice_dataset* ds, int must_know) {
  struct split_totals totals;
  scan_split_totals(ds, NULL, 1, &totals);
  for (int64_t i = 0; i < sluice_dataset_num_splits(ds); ++i) {
    int64_t planned = sluice_dataset_split_rows(ds, i);
    if (must_know) assert_true(planned >= 0);
    if (planned >= 0) assert_int_equal(planned, totals.rows[i]);
  }
}

static void test_scan_range_planned_rows(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  check_planned_rows(ds, 0);
  sluice_dataset_close(ds);

  if (sl_format_reader_find("parquet") == NULL) skip();
  // pyarrow writes row groups of 700 rows (the last shorter) and lists their
  // row counts from its own metadata, one per line.
  char counts_path[512], cmd[2048];
  test_temp_path("groups.parquet", path, sizeof path);
  test_temp_path("groups.txt", counts_path, sizeof counts_path);
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, pyarrow.parquet as pq, sys\n"
           "t=pa.table({'a':pa.array(range(5000),pa.int64()),'b':[str(x) for x in range(5000)]})\n"
           "pq.write_table(t, sys.argv[1], row_group_size=700)\n"
           "m=pq.ParquetFile(sys.argv[1]).metadata\n"
           "open(sys.argv[2],'w').write(''.join('%%d\\n' %% m.row_group(i).num_rows "
           "for i in range(m.num_row_groups)))\" '%s' '%s' 2>/dev/null",
           path, counts_path);
  if (system(cmd) != 0) skip();
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  check_planned_rows(ds, 1);
  FILE* f = fopen(counts_path, "r");
  assert_non_null(f);
  int64_t groups = 0;
  long long rows;
  while (fscanf(f, "%lld", &rows) == 1) {
    assert_int_equal(sluice_dataset_split_rows(ds, groups), rows);
    ++groups;
  }
  fclose(f);
  assert_int_equal(groups, sluice_dataset_num_splits(ds));
  assert_true(groups >= 7);
  // A range of row groups: their rows, under their own numbers.
  struct sluice_scan_options scan;
  sluice_scan_options_init(&scan);
  scan.first_split = 2;
  scan.n_splits = 3;
  scan.ordered = 0;
  struct split_totals totals;
  scan_split_totals(ds, &scan, 0, &totals);
  for (int64_t i = 0; i < groups; ++i) {
    assert_int_equal(totals.rows[i], i >= 2 && i < 5 ? sluice_dataset_split_rows(ds, i) : 0);
  }
  sluice_dataset_close(ds);
  unlink(path);
  unlink(counts_path);
}

/// A placed scan's release callback: counts its calls.
static void count_release(void* ctx) { ++*(int*)ctx; }

/// Parquet decodes flat fixed-width columns straight into the caller's
/// memory: each column's values land at its split's rows (and batches point
/// there); a column of another width, a string column and a range of splits
/// work as usual; release runs once, after the last array over the memory.
static void test_placed_scan(void** unused) {
  (void)unused;
  if (sl_format_reader_find("parquet") == NULL) skip();
  char path[512], cmd[2048];
  test_temp_path("placed.parquet", path, sizeof path);
  // a: int64 = i; b: float64 = i / 4 with every 7th null; s: strings; c: int32.
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, pyarrow.parquet as pq, sys\n"
           "n=5000\n"
           "t=pa.table({'a':pa.array(range(n),pa.int64()),"
           "'b':pa.array([None if i%%7==0 else i/4 for i in range(n)],pa.float64()),"
           "'s':[str(x) for x in range(n)],'c':pa.array(range(n),pa.int32())})\n"
           "pq.write_table(t, sys.argv[1], row_group_size=700)\" '%s' 2>/dev/null",
           path);
  if (system(cmd) != 0) skip();
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  int64_t n_splits = sluice_dataset_num_splits(ds);
  assert_true(n_splits >= 7);
  for (int ranged = 0; ranged < 2; ++ranged) {
    int64_t first = ranged ? 2 : 0, count = ranged ? 3 : n_splits, total = 0;
    int64_t planned[64];
    for (int64_t k = 0; k < count; ++k) {
      planned[k] = sluice_dataset_split_rows(ds, first + k);
      total += planned[k];
    }
    int64_t* a = calloc((size_t)total, 8);
    double* b = calloc((size_t)total, 8);
    int64_t* wrong = calloc((size_t)total, 8);  // c is int32: a width-8 place is refused
    assert_non_null(a);
    void* values[4] = {a, b, NULL, wrong};
    int32_t widths[4] = {8, 8, 0, 8};
    int released = 0;
    struct sluice_placement place = {4, values, widths, planned, count_release, &released};
    struct sluice_scan_options scan;
    sluice_scan_options_init(&scan);
    scan.first_split = first;
    scan.n_splits = ranged ? count : -1;
    scan.ordered = 0;
    scan.placement = &place;
    struct sluice_scanner* scanner = NULL;
    assert_int_equal(sluice_scanner_open_with(ds, &scan, &scanner, &error), 0);
    struct ArrowArray kept[64];
    int64_t n_kept = 0, rows = 0;
    for (;;) {
      struct ArrowArray batch;
      struct sluice_batch_tag tag;
      assert_int_equal(sluice_scanner_next(scanner, &batch, &tag, &error), 0);
      if (batch.release == NULL) break;
      int64_t at = batch.offset;
      for (int64_t k = 0; k < tag.split - first; ++k) at += planned[k];
      at += batch.children[0]->offset;
      // The placed columns' values are where the caller wanted them.
      assert_ptr_equal(batch.children[0]->buffers[1], a + (at - batch.children[0]->offset));
      assert_ptr_equal(batch.children[1]->buffers[1], b + (at - batch.children[1]->offset));
      assert_true((const void*)batch.children[3]->buffers[1] < (const void*)wrong ||
                  (const void*)batch.children[3]->buffers[1] >= (const void*)(wrong + total));
      rows += batch.length;
      kept[n_kept++] = batch;  // held past the scan: the memory must stay theirs
    }
    sluice_scanner_close(scanner);
    assert_int_equal(rows, total);
    assert_int_equal(released, 0);
    int64_t row0 = 0;
    for (int64_t k = 0; k < first; ++k) row0 += sluice_dataset_split_rows(ds, k);
    for (int64_t i = 0; i < total; ++i) {
      assert_int_equal(a[i], row0 + i);
      if ((row0 + i) % 7 != 0) assert_true(b[i] == (double)(row0 + i) / 4);
    }
    for (int64_t k = 0; k < n_kept; ++k) kept[k].release(&kept[k]);
    assert_int_equal(released, 1);
    free(a);
    free(b);
    free(wrong);
  }
  // A placement of the wrong shape: EINVAL, and release still runs once.
  int released = 0;
  int64_t rows1[64] = {0};
  void* values[1] = {NULL};
  int32_t widths[1] = {8};
  struct sluice_placement bad = {1, values, widths, rows1, count_release, &released};
  struct sluice_scan_options scan;
  sluice_scan_options_init(&scan);
  scan.placement = &bad;
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open_with(ds, &scan, &scanner, &error), EINVAL);
  assert_null(scanner);
  assert_int_equal(released, 1);
  sluice_dataset_close(ds);
  unlink(path);
}

struct range_run {
  const char* path;
  int64_t first_split, n_splits;  ///< the range scanned
  int64_t rows;                   ///< rows it must give
  int threads;
};

/// Opens, scans the run's range of splits as they finish and counts the rows.
static int scan_range_once(void* ctx, const struct sluice_allocator* alloc,
                           struct sluice_error* error) {
  const struct range_run* run = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.threads = run->threads;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(run->path, &options, &ds, error);
  if (rc != 0) return rc;
  struct sluice_scan_options scan;
  sluice_scan_options_init(&scan);
  scan.first_split = run->first_split;
  scan.n_splits = run->n_splits;
  scan.ordered = 0;
  struct sluice_scanner* scanner = NULL;
  rc = sluice_scanner_open_with(ds, &scan, &scanner, error);
  sluice_dataset_close(ds);
  if (rc != 0) return rc;
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    rc = sluice_scanner_next(scanner, &batch, NULL, error);
    if (rc != 0 || batch.release == NULL) break;
    rows += batch.length;
    batch.release(&batch);
  }
  sluice_scanner_close(scanner);
  if (rc == 0) assert_int_equal(rows, run->rows);
  return rc;
}

static void test_scan_range_allocation_failures(void** unused) {
  (void)unused;
  char path[512];
  ipc_path_or_skip("multi.arrow", path, sizeof path);
  struct range_run run = {path, 2, 3, 3 * IPC_ROWS, 1};
  assert_true(test_alloc_sweep(scan_range_once, &run, 2000) > 5);
}

struct named_run {
  const char* location;  ///< opened
  const char* name;      ///< what every message must hold
  int64_t rows;
};

/// Opens, reads the schema and scans (the stream and a scanner) `location`;
/// a failure's message must name the object, as sluice.h promises.
static int named_once(void* ctx, const struct sluice_allocator* alloc,
                      struct sluice_error* error) {
  const struct named_run* run = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.threads = 2;
  options.batch_size = 100;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(run->location, &options, &ds, error);
  struct ArrowSchema schema;
  if (rc == 0 && (rc = sluice_dataset_schema(ds, &schema, error)) == 0) schema.release(&schema);
  struct ArrowArrayStream stream;
  stream.release = NULL;
  if (rc == 0) rc = sluice_dataset_scan(ds, &stream, error);
  int64_t rows = 0;
  while (rc == 0) {
    struct ArrowArray batch;
    rc = stream.get_next(&stream, &batch);
    if (rc != 0) {
      snprintf(error->message, sizeof error->message, "%s", stream.get_last_error(&stream));
      error->code = rc;
    }
    if (rc != 0 || batch.release == NULL) break;
    rows += batch.length;
    batch.release(&batch);
  }
  if (stream.release != NULL) stream.release(&stream);
  struct sluice_scanner* scanner = NULL;
  int again = strstr(run->location, ".arrows") == NULL;  // (a stream is read once)
  if (rc == 0 && again) rc = sluice_scanner_open(ds, &scanner, error);
  while (rc == 0 && again) {
    struct ArrowArray batch;
    rc = sluice_scanner_next(scanner, &batch, NULL, error);
    if (rc != 0 || batch.release == NULL) break;
    batch.release(&batch);
  }
  sluice_scanner_close(scanner);
  sluice_dataset_close(ds);
  if (rc == 0) assert_int_equal(rows, run->rows);
  if (rc != 0 && strstr(error->message, run->name) == NULL) {
    fail_msg("the message names no object: \"%s\"", error->message);
  }
  return rc;
}

/// Every failed allocation of an open, a schema and a scan gives a message
/// naming the file, or for a directory one of its files or the directory,
/// in each format; an allocation's, the scan engine's and some readers'
/// messages named none ("scan: out of memory planning 5 splits", "out of
/// memory allocating a schema node (68 bytes)").
static void test_out_of_memory_names_the_object(void** unused) {
  (void)unused;
  char csv[512], dir[512];
  test_temp_path("oom_named.csv", csv, sizeof csv);
  test_temp_path("oom_named_dir", dir, sizeof dir);
  remove_tree(dir);
  FILE* f = fopen(csv, "w");
  assert_non_null(f);
  fprintf(f, "a,b,s\n");
  for (int i = 0; i < 1000; i++) fprintf(f, "%d,%d.5,v%d\n", i, i % 13, i % 7);
  assert_int_equal(fclose(f), 0);
  struct sluice_error error = {0, {0}};
  assert_int_equal(mkdir(dir, 0755), 0);
  static const char* const exts[] = {"parquet", "arrow", "arrows", "avro"};
  char paths[4][600];
  for (int e = 0; e < 4; e++) {
    snprintf(paths[e], sizeof paths[e], "%s/t.%s", dir, exts[e]);
    struct sluice_dataset* ds = NULL;
    struct sluice_open_options o;
    sluice_open_options_init(&o);
    o.batch_size = 200;  // several row groups, batches and blocks
    assert_int_equal(sluice_dataset_open(csv, &o, &ds, &error), 0);
    struct ArrowArrayStream stream;
    assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
    sluice_dataset_close(ds);
    struct sluice_write_options w;
    sluice_write_options_init(&w);
    w.no_fsync = 1;
    w.format_options = e == 0 ? "row_group_size=200" : NULL;
    if (sluice_write(&stream, paths[e], &w, &error) != 0) fail_msg("%s", error.message);
    stream.release(&stream);
  }
  struct named_run run = {csv, csv, 1000};
  assert_true(test_alloc_sweep(named_once, &run, 5000) > 5);
  for (int e = 0; e < 4; e++) {
    run = (struct named_run){paths[e], paths[e], 1000};
    assert_true(test_alloc_sweep(named_once, &run, 5000) > 5);
  }
  // A directory of two Parquet files: the file, or the directory, named.
  for (int e = 1; e < 4; e++) unlink(paths[e]);
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s/u.parquet'", paths[0], dir);
  assert_int_equal(system(cmd), 0);
  run = (struct named_run){dir, dir, 2000};
  assert_true(test_alloc_sweep(named_once, &run, 5000) > 5);
  remove_tree(dir);
  unlink(csv);
}

/// Messages are one line (sluice.h): a location, a filter or a format name
/// holding a newline is spelled with \n, as column names are; the text was
/// copied raw and broke the line. An ordinary path is shown as it is.
static void test_messages_stay_on_one_line(void** unused) {
  (void)unused;
  char csv[512], odd[600];
  test_temp_path("one_line.csv", csv, sizeof csv);
  assert_int_equal(test_write_file(csv, "a,b\n1,x\n", 8), 0);
  struct sluice_dataset* ds = NULL;
  struct sluice_error e;
  snprintf(odd, sizeof odd, "%s.d/no\nsuch.csv", csv);
  assert_int_equal(sluice_dataset_open(odd, NULL, &ds, &e), ENOENT);
  assert_null(strchr(e.message, '\n'));
  assert_non_null(strstr(e.message, "no\\nsuch.csv: "));
  struct sluice_open_options o;
  sluice_open_options_init(&o);
  o.format_options = "schema=a:int64";  // (a type given: its value refused at the open)
  o.filter = "a=1\n2";
  assert_int_equal(sluice_dataset_open(csv, &o, &ds, &e), EINVAL);
  assert_null(strchr(e.message, '\n'));
  assert_non_null(strstr(e.message, "filter 'a=1\\n2'"));
  o.filter = "a=1,\n,";
  assert_int_equal(sluice_dataset_open(csv, &o, &ds, &e), EINVAL);
  assert_null(strchr(e.message, '\n'));
  sluice_open_options_init(&o);
  o.format = "par\nquet";
  assert_int_equal(sluice_dataset_open(csv, &o, &ds, &e), EINVAL);
  assert_null(strchr(e.message, '\n'));
  assert_non_null(strstr(e.message, "unknown format 'par\\nquet'"));
  // Writes: the format name too.
  assert_int_equal(sluice_dataset_open(csv, NULL, &ds, &e), 0);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &e), 0);
  sluice_dataset_close(ds);
  struct sluice_write_options w;
  sluice_write_options_init(&w);
  w.format = "cs\nv";
  snprintf(odd, sizeof odd, "%s.out", csv);
  assert_int_equal(sluice_write(&stream, odd, &w, &e), EINVAL);
  assert_null(strchr(e.message, '\n'));
  assert_non_null(strstr(e.message, "'cs\\nv'"));
  stream.release(&stream);
  // An ordinary path is named as it is.
  snprintf(odd, sizeof odd, "%s.d/missing.csv", csv);
  assert_int_equal(sluice_dataset_open(odd, NULL, &ds, &e), ENOENT);
  assert_int_equal(strncmp(e.message, odd, strlen(odd)), 0);
  unlink(csv);
}

/// Allocation failures anywhere while expanding a glob, opening its files
/// and scanning them all: a clean error and nothing leaked.
static void test_directory_allocation_failures(void** unused) {
  (void)unused;
  if (sl_format_reader_find("arrow") == NULL) skip();
  char dir[512];
  test_temp_path("dataset_dir_alloc", dir, sizeof dir);
  remove_tree(dir);
  if (pyarrow_write_dir(dir, 0) != 0) skip();
  char glob[600];
  snprintf(glob, sizeof glob, "%s/p[0-2].arrow", dir);
  struct range_run run = {glob, 0, -1, 6 * IPC_ROWS, 2};
  assert_true(test_alloc_sweep(scan_range_once, &run, 2000) > 5);
  remove_tree(dir);
}

/* ---- Hive partitions and lists of locations ------------------------------------ */

/// A fresh temporary directory `name` (path into dir) filled by `script`,
/// Python run with pyarrow, pyarrow.parquet, os and d = the directory.
/// 0 on success (else the caller skips: no pyarrow).
static int pyarrow_tree(const char* name, const char* script, char* dir, size_t cap) {
  test_temp_path(name, dir, cap);
  remove_tree(dir);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, pyarrow.parquet as pq, sys, os\n"
           "d=sys.argv[1]\n%s\" '%s' 2>/dev/null", script, dir);
  return system(cmd);
}

/// The stream's next batch; a failure's code and message go into `error`.
static int next_batch(struct ArrowArrayStream* stream, struct ArrowArray* batch,
                      struct sluice_error* error) {
  int rc = stream->get_next(stream, batch);
  if (rc != 0) {
    snprintf(error->message, sizeof error->message, "%s", stream->get_last_error(stream));
    error->code = rc;
  }
  return rc;
}

struct hive_run {
  const char* const* locations;
  size_t n;
  const char* filter;  ///< partition filter: "k!=2" keeps k = 1 and 3
};

/// Opens the run's locations (one: with its partitions; several: as a list),
/// reads columns city, a, k and checks every row. Returns the status.
static int hive_once(void* ctx, const struct sluice_allocator* alloc, struct sluice_error* error) {
  const struct hive_run* run = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.threads = 2;
  const char* cols[] = {"city", "a", "k"};
  int partitioned = run->n == 1;
  options.columns = partitioned ? cols : cols + 1;
  options.n_columns = partitioned ? 3 : 1;
  options.partition_filter = run->filter;
  struct sluice_dataset* ds = NULL;
  int rc = run->n == 1 ? sluice_dataset_open(run->locations[0], &options, &ds, error)
                       : sluice_dataset_open_many(run->locations, run->n, &options, &ds, error);
  if (rc != 0) return rc;
  struct ArrowArrayStream stream;
  rc = sluice_dataset_scan(ds, &stream, error);
  sluice_dataset_close(ds);
  if (rc != 0) return rc;
  int64_t rows = 0, sum = 0;
  for (;;) {
    struct ArrowArray batch;
    if ((rc = next_batch(&stream, &batch, error)) != 0) break;
    if (batch.release == NULL) break;
    assert_int_equal(batch.n_children, partitioned ? 3 : 1);
    const struct ArrowArray* a = batch.children[partitioned ? 1 : 0];
    for (int64_t r = 0; r < batch.length; ++r) {
      int64_t v = ((const int64_t*)a->buffers[1])[a->offset + batch.offset + r];
      sum += v;
      if (!partitioned) continue;
      const struct ArrowArray* k = batch.children[2];
      const struct ArrowArray* city = batch.children[0];
      assert_int_equal(((const int64_t*)k->buffers[1])[k->offset + batch.offset + r], v / 100);
      int64_t at = city->offset + batch.offset + r;
      if (v / 100 == 2) {
        assert_int_equal(city->null_count, city->length);
      } else {
        const int32_t* off = city->buffers[1];
        assert_int_equal(off[at + 1] - off[at], 3);
        assert_memory_equal((const char*)city->buffers[2] + off[at], "x y", 3);
      }
    }
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  if (rc == 0) {
    int64_t all = 100 + (200 + 201) + (300 + 301 + 302);
    if (run->filter != NULL) {
      assert_int_equal(rows, 4);
      assert_int_equal(sum, all - (200 + 201));
    } else {
      assert_int_equal(rows, partitioned ? 6 : 7);
      assert_int_equal(sum, partitioned ? all : all + 100);
    }
  }
  return rc;
}

/// union_by_name over three Parquet files: f1 (a, b), f2 (a, c), f3 (c, b,
/// a): the dataset is (a, b, c), rows null where their file lacks the
/// column; projected by name in another order too. Every allocation failure
/// is an error, never a leak.
struct union_run {
  const char* dir;
  int project;  ///< read c, a instead of all
};

static int union_once(void* ctx, const struct sluice_allocator* alloc,
                      struct sluice_error* error) {
  const struct union_run* run = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.threads = 2;
  options.union_by_name = 1;
  const char* cols[] = {"c", "a"};
  if (run->project) {
    options.columns = cols;
    options.n_columns = 2;
  }
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(run->dir, &options, &ds, error);
  if (rc != 0) return rc;
  struct ArrowSchema schema;
  rc = sluice_dataset_schema(ds, &schema, error);
  if (rc == 0) {
    assert_int_equal(schema.n_children, run->project ? 2 : 3);
    const char* want = run->project ? "c,a" : "a,b,c";
    char got[32] = "";
    for (int64_t c = 0; c < schema.n_children; ++c) {
      strcat(got, c > 0 ? "," : "");
      strcat(got, schema.children[c]->name);
    }
    assert_string_equal(got, want);
    schema.release(&schema);
  }
  if (rc == 0 && !run->project) {  // from the footers, a column's absence as nulls
    struct sluice_column_stats* stats = NULL;
    int64_t n = 0;
    rc = sluice_dataset_stored_stats(ds, &stats, &n, error);
    if (rc == 0) {
      assert_int_equal(n, 3);
      const int64_t nulls[] = {0, 1, 2};
      const char* lo[] = {"1", "x", "1.5"};
      const char* hi[] = {"4", "z", "2.5"};
      for (int64_t c = 0; c < 3; ++c) {
        assert_int_equal(stats[c].count, 4);
        assert_int_equal(stats[c].null_count, nulls[c]);
        assert_true(stats[c].from_metadata && stats[c].has_min_max);
        assert_string_equal(stats[c].min, lo[c]);
        assert_string_equal(stats[c].max, hi[c]);
      }
      sluice_stats_free(stats, n);
    }
  }
  struct ArrowArrayStream stream;
  if (rc == 0) rc = sluice_dataset_scan(ds, &stream, error);
  sluice_dataset_close(ds);
  if (rc != 0) return rc;
  int64_t rows = 0, sum_a = 0, c_nulls = 0, b_nulls = 0;
  double sum_c = 0;
  int64_t ia = run->project ? 1 : 0, ic = run->project ? 0 : 2;
  for (;;) {
    struct ArrowArray batch;
    if ((rc = next_batch(&stream, &batch, error)) != 0) break;
    if (batch.release == NULL) break;
    const struct ArrowArray* a = batch.children[ia];
    const struct ArrowArray* c = batch.children[ic];
    for (int64_t r = 0; r < batch.length; ++r) {
      sum_a += ((const int64_t*)a->buffers[1])[a->offset + batch.offset + r];
      int64_t at = c->offset + batch.offset + r;
      const uint8_t* valid = c->buffers[0];
      if (valid != NULL && !(valid[at >> 3] & (1u << (at & 7)))) {
        c_nulls++;
      } else {
        sum_c += ((const double*)c->buffers[1])[at];
      }
      if (!run->project) {
        const struct ArrowArray* b = batch.children[1];
        int64_t bt = b->offset + batch.offset + r;
        const uint8_t* bv = b->buffers[0];
        b_nulls += bv != NULL && !(bv[bt >> 3] & (1u << (bt & 7)));
      }
    }
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  if (rc == 0) {
    assert_int_equal(rows, 4);
    assert_int_equal(sum_a, 10);
    assert_int_equal(c_nulls, 2);
    assert_true(sum_c == 4.0);
    assert_int_equal(b_nulls, run->project ? 0 : 1);
  }
  return rc;
}

/// union_by_name over k=1/f.parquet (a, k) and k=2/f.parquet (a): k's sum
/// is 1 + 1 + 2; with a partition filter choosing k=2 the columns stay (a,
/// k), k=1's object opened for them only.
struct union_hive_run {
  const char* dir;
  const char* partitions;
  int64_t rows, sum_k;
};

static int union_hive_once(void* ctx, const struct sluice_allocator* alloc,
                           struct sluice_error* error) {
  const struct union_hive_run* run = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.union_by_name = 1;
  options.partition_filter = run->partitions;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(run->dir, &options, &ds, error);
  if (rc != 0) return rc;
  struct ArrowArrayStream stream;
  rc = sluice_dataset_scan(ds, &stream, error);
  sluice_dataset_close(ds);
  if (rc != 0) return rc;
  int64_t rows = 0, sum_k = 0;
  for (;;) {
    struct ArrowArray batch;
    if ((rc = next_batch(&stream, &batch, error)) != 0) break;
    if (batch.release == NULL) break;
    assert_int_equal(batch.n_children, 2);
    const struct ArrowArray* k = batch.children[1];
    for (int64_t r = 0; r < batch.length; ++r) {
      sum_k += ((const int64_t*)k->buffers[1])[k->offset + batch.offset + r];
    }
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  if (rc == 0) {
    assert_int_equal(rows, run->rows);
    assert_int_equal(sum_k, run->sum_k);
  }
  return rc;
}

/// Columns of type null (pandas' all-None columns) beside typed ones, with
/// and without union_by_name: f1 (a, b null, l null), f2 (a, b string, l
/// list<int64>), f3 (a, b null, l list with a null). b and l read as
/// string and list, null in the objects that have them as type null (also
/// in the footers' statistics). Every allocation failure is an error,
/// never a leak.
struct union_null_run {
  const char* dir;
  int union_by_name;
};

static int union_null_once(void* ctx, const struct sluice_allocator* alloc,
                           struct sluice_error* error) {
  const struct union_null_run* run = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.union_by_name = run->union_by_name;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(run->dir, &options, &ds, error);
  if (rc != 0) return rc;
  struct ArrowSchema schema;
  rc = sluice_dataset_schema(ds, &schema, error);
  if (rc == 0) {
    assert_int_equal(schema.n_children, 3);
    assert_string_equal(schema.children[1]->format, "u");
    assert_string_equal(schema.children[2]->format, "+l");
    assert_string_equal(schema.children[2]->children[0]->format, "l");
    assert_true(schema.children[1]->flags & ARROW_FLAG_NULLABLE);
    schema.release(&schema);
  }
  if (rc == 0) {
    struct sluice_column_stats* stats = NULL;
    int64_t n = 0;
    rc = sluice_dataset_stored_stats(ds, &stats, &n, error);
    if (rc == 0) {
      assert_int_equal(n, 3);
      assert_int_equal(stats[1].count, 4);
      assert_int_equal(stats[1].null_count, 3);
      assert_true(stats[1].has_min_max);
      assert_string_equal(stats[1].min, "x");
      sluice_stats_free(stats, n);
    }
  }
  struct ArrowArrayStream stream;
  if (rc == 0) rc = sluice_dataset_scan(ds, &stream, error);
  sluice_dataset_close(ds);
  if (rc != 0) return rc;
  int64_t rows = 0, b_nulls = 0, l_nulls = 0, l_sum = 0;
  for (;;) {
    struct ArrowArray batch;
    if ((rc = next_batch(&stream, &batch, error)) != 0) break;
    if (batch.release == NULL) break;
    assert_int_equal(batch.n_children, 3);
    const struct ArrowArray *b = batch.children[1], *l = batch.children[2];
    assert_int_equal(b->n_buffers, 3);
    assert_int_equal(l->n_buffers, 2);
    for (int64_t r = 0; r < batch.length; ++r) {
      int64_t bt = b->offset + batch.offset + r, lt = l->offset + batch.offset + r;
      const uint8_t *bv = b->buffers[0], *lv = l->buffers[0];
      b_nulls += b->null_count != 0 && bv != NULL && !(bv[bt >> 3] & (1u << (bt & 7)));
      if (l->null_count != 0 && lv != NULL && !(lv[lt >> 3] & (1u << (lt & 7)))) {
        l_nulls++;
        continue;
      }
      const int32_t* off = l->buffers[1];
      const struct ArrowArray* item = l->children[0];
      for (int32_t k = off[lt]; k < off[lt + 1]; ++k) {
        l_sum += ((const int64_t*)item->buffers[1])[item->offset + k];
      }
    }
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  if (rc == 0) {
    assert_int_equal(rows, 4);
    assert_int_equal(b_nulls, 3);
    assert_int_equal(l_nulls, 3);
    assert_int_equal(l_sum, 11);
  }
  return rc;
}

static void test_union_by_name(void** unused) {
  (void)unused;
  char dir[512];
  if (sl_format_reader_find("parquet") == NULL ||
      pyarrow_tree("dataset_union",
                   "os.makedirs(d)\n"
                   "pq.write_table(pa.table({'a': [1, 2], 'b': ['x', 'y']}), d + '/f1.parquet')\n"
                   "pq.write_table(pa.table({'a': [3], 'c': [1.5]}), d + '/f2.parquet')\n"
                   "pq.write_table(pa.table({'c': [2.5], 'b': ['z'], 'a': [4]}), "
                   "d + '/f3.parquet')",
                   dir, sizeof dir) != 0) {
    skip();
  }
  struct sluice_error error = {0, {0}};
  for (int project = 0; project < 2; ++project) {
    struct union_run run = {dir, project};
    assert_int_equal(union_once(&run, NULL, &error), 0);
    assert_true(test_alloc_sweep(union_once, &run, 3000) > 5);
  }
  remove_tree(dir);
  // A partition key that one object has as a column: the other's rows take
  // the directory's value (k = 1, 1 from the file, 2 from k=2/).
  if (pyarrow_tree("dataset_union_hive",
                   "os.makedirs(d + '/k=1'); os.makedirs(d + '/k=2')\n"
                   "pq.write_table(pa.table({'a': [1, 2], 'k': [1, 1]}), d + '/k=1/f.parquet')\n"
                   "pq.write_table(pa.table({'a': [3]}), d + '/k=2/f.parquet')",
                   dir, sizeof dir) != 0) {
    skip();
  }
  struct union_hive_run all = {dir, NULL, 3, 4}, chosen = {dir, "k=2", 1, 2};
  assert_true(test_alloc_sweep(union_hive_once, &all, 3000) > 5);
  assert_true(test_alloc_sweep(union_hive_once, &chosen, 3000) > 5);
  remove_tree(dir);
  if (pyarrow_tree("dataset_union",
                   "os.makedirs(d)\n"
                   "pq.write_table(pa.table({'a': [1]}), d + '/f1.parquet')\n"
                   "pq.write_table(pa.table({'b': [2]}), d + '/f2.parquet')",
                   dir, sizeof dir) != 0) {
    skip();
  }
  // Without union_by_name the columns must agree, and the message says so.
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  struct sluice_dataset* ds = NULL;
  assert_int_equal(sluice_dataset_open(dir, &options, &ds, &error), EINVAL);
  assert_non_null(strstr(error.message, "union_by_name"));
  remove_tree(dir);
  // A column of type null joins any type.
  if (pyarrow_tree("dataset_union_null",
                   "os.makedirs(d)\n"
                   "pq.write_table(pa.table({'a': [1, 2], 'b': pa.nulls(2), 'l': pa.nulls(2)}), "
                   "d + '/f1.parquet')\n"
                   "pq.write_table(pa.table({'a': [3], 'b': ['x'], 'l': [[5, 6]]}), "
                   "d + '/f2.parquet')\n"
                   "pq.write_table(pa.table({'a': [4], 'b': pa.nulls(1), "
                   "'l': pa.array([None], pa.list_(pa.int64()))}), d + '/f3.parquet')",
                   dir, sizeof dir) != 0) {
    skip();
  }
  for (int by_name = 0; by_name < 2; ++by_name) {
    struct union_null_run run = {dir, by_name};
    assert_int_equal(union_null_once(&run, NULL, &error), 0);
    assert_true(test_alloc_sweep(union_null_once, &run, 3000) > 5);
  }
  remove_tree(dir);
}

/// dir/k=K/city=C/p.arrow (column a, K values from K * 100) for K = 1, 2, 3
/// and cities "x y" (as x%20y) and null (the Hive spelling).
static void test_hive_partitions_and_lists(void** unused) {
  (void)unused;
  char dir[512];
  if (sl_format_reader_find("arrow") == NULL ||
      pyarrow_tree("dataset_hive",
                   "for k in (1, 2, 3):\n"
                   "  c='x%20y' if k != 2 else '__HIVE_DEFAULT_PARTITION__'\n"
                   "  p=d+'/k=%d/city=%s' % (k, c); os.makedirs(p)\n"
                   "  t=pa.table({'a': pa.array(range(k*100, k*100+k), pa.int64())})\n"
                   "  with pa.ipc.new_file(p+'/p.arrow', t.schema) as f: f.write_table(t)\n",
                   dir, sizeof dir) != 0) {
    skip();
  }
  const char* one[] = {dir};
  struct hive_run run = {one, 1, NULL};
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  assert_int_equal(hive_once(&run, sluice_default_allocator(), &error), 0);
  assert_true(test_alloc_sweep(hive_once, &run, 3000) > 5);
  run.filter = "k!=2";  // pruned: k=2's object is never opened
  assert_int_equal(hive_once(&run, sluice_default_allocator(), &error), 0);
  assert_true(test_alloc_sweep(hive_once, &run, 3000) > 5);
  // A list: k=1's file again after the whole directory (a glob), no partitions.
  char glob[600], first[640];
  snprintf(glob, sizeof glob, "%s/*/*/p.arrow", dir);
  snprintf(first, sizeof first, "%s/k=1/city=x%%20y/p.arrow", dir);
  const char* many[] = {glob, first};
  run = (struct hive_run){many, 2, NULL};
  assert_int_equal(hive_once(&run, sluice_default_allocator(), &error), 0);
  assert_true(test_alloc_sweep(hive_once, &run, 3000) > 5);
  const char* bad[] = {first, "-"};
  struct sluice_dataset* ds = NULL;
  assert_int_equal(sluice_dataset_open_many(bad, 2, NULL, &ds, &error), EINVAL);
  assert_non_null(strstr(error.message, "standard input"));
  // A projection keeps a filter's columns in the full schema, and the keys
  // are told from the objects' columns (the Python layer checks filter
  // values' types with them).
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  const char* only_a[] = {"a"};
  options.columns = only_a;
  options.n_columns = 1;
  assert_int_equal(sluice_dataset_open(dir, &options, &ds, &error), 0);
  struct ArrowSchema full, projected;
  assert_int_equal(sluice_dataset_schema(ds, &projected, &error), 0);
  assert_int_equal(sluice_dataset_full_schema(ds, &full, &error), 0);
  assert_int_equal(projected.n_children, 1);
  assert_int_equal(full.n_children, 3);
  assert_string_equal(full.children[1]->name, "k");
  assert_string_equal(full.children[1]->format, "l");
  projected.release(&projected);
  full.release(&full);
  assert_int_equal(sluice_dataset_is_partition_key(ds, "k"), 1);
  assert_int_equal(sluice_dataset_is_partition_key(ds, "city"), 1);
  assert_int_equal(sluice_dataset_is_partition_key(ds, "a"), 0);
  assert_int_equal(sluice_dataset_is_partition_key(ds, "nope"), 0);
  assert_int_equal(sluice_dataset_full_schema(ds, NULL, &error), EINVAL);
  sluice_dataset_close(ds);
  remove_tree(dir);
}

/// A directory of Parquet files and what its stored statistics must say,
/// column by column: the whole count and the extremes of different files.
struct stats_case {
  const char* name;
  const char* script;  ///< pyarrow_tree's
  int64_t n_columns;
  const char* columns[2];
  int64_t count;
  const char* min[2];
  const char* max[2];
  char dir[512];
};

/// Stored statistics (then computed ones) of a case's directory: every
/// allocation failure a clean ENOMEM, the success the case's figures.
static int stored_stats_once(void* ctx, const struct sluice_allocator* alloc,
                             struct sluice_error* error) {
  const struct stats_case* want = ctx;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(want->dir, &options, &ds, error);
  if (rc != 0) return rc;
  struct sluice_column_stats* stats = NULL;
  int64_t n = 0;
  rc = sluice_dataset_stored_stats(ds, &stats, &n, error);
  // From the footers, or (when an allocation there failed) from a scan.
  for (int pass = 0; pass < 2 && rc == 0; ++pass) {
    assert_int_equal(n, want->n_columns);
    for (int64_t c = 0; c < n; ++c) {
      assert_string_equal(stats[c].name, want->columns[c]);
      assert_int_equal(stats[c].count, want->count);
      assert_true(stats[c].has_min_max);
      assert_string_equal(stats[c].min, want->min[c]);
      assert_string_equal(stats[c].max, want->max[c]);
    }
    sluice_stats_free(stats, n);
    if (pass == 0) rc = sluice_dataset_stats(ds, &stats, &n, error);
  }
  sluice_dataset_close(ds);
  return rc;
}

/// Stored statistics merged over the files of a directory, and over a
/// partitioned one (a from the footers, k from the key=value directories).
static void test_directory_stored_stats_allocation_failures(void** unused) {
  (void)unused;
  if (sl_format_reader_find("parquet") == NULL) skip();
  struct stats_case cases[] = {
      {"dataset_dir_stats",
       "os.makedirs(d)\n"
       "for k, (lo, hi) in enumerate([(0, 100), (-100, 0), (200, 300)]):\n"
       "  pq.write_table(pa.table({'a': list(range(lo, hi))}), d + f'/p{k}.parquet')\n",
       1, {"a", NULL}, 300, {"-100", NULL}, {"299", NULL}, ""},
      {"dataset_hive_pq",  // k=K/p.parquet, a = K * 100 .. K * 100 + K - 1
       "for k in (1, 2, 3):\n"
       "  p=d+'/k=%d' % k; os.makedirs(p)\n"
       "  pq.write_table(pa.table({'a': pa.array(range(k*100, k*100+k), pa.int64())}), "
       "p+'/p.parquet')\n",
       2, {"a", "k"}, 6, {"100", "1"}, {"302", "3"}, ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    struct stats_case* c = &cases[i];
    if (pyarrow_tree(c->name, c->script, c->dir, sizeof c->dir) != 0) skip();
    struct sluice_error error;
    memset(&error, 0, sizeof error);
    assert_int_equal(stored_stats_once(c, sluice_default_allocator(), &error), 0);
    assert_true(test_alloc_sweep(stored_stats_once, c, 3000) > 5);
    remove_tree(c->dir);
  }
}

/* ---- Refining types inferred from a sample --------------------------------- */

/// Drains a scan of `ds`: rows and the sum of double column 0 (or of int64
/// column 0 when `ints`), or the first error.
static int drain_sum(struct sluice_dataset* ds, int ints, int64_t* rows, double* sum,
                     struct ArrowArrayStream* stream) {
  *rows = 0;
  *sum = 0;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  assert_int_equal(sluice_dataset_scan(ds, stream, &error), 0);
  for (;;) {
    struct ArrowArray batch;
    int rc = stream->get_next(stream, &batch);
    if (rc != 0) return rc;
    if (batch.release == NULL) return 0;
    const struct ArrowArray* a = batch.children[0];
    for (int64_t i = 0; i < a->length; ++i) {
      *sum += ints ? (double)((const int64_t*)a->buffers[1])[a->offset + i]
                   : ((const double*)a->buffers[1])[a->offset + i];
    }
    *rows += batch.length;
    batch.release(&batch);
  }
}

static void test_csv_refine_after_a_late_value(void** unused) {
  (void)unused;
  // Quoted fields keep the stretches further on out of the sample, so only
  // the first 1 KiB is sampled: column a is inferred int64, then row 3000
  // holds 0.5.
  enum { ROWS = 4000, LATE = 3000 };
  char* text = malloc((size_t)ROWS * 24 + 16);
  assert_non_null(text);
  size_t at = (size_t)sprintf(text, "a,s\n");
  double want = 0;
  for (int i = 0; i < ROWS; ++i) {
    if (i == LATE) {
      at += (size_t)sprintf(text + at, "0.5,\"x\"\n");
      want += 0.5;
    } else {
      at += (size_t)sprintf(text + at, "%d,\"x\"\n", i);
      want += i;
    }
  }
  char path[512];
  test_temp_path("late.csv", path, sizeof path);
  assert_int_equal(test_write_file(path, text, at), 0);
  free(text);

  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.format_options = "infer_bytes=1k";
  options.threads = 2;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct sluice_dataset* ds = NULL;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  struct ArrowSchema schema;
  assert_int_equal(sluice_dataset_schema(ds, &schema, &error), 0);
  assert_string_equal(schema.children[0]->format, "l");
  schema.release(&schema);
  int changed = -1;
  assert_int_equal(sluice_dataset_refine(ds, &changed, &error), 0);
  assert_int_equal(changed, 0);  // nothing found yet

  int64_t rows;
  double sum;
  struct ArrowArrayStream stream;
  assert_int_equal(drain_sum(ds, 1, &rows, &sum, &stream), EILSEQ);
  assert_non_null(strstr(stream.get_last_error(&stream), "'0.5' as int64"));
  // The failed scan is still open: its splits read the reader's types.
  assert_int_equal(sluice_dataset_refine(ds, &changed, &error), EBUSY);
  stream.release(&stream);
  assert_int_equal(sluice_dataset_refine(ds, &changed, &error), 0);
  assert_int_equal(changed, 1);
  assert_int_equal(sluice_dataset_schema(ds, &schema, &error), 0);
  assert_string_equal(schema.children[0]->format, "g");
  assert_string_equal(schema.children[1]->format, "u");
  schema.release(&schema);

  assert_int_equal(drain_sum(ds, 0, &rows, &sum, &stream), 0);
  assert_int_equal(stream.get_schema(&stream, &schema), 0);
  assert_string_equal(schema.children[0]->format, "g");
  schema.release(&schema);
  stream.release(&stream);
  assert_int_equal(rows, ROWS);
  assert_true(sum == want);
  assert_int_equal(sluice_dataset_refine(ds, &changed, &error), 0);
  assert_int_equal(changed, 0);

  // A type the caller gave is not refined: the error stands.
  sluice_dataset_close(ds);
  options.format_options = "infer_bytes=1k,schema=a:int64";
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  assert_int_equal(drain_sum(ds, 1, &rows, &sum, &stream), EILSEQ);
  stream.release(&stream);
  assert_int_equal(sluice_dataset_refine(ds, &changed, &error), 0);
  assert_int_equal(changed, 0);
  sluice_dataset_close(ds);
  remove(path);
}

/// CSV with union_by_name: a.csv (x, v) whose v holds 0.5 past the 1 KiB
/// sample, b.csv (v, y), c.csv (y, x). The dataset is (x, v, y); the first
/// scan stops at the late value, the refine widens v in a.csv and, matched
/// by name, in b.csv, and the second scan reads v as float64 from both.
/// Every allocation failure on the way is an error, never a leak.
struct csv_union_sums {
  int64_t rows, sum_x, x_nulls, v_nulls, y_nulls;
  double sum_v;
};

static int csv_union_drain(struct sluice_dataset* ds, struct csv_union_sums* out,
                           struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  struct ArrowArrayStream stream;
  int rc = sluice_dataset_scan(ds, &stream, error);
  if (rc != 0) return rc;
  struct ArrowSchema schema;
  rc = stream.get_schema(&stream, &schema);
  if (rc != 0) {
    snprintf(error->message, sizeof error->message, "%s", stream.get_last_error(&stream));
    error->code = rc;
    stream.release(&stream);
    return rc;
  }
  assert_int_equal(schema.n_children, 3);
  const int v_double = strcmp(schema.children[1]->format, "g") == 0;
  schema.release(&schema);
  for (;;) {
    struct ArrowArray batch;
    if ((rc = next_batch(&stream, &batch, error)) != 0 || batch.release == NULL) break;
    for (int64_t r = 0; r < batch.length; ++r) {
      int64_t nulls[3] = {0, 0, 0};
      for (int c = 0; c < 3; ++c) {
        const struct ArrowArray* col = batch.children[c];
        int64_t at = col->offset + batch.offset + r;
        const uint8_t* valid = col->buffers[0];
        nulls[c] = valid != NULL && !(valid[at >> 3] & (1u << (at & 7)));
        if (nulls[c] || c == 2) continue;
        if (c == 0) out->sum_x += ((const int64_t*)col->buffers[1])[at];
        if (c == 1) {
          out->sum_v += v_double ? ((const double*)col->buffers[1])[at]
                                 : (double)((const int64_t*)col->buffers[1])[at];
        }
      }
      out->x_nulls += nulls[0];
      out->v_nulls += nulls[1];
      out->y_nulls += nulls[2];
    }
    out->rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  return rc;
}

struct csv_union_run {
  const char* dir;
  /// > 0: a test_allocator that fails nothing until the refine, and then
  /// its refine_fail_at-th allocation from there
  long long refine_fail_at;
};

static int csv_union_once(void* ctx, const struct sluice_allocator* alloc,
                          struct sluice_error* error) {
  const struct csv_union_run* run = ctx;
  const char* dir = run->dir;
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = alloc;
  options.threads = 2;
  options.union_by_name = 1;
  options.format_options = "infer_bytes=1k";
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(dir, &options, &ds, error);
  if (rc != 0) return rc;
  struct ArrowSchema schema;
  rc = sluice_dataset_schema(ds, &schema, error);
  if (rc == 0) {
    assert_int_equal(schema.n_children, 3);
    assert_string_equal(schema.children[0]->name, "x");
    assert_string_equal(schema.children[1]->name, "v");
    assert_string_equal(schema.children[2]->name, "y");
    assert_string_equal(schema.children[1]->format, "l");  // (from the samples)
    schema.release(&schema);
  }
  struct csv_union_sums sums;
  if (rc == 0) rc = csv_union_drain(ds, &sums, error);
  assert_int_not_equal(rc, 0);  // the late value
  if (rc == EILSEQ) {
    assert_non_null(strstr(error->message, "a.csv"));
    assert_non_null(strstr(error->message, "'0.5' as int64"));
    int changed = 0;
    if (run->refine_fail_at > 0) {  // the k-th allocation from here fails
      struct test_allocator* ta = (struct test_allocator*)alloc;  // (base is its first member)
      atomic_store(&ta->fail_at, atomic_load(&ta->allocations) + run->refine_fail_at);
    }
    rc = sluice_dataset_refine(ds, &changed, error);
    if (rc == 0) assert_int_equal(changed, 1);
    if (rc == 0) rc = sluice_dataset_schema(ds, &schema, error);
    if (rc == 0) {
      assert_string_equal(schema.children[0]->format, "l");
      assert_string_equal(schema.children[1]->format, "g");
      assert_string_equal(schema.children[2]->format, "u");
      schema.release(&schema);
    }
    if (rc == 0) rc = csv_union_drain(ds, &sums, error);
    if (rc == 0) {
      assert_int_equal(sums.rows, 3001 + 2 + 1);
      assert_int_equal(sums.sum_x, 3000 * 2999 / 2 + 3000 + 7);
      assert_true(sums.sum_v == 3000.0 * 2999 / 2 + 0.5 + 1 + 2);
      assert_int_equal(sums.x_nulls, 2);
      assert_int_equal(sums.v_nulls, 1);
      assert_int_equal(sums.y_nulls, 3001);
    }
  }
  sluice_dataset_close(ds);
  return rc;
}

static void test_csv_union_by_name_refine(void** unused) {
  (void)unused;
  char dir[512], path[600];
  test_temp_path("csv_union", dir, sizeof dir);
  remove_tree(dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  size_t cap = 3001 * 24 + 16, at = 0;
  char* text = malloc(cap);
  assert_non_null(text);
  at += (size_t)snprintf(text, cap, "x,v\n");
  for (int i = 0; i < 3000; ++i) at += (size_t)snprintf(text + at, cap - at, "%d,%d\n", i, i);
  at += (size_t)snprintf(text + at, cap - at, "3000,0.5\n");
  snprintf(path, sizeof path, "%s/a.csv", dir);
  assert_int_equal(test_write_file(path, text, at), 0);
  free(text);
  snprintf(path, sizeof path, "%s/b.csv", dir);
  assert_int_equal(test_write_file(path, "v,y\n1,p\n2,q\n", 12), 0);
  snprintf(path, sizeof path, "%s/c.csv", dir);
  assert_int_equal(test_write_file(path, "y,x\nr,7\n", 8), 0);
  struct sluice_error error = {0, {0}};
  struct csv_union_run run = {dir, 0};
  assert_int_equal(csv_union_once(&run, NULL, &error), 0);
  assert_true(test_alloc_sweep(csv_union_once, &run, 20000) > 5);
  // The sweep ends at the first run that gets by without an allocation
  // (a tolerated one in the scan): the refine and the scan after it fail
  // their allocations one by one here.
  long long failures = 0;
  for (run.refine_fail_at = 1; run.refine_fail_at < 20000; ++run.refine_fail_at) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    memset(&error, 0, sizeof error);
    int rc = csv_union_once(&run, &ta.base, &error);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
    if (rc == 0) break;
    assert_int_equal(rc, ENOMEM);
    assert_true(error.message[0] != '\0');
    failures++;
  }
  assert_true(failures > 5);
  remove_tree(dir);
}

/* ---- Freed batch buffers are reused ------------------------------------------ */

/// A streaming consumer frees each batch before taking the next: with the
/// default allocator the next batches are decoded into those buffers (the
/// dataset's sl_buffer_cache), and every value is still right. A batch kept
/// past sluice_dataset_close stays valid and is freed after it.
static void test_freed_batches_are_reused(void** unused) {
  (void)unused;
  enum { ROWS = 400000 };
  size_t cap = (size_t)ROWS * 24 + 16;
  char* text = malloc(cap);
  assert_non_null(text);
  size_t at = (size_t)sprintf(text, "a,b\n");
  for (int i = 0; i < ROWS; ++i) at += (size_t)sprintf(text + at, "%d,%d.5\n", i, i % 1000);
  char path[512];
  test_temp_path("reuse.csv", path, sizeof path);
  assert_int_equal(test_write_file(path, text, at), 0);
  free(text);

  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.batch_size = 16384;  // 128 KiB per column: above the cache's floor
  options.format_options = "split_size=1m";
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct sluice_dataset* ds = NULL;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  struct sluice_buffer_cache* cache = sl_dataset_buffer_cache(ds);
  assert_non_null(cache);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  int64_t rows = 0;
  struct ArrowArray last;
  memset(&last, 0, sizeof last);
  for (;;) {
    struct ArrowArray batch;
    int rc = stream.get_next(&stream, &batch);
    if (rc != 0) fail_msg("get_next: %s", stream.get_last_error(&stream));
    if (batch.release == NULL) break;
    const int64_t* a = (const int64_t*)batch.children[0]->buffers[1] + batch.children[0]->offset;
    const double* b = (const double*)batch.children[1]->buffers[1] + batch.children[1]->offset;
    for (int64_t i = 0; i < batch.length; ++i) {
      if (a[i] != rows + i || b[i] != (double)((rows + i) % 1000) + 0.5) {
        fail_msg("row %lld: %lld, %g", (long long)(rows + i), (long long)a[i], b[i]);
      }
    }
    rows += batch.length;
    if (last.release != NULL) last.release(&last);
    last = batch;  // kept: the last one outlives the dataset
  }
  assert_int_equal(rows, ROWS);
  assert_true(sl_buffer_cache_reuses(cache) > 0);
  stream.release(&stream);
  sluice_dataset_close(ds);
  const int64_t* a = (const int64_t*)last.children[0]->buffers[1] + last.children[0]->offset;
  assert_int_equal(a[last.length - 1], ROWS - 1);
  last.release(&last);

  // A caller's allocator is used as given: no cache.
  struct test_allocator ta;
  test_allocator_init(&ta);
  options.allocator = &ta.base;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  assert_null(sl_dataset_buffer_cache(ds));
  sluice_dataset_close(ds);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  remove(path);
}

/// Reads `path` (CSV a,b written by write_ab_csv with `shift`) through
/// `alloc`, keeping every batch, checks every value and releases them.
static void read_ab_and_drop(const char* path, const struct sluice_allocator* alloc, int rows,
                             int shift) {
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.batch_size = 16384;  // 128 KiB per column: above the cache's floor
  options.format_options = "split_size=1m";
  options.allocator = alloc;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct sluice_dataset* ds = NULL;
  assert_int_equal(sluice_dataset_open(path, &options, &ds, &error), 0);
  assert_null(sl_dataset_buffer_cache(ds));  // the caller's cache, not one of its own
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  struct ArrowArray batches[64];
  int n = 0;
  int64_t seen = 0;
  for (;;) {
    assert_true(n < 64);
    int rc = stream.get_next(&stream, &batches[n]);
    if (rc != 0) fail_msg("get_next: %s", stream.get_last_error(&stream));
    if (batches[n].release == NULL) break;
    const struct ArrowArray* b = batches[n].children[1];
    const double* v = (const double*)b->buffers[1] + b->offset;
    const uint8_t* valid = b->buffers[0];
    for (int64_t i = 0; i < b->length; ++i) {
      int64_t row = seen + i;
      int is_null = (row + shift) % 7 == 0;
      int bit = valid == NULL || ((valid[(b->offset + i) >> 3] >> ((b->offset + i) & 7)) & 1);
      if (is_null ? bit : !bit || v[i] != (double)(row * 3 + shift) + 0.25) {
        fail_msg("shift %d, row %lld: valid %d, %g", shift, (long long)row, bit, v[i]);
      }
    }
    seen += batches[n].length;
    n++;
  }
  assert_int_equal(seen, rows);
  stream.release(&stream);
  sluice_dataset_close(ds);
  for (int i = 0; i < n; ++i) batches[i].release(&batches[i]);  // after the dataset: still valid
}

static void write_ab_csv(const char* path, int rows, int shift) {
  size_t cap = (size_t)rows * 32 + 16;
  char* text = malloc(cap);
  assert_non_null(text);
  size_t at = (size_t)sprintf(text, "a,b\n");
  for (int i = 0; i < rows; ++i) {
    if ((i + shift) % 7 == 0) {
      at += (size_t)sprintf(text + at, "%d,\n", i);
    } else {
      at += (size_t)sprintf(text + at, "%d,%d.25\n", i, i * 3 + shift);
    }
  }
  assert_int_equal(test_write_file(path, text, at), 0);
  free(text);
}

/// A cache shared by datasets (sluice_buffer_cache_create): a table read
/// whole and dropped leaves its buffers for the next dataset's read, which
/// then decodes into memory holding the first table's values (and nulls) and
/// must still be right. release_unused frees what is kept, and a cache
/// closed with blocks out lives until they are freed.
static void test_shared_cache_reuses_across_datasets(void** unused) {
  (void)unused;
  enum { ROWS = 200000 };
  assert_null(sluice_buffer_cache_create(-1));
  assert_null(sluice_buffer_cache_allocator(NULL));
  assert_int_equal(sluice_buffer_cache_release_unused(NULL), 0);
  sluice_buffer_cache_close(NULL);
  char first[512], second[512];
  test_temp_path("shared-cache-1.csv", first, sizeof first);
  test_temp_path("shared-cache-2.csv", second, sizeof second);
  write_ab_csv(first, ROWS, 0);
  write_ab_csv(second, ROWS, 3);  // other values, nulls in other rows

  struct sluice_buffer_cache* cache = sluice_buffer_cache_create((int64_t)256 << 20);
  assert_non_null(cache);
  const struct sluice_allocator* alloc = sluice_buffer_cache_allocator(cache);
  read_ab_and_drop(first, alloc, ROWS, 0);
  int64_t reused_before = sl_buffer_cache_reuses(cache);
  read_ab_and_drop(second, alloc, ROWS, 3);
  assert_true(sl_buffer_cache_reuses(cache) > reused_before);
  read_ab_and_drop(first, alloc, ROWS, 0);
  assert_true(sluice_buffer_cache_release_unused(cache) > 0);
  assert_int_equal(sluice_buffer_cache_release_unused(cache), 0);
  // With nothing kept, a read still works; a block out at close outlives it.
  uint8_t* out = sl_alloc_buffer(alloc, (size_t)1 << 20);
  assert_non_null(out);
  sluice_buffer_cache_close(cache);
  memset(out, 1, (size_t)1 << 20);
  sl_free_buffer(alloc, out, (size_t)1 << 20);
  remove(first);
  remove(second);
}

static struct sl_stats_key bytes_key(const void* p, int64_t n, int truncated) {
  struct sl_stats_key k;
  memset(&k, 0, sizeof k);
  k.kind = SL_KEY_BYTES;
  k.bytes = p;
  k.n = n;
  k.truncated = truncated;
  return k;
}

/// The bounded keys of string/binary statistics: a cut keeps whole UTF-8
/// characters; a truncated key merges as the values it stands for; the max
/// bound is above every value with the prefix (or does not exist).
static void test_stats_key_bounds(void** unused) {
  (void)unused;
  size_t big = (size_t)SL_STATS_BYTES_CAP + 8;
  uint8_t* v = malloc(big);
  assert_non_null(v);
  memset(v, 'a', big);
  v[SL_STATS_BYTES_CAP - 1] = 0xE2;  // a 3-byte character across the cut
  v[SL_STATS_BYTES_CAP] = 0x82;
  v[SL_STATS_BYTES_CAP + 1] = 0xAC;
  struct sl_stats_key k = bytes_key(v, (int64_t)big, 0);
  sl_stats_key_cap(&k, 1);
  assert_int_equal(k.n, SL_STATS_BYTES_CAP - 1);
  assert_true(k.truncated);
  k = bytes_key(v, (int64_t)big, 0);
  sl_stats_key_cap(&k, 0);
  assert_int_equal(k.n, SL_STATS_BYTES_CAP);
  k = bytes_key(v, SL_STATS_BYTES_CAP, 0);
  sl_stats_key_cap(&k, 1);  // at the cap: kept whole, exact
  assert_int_equal(k.n, SL_STATS_BYTES_CAP);
  assert_false(k.truncated);
  free(v);

  int t = -1;
  struct sl_stats_key ab = bytes_key("ab", 2, 1), abc = bytes_key("abc", 3, 0),
                      ab_exact = bytes_key("ab", 2, 0), b = bytes_key("b", 1, 0);
  // "ab"+more vs "abc": unknown which is smaller; both start with "ab".
  assert_int_equal(sl_stats_key_pick(&abc, &ab, 0, &t), 1);
  assert_int_equal(t, 1);
  assert_int_equal(sl_stats_key_pick(&ab, &abc, 1, &t), 0);
  assert_int_equal(t, 1);
  // An exact prefix is below the longer value: the min, exact.
  assert_int_equal(sl_stats_key_pick(&abc, &ab_exact, 0, &t), 1);
  assert_int_equal(t, 0);
  // "ab" exact vs "ab"+more: min "ab" exact, max "ab"+more.
  assert_int_equal(sl_stats_key_pick(&ab_exact, &ab, 0, &t), 0);
  assert_int_equal(t, 0);
  assert_int_equal(sl_stats_key_pick(&ab_exact, &ab, 1, &t), 0);
  assert_int_equal(t, 1);
  // A byte both hold decides.
  assert_int_equal(sl_stats_key_pick(&ab, &b, 1, &t), 1);
  assert_int_equal(t, 0);
  assert_int_equal(sl_stats_key_pick(&b, &ab, 0, &t), 1);
  assert_int_equal(t, 1);

  uint8_t out[16];
  int64_t n;
  sl_stats_bytes_above((const uint8_t*)"a\xff\xff", 3, 0, out, &n);
  assert_int_equal(n, 1);
  assert_int_equal(out[0], 'b');
  sl_stats_bytes_above((const uint8_t*)"\xff\xff", 2, 0, out, &n);
  assert_int_equal(n, -1);
  sl_stats_bytes_above((const uint8_t*)"a\x7f", 2, 1, out, &n);  // U+007F -> U+0080
  assert_int_equal(n, 3);
  assert_memory_equal(out, "a\xc2\x80", 3);
  sl_stats_bytes_above((const uint8_t*)"\xed\x9f\xbf", 3, 1, out, &n);  // U+D7FF skips surrogates
  assert_int_equal(n, 3);
  assert_memory_equal(out, "\xee\x80\x80", 3);
  sl_stats_bytes_above((const uint8_t*)"x\xf4\x8f\xbf\xbf", 5, 1, out, &n);  // U+10FFFF carries
  assert_int_equal(n, 1);
  assert_int_equal(out[0], 'y');
  sl_stats_bytes_above((const uint8_t*)"\xf4\x8f\xbf\xbf", 4, 1, out, &n);
  assert_int_equal(n, -1);
}

/// Drains a scan with error = NULL everywhere; the rows, or -1 on an error.
static int64_t rows_without_errors(struct sluice_dataset* ds) {
  struct ArrowArrayStream stream;
  if (sluice_dataset_scan(ds, &stream, NULL) != 0) return -1;
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    if (stream.get_next(&stream, &batch) != 0) {
      rows = -1;
      break;
    }
    if (batch.release == NULL) break;
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  return rows;
}
/// Stats of a column of nulls cost nothing per row: a 300-byte stream of a
/// null column of 2^40 rows (pyarrow reads it at once) took an hour; here
/// an alarm fails the test after 20 s. An int64 column of only nulls (a
/// validity buffer) counts its rows as nulls as before.
static void test_stats_of_null_columns(void** unused) {
  (void)unused;
  char path[512], ints[512];
  test_temp_path("nulls.arrows", path, sizeof path);
  test_temp_path("ints.arrows", ints, sizeof ints);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, pyarrow.ipc as ipc, io, struct, sys\n"
           "def write(t, path, n=None):\n"
           "    s = io.BytesIO()\n"
           "    with ipc.new_stream(s, t.schema) as w: w.write_table(t)\n"
           "    b = s.getvalue()\n"
           "    if n: b = b.replace(struct.pack('<q', t.num_rows), struct.pack('<q', n))\n"
           "    open(path, 'wb').write(b)\n"
           "write(pa.table({'n': pa.nulls(12345)}), sys.argv[1], 1 << 40)\n"
           "assert ipc.open_stream(sys.argv[1]).read_all().num_rows == 1 << 40\n"
           "write(pa.table({'i': pa.nulls(1000, pa.int64()),\n"
           "                'j': pa.array([None if k %% 2 else k for k in range(1000)])}), sys.argv[2])\n"
           "\" '%s' '%s' 2>/dev/null",
           path, ints);
  if (system(cmd) != 0) skip();
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  struct sluice_column_stats* stats = NULL;
  int64_t n = 0;
  alarm(20);
  assert_int_equal(sluice_dataset_stats(ds, &stats, &n, &error), 0);
  alarm(0);
  assert_int_equal(n, 1);
  assert_int_equal(stats[0].count, INT64_C(1) << 40);
  assert_int_equal(stats[0].null_count, INT64_C(1) << 40);
  assert_int_equal(stats[0].has_min_max, 0);
  sluice_stats_free(stats, n);
  sluice_dataset_close(ds);
  assert_int_equal(sluice_dataset_open(ints, NULL, &ds, &error), 0);
  assert_int_equal(sluice_dataset_stats(ds, &stats, &n, &error), 0);
  assert_int_equal(n, 2);
  assert_int_equal(stats[0].count, 1000);
  assert_int_equal(stats[0].null_count, 1000);
  assert_int_equal(stats[0].has_min_max, 0);
  assert_int_equal(stats[1].count, 1000);
  assert_int_equal(stats[1].null_count, 500);
  assert_string_equal(stats[1].min, "0");
  assert_string_equal(stats[1].max, "998");
  sluice_stats_free(stats, n);
  sluice_dataset_close(ds);
  unlink(path);
  unlink(ints);
}


/// sluice.h lets every error struct be NULL: a pyarrow Parquet file (its
/// encoding_stats), a damaged .csv.gz and a refine whose filter the wider
/// type refuses dereferenced it (segfaults); the codes are those given with
/// a struct.
static void test_null_error_structs(void** unused) {
  (void)unused;
  char pq[512], gz[512], ns[512];
  test_temp_path("nullerr.parquet", pq, sizeof pq);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, pyarrow.parquet as pq, sys\n"
           "pq.write_table(pa.table({'a': list(range(3)), 's': ['x', 'y', None]}), sys.argv[1])\" "
           "'%s' 2>/dev/null", pq);
  if (system(cmd) != 0) skip();
  struct sluice_dataset* ds = NULL;
  assert_int_equal(sluice_dataset_open(pq, NULL, &ds, NULL), 0);
  struct ArrowSchema schema;
  assert_int_equal(sluice_dataset_schema(ds, &schema, NULL), 0);
  schema.release(&schema);
  assert_int_equal(rows_without_errors(ds), 3);
  struct sluice_column_stats* stats = NULL;
  int64_t n = 0;
  assert_int_equal(sluice_dataset_stats(ds, &stats, &n, NULL), 0);
  assert_int_equal(n, 2);
  sluice_stats_free(stats, n);
  assert_int_equal(sluice_dataset_count_split_rows(ds, NULL), 0);
  sluice_dataset_close(ds);
  // Negative counts are named, not taken for the defaults.
  struct sluice_open_options bad;
  for (int k = 0; k < 4; k++) {
    sluice_open_options_init(&bad);
    if (k == 0) bad.threads = -1;
    if (k == 1) bad.memory_budget = -5;
    if (k == 2) bad.batch_size = -1;
    if (k == 3) bad.limit = -2;
    struct sluice_error e;
    memset(&e, 0, sizeof e);
    assert_int_equal(sluice_dataset_open(pq, &bad, &ds, &e), EINVAL);
    assert_non_null(strstr(e.message, k == 3 ? "limit is -2" : "is negative"));
    assert_null(ds);
  }

  // A struct reused after a failure: the call that succeeds clears it
  // (code 0, "no error recorded"), as sluice.h says; it kept the old one.
  struct sluice_error reused;
  memset(&reused, 0, sizeof reused);
  sluice_open_options_init(&bad);
  bad.threads = -1;
  assert_int_equal(sluice_dataset_open(pq, &bad, &ds, &reused), EINVAL);
  assert_int_equal(reused.code, EINVAL);
  assert_int_equal(sluice_dataset_open(pq, NULL, &ds, &reused), 0);
  assert_int_equal(reused.code, 0);
  assert_string_equal(reused.message, "");
  reused.code = ENOENT;
  snprintf(reused.message, sizeof reused.message, "old");
  assert_int_equal(sluice_dataset_schema(ds, &schema, &reused), 0);
  schema.release(&schema);
  assert_int_equal(reused.code, 0);
  assert_string_equal(reused.message, "");
  sluice_dataset_close(ds);
  ds = NULL;

  test_temp_path("nullerr.csv.gz", gz, sizeof gz);
  static const unsigned char damaged[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0x00};
  assert_int_equal(test_write_file(gz, (const char*)damaged, sizeof damaged), 0);
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  ds = NULL;
  int with = sluice_dataset_open(gz, NULL, &ds, &error);
  int64_t with_rows = with == 0 ? rows_without_errors(ds) : -1;
  sluice_dataset_close(ds);
  ds = NULL;
  int without = sluice_dataset_open(gz, NULL, &ds, NULL);
  assert_int_equal(without, with);
  if (without == 0) assert_int_equal(rows_without_errors(ds), with_rows);
  sluice_dataset_close(ds);

  // A late nanosecond value widens t; the filter's 2300 is past timestamp[ns].
  test_temp_path("nullerr_ns.csv", ns, sizeof ns);
  FILE* f = fopen(ns, "w");
  assert_non_null(f);
  fprintf(f, "t\n");
  for (int i = 0; i < 3000; i++) fprintf(f, "2024-01-01 00:%02d:%02d%s\n", i / 60 % 60, i % 60,
                                          i == 2500 ? ".123456789" : "");
  assert_int_equal(fclose(f), 0);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.format_options = "infer_bytes=1k";
  options.filter = "t<2300-01-01";
  ds = NULL;
  assert_int_equal(sluice_dataset_open(ns, &options, &ds, NULL), 0);
  assert_int_equal(rows_without_errors(ds), -1);  // the late value
  int changed = 0;
  // (t is still a type inferred from the data, which may widen on: the
  // value past timestamp[ns] is refused at the scan's end)
  assert_int_equal(sluice_dataset_refine(ds, &changed, NULL), 0);
  assert_int_equal(changed, 1);
  assert_int_equal(rows_without_errors(ds), -1);
  memset(&error, 0, sizeof error);
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open(ds, &scanner, &error), 0);
  struct ArrowArray batch;
  int rc;
  while ((rc = sluice_scanner_next(scanner, &batch, NULL, &error)) == 0 && batch.release != NULL)
    batch.release(&batch);
  assert_int_equal(rc, EINVAL);
  assert_non_null(strstr(error.message, "is past the range of column 't' (timestamp[ns]"));
  assert_non_null(strstr(error.message, "inferred from the data"));
  assert_int_equal(sluice_scanner_next(scanner, &batch, NULL, NULL), EINVAL);
  sluice_scanner_close(scanner);
  sluice_dataset_close(ds);
  unlink(pq);
  unlink(gz);
  unlink(ns);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ipc_ordered_and_unordered),
      cmocka_unit_test(test_ipc_projection_limit_and_errors),
      cmocka_unit_test(test_ipc_zero_columns),
      cmocka_unit_test(test_ipc_detection_and_empty),
      cmocka_unit_test(test_ipc_through_pipe),
      cmocka_unit_test(test_ipc_allocation_failures),
      cmocka_unit_test(test_memory_dataset),
      cmocka_unit_test(test_memory_dataset_allocation_failures),
      cmocka_unit_test(test_directory_as_one_table),
      cmocka_unit_test(test_directory_errors),
      cmocka_unit_test(test_directory_allocation_failures),
      cmocka_unit_test(test_out_of_memory_names_the_object),
      cmocka_unit_test(test_messages_stay_on_one_line),
      cmocka_unit_test(test_directory_stored_stats_allocation_failures),
      cmocka_unit_test(test_hive_partitions_and_lists),
      cmocka_unit_test(test_union_by_name),
      cmocka_unit_test(test_scan_range_ordered_and_unordered),
      cmocka_unit_test(test_scan_range_empty_and_errors),
      cmocka_unit_test(test_scan_range_planned_rows),
      cmocka_unit_test(test_placed_scan),
      cmocka_unit_test(test_scan_range_allocation_failures),
      cmocka_unit_test(test_csv_refine_after_a_late_value),
      cmocka_unit_test(test_csv_union_by_name_refine),
      cmocka_unit_test(test_freed_batches_are_reused),
      cmocka_unit_test(test_shared_cache_reuses_across_datasets),
      cmocka_unit_test(test_stats_key_bounds),
      cmocka_unit_test(test_null_error_structs),
      cmocka_unit_test(test_stats_of_null_columns),
  };
  return cmocka_run_group_tests(tests, ipc_setup, ipc_teardown);
}
