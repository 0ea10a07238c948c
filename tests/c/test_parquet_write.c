// The Parquet writer under allocation failure: nested batches (lists,
// structs, maps, dictionaries, nulls at every level) read from the
// arrow-testing integration corpus are written with an allocator that fails
// its N-th allocation, for every N until a write succeeds. Each failure must
// be a clean ENOMEM: nothing leaked (live bytes back to zero; ASan checks the
// rest) and nothing committed (no target, no temporary left). The file the
// last run wrote is read back through the Parquet reader when it is linked
// in (rows, columns, full validation); value-level comparisons with pyarrow,
// DuckDB and polars are in tests/py/test_parquet_write.py.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_ref.h"
#include "core/sl_validate.h"
#include "format/ipc/ipc_reader.h"
#include "format/parquet/parquet_writer.h"
#include "format/sl_format.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"
#include "test_util.h"

/// Reads every batch of `path` with reader `fmt` (default allocator),
/// validating each.
static int read_file(const struct sl_format_reader* fmt, const char* path, struct test_batches* out,
                     struct sluice_error* error) {
  return test_batches_read(fmt, path, 5, 1, out, error);
}

static void corpus_file(const char* file, char* out, size_t cap) {
  char rel[256];
  snprintf(rel, sizeof rel, "arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian/%s",
           file);
  test_corpus_path(rel, out, cap);
  if (access(out, R_OK) != 0) {
    fprintf(stderr, "corpus file %s not found: skipped\n", out);
    skip();
  }
}

/// Keeps only `columns` of every batch.
static void project(struct test_batches* b, const int64_t* columns, int64_t n) {
  struct sluice_error error = {0, {0}};
  struct ArrowSchema s;
  assert_int_equal(sl_schema_project(&b->schema, columns, n, NULL, &s, &error), 0);
  b->schema.release(&b->schema);
  b->schema = s;
  for (int64_t i = 0; i < b->n; ++i) {
    struct ArrowArray a;
    assert_int_equal(sl_array_project(&b->arrays[i], columns, n, NULL, &a, &error), 0);
    b->arrays[i] = a;
  }
}

/// Writes the batches as JSON Lines (a text form to compare tables by).
static void write_jsonl(struct test_batches* b, const char* path) {
  struct sluice_error error = {0, {0}};
  struct sl_sink* sink = NULL;
  assert_int_equal(sl_sink_open(path, NULL, &sink, &error), 0);
  struct ArrowArrayStream stream;
  test_batches_stream(b, &stream);
  struct sl_write_args args = {.alloc = NULL};
  int rc = sl_format_writer_find("jsonl")->write(&stream, sink, &args, &error);
  if (rc != 0) fprintf(stderr, "jsonl: %s\n", error.message);
  assert_int_equal(rc, 0);
  assert_int_equal(sl_sink_commit(sink, &error), 0);
}

/// Reads the written file back with the Parquet reader, when linked in, and
/// compares it with the source (as JSON Lines) when the types came back the
/// same.
static void read_back(const char* src, const char* dst, int64_t rows, int64_t columns) {
  const struct sl_format_reader* reader = sl_format_reader_find("parquet");
  if (reader == NULL) {
    fprintf(stderr, "no Parquet reader registered: read-back skipped\n");
    return;
  }
  struct test_batches back;
  struct sluice_error error = {0, {0}};
  int rc = read_file(reader, dst, &back, &error);
  if (rc != 0) fprintf(stderr, "reading %s back: %s\n", dst, error.message);
  assert_int_equal(rc, 0);
  assert_int_equal(back.rows, rows);
  assert_int_equal(back.schema.n_children, columns);
  struct test_batches orig;
  assert_int_equal(read_file(sl_ipc_file_reader(), src, &orig, &error), 0);
  // Columns that came back with their type are compared; the others are
  // the reader's business (tests/py compares them through pyarrow).
  int64_t keep[256];
  int64_t n_keep = 0;
  for (int64_t i = 0; i < columns && n_keep < 256; ++i) {
    if (strcmp(orig.schema.children[i]->format, back.schema.children[i]->format) == 0)
      keep[n_keep++] = i;
    else
      fprintf(stderr, "column %lld reads back as '%s', not '%s': values not compared\n",
              (long long)i, back.schema.children[i]->format, orig.schema.children[i]->format);
  }
  project(&orig, keep, n_keep);
  project(&back, keep, n_keep);
  if (n_keep > 0) {
    char a[700], b[700];
    snprintf(a, sizeof a, "%s.orig.jsonl", dst);
    snprintf(b, sizeof b, "%s.back.jsonl", dst);
    write_jsonl(&orig, a);
    write_jsonl(&back, b);
    test_assert_same_files(a, b);
    unlink(a);
    unlink(b);
  }
  test_batches_release(&orig);
  test_batches_release(&back);
}

/// One write of the sweep: the file read afresh, written to `dst`.
struct write_run {
  const char *src, *dst, *dir, *options;
  int64_t rows, columns;
};

static int write_once(void* ctx, const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct write_run* w = ctx;
  struct test_batches b;
  assert_int_equal(read_file(sl_ipc_file_reader(), w->src, &b, error), 0);
  w->rows = b.rows;
  w->columns = b.schema.n_children;
  int rc = test_batches_write(sl_parquet_writer(), &b, w->dst, w->options, alloc, error);
  test_batches_release(&b);
  if (rc != 0) {
    assert_int_equal(access(w->dst, F_OK), -1);
    assert_int_equal(test_dir_entries(w->dir), 0);
  }
  return rc;
}

static void sweep(const char* file, const char* options) {
  char src[512], dir[512], dst[600];
  corpus_file(file, src, sizeof src);
  test_temp_path(file, dir, sizeof dir);
  assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
  snprintf(dst, sizeof dst, "%s/out.parquet", dir);
  unlink(dst);
  assert_int_equal(test_dir_entries(dir), 0);

  struct write_run run = {src, dst, dir, options, -1, -1};
  assert_true(test_alloc_sweep(write_once, &run, 199999) > 5);
  read_back(src, dst, run.rows, run.columns);
  unlink(dst);
  rmdir(dir);
}

static void test_nested_snappy_v1(void** state) {
  (void)state;
  sweep("generated_nested.arrow_file", "threads=1,row_group_size=7,page_size=64");
}

static void test_map_zstd_v2(void** state) {
  (void)state;
  sweep("generated_map.arrow_file",
        "threads=1,compression=zstd,data_page_version=2,row_group_size=5,page_size=32");
}

static void test_dictionary_gzip(void** state) {
  (void)state;
  sweep("generated_dictionary.arrow_file", "threads=1,compression=gzip,row_group_size=4");
}

static void test_primitive_brotli_threads(void** state) {
  (void)state;
  // Several encoding threads: the failing allocation differs from run to
  // run, but every failure must still be clean.
  sweep("generated_primitive.arrow_file", "threads=2,compression=brotli,dictionary=false");
}

/* ---- Many tiny batches ---------------------------------------------------- */

/// The batches of a file, `rounds` times over, as a stream of views: whole
/// batches, or one row each (`one_row`), so that the writer sees thousands
/// of them and folds them (parquet_writer.c's fold_held) instead of holding
/// every one.
struct views {
  struct test_batches b;
  struct sl_ref* owners[TEST_MAX_BATCHES];
  const struct ArrowArray* shared[TEST_MAX_BATCHES];
  int one_row;
  int64_t rounds, round, batch, row;
};

static int views_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct views* v = s->private_data;
  struct sluice_error error = {0, {0}};
  return sl_schema_copy(&v->b.schema, NULL, out, &error);
}

static int views_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct views* v = s->private_data;
  memset(out, 0, sizeof *out);
  while (v->round < v->rounds && v->row >= v->shared[v->batch]->length) {
    v->row = 0;
    if (++v->batch == v->b.n) {
      v->batch = 0;
      v->round++;
    }
  }
  if (v->round == v->rounds) return 0;  // the end
  struct sluice_error error = {0, {0}};
  int rc = sl_array_view(v->shared[v->batch], v->owners[v->batch], NULL, out, &error);
  if (rc != 0) return rc;
  if (v->one_row) {
    out->offset += v->row;
    out->length = 1;
    out->null_count = out->null_count == 0 ? 0 : -1;
    v->row++;
  } else {
    v->row = out->length;
  }
  return 0;
}

static const char* views_error(struct ArrowArrayStream* s) {
  (void)s;
  return "views: out of memory";
}

static void views_release(struct ArrowArrayStream* s) { s->release = NULL; }

static void views_open(struct views* v, const char* src, int64_t min_rows) {
  struct sluice_error error = {0, {0}};
  memset(v, 0, sizeof *v);
  assert_int_equal(read_file(sl_ipc_file_reader(), src, &v->b, &error), 0);
  int64_t rows = 0;
  for (int64_t i = 0; i < v->b.n; ++i) {
    rows += v->b.arrays[i].length;
    v->owners[i] = sl_array_share(&v->b.arrays[i], NULL, &v->shared[i]);
    assert_non_null(v->owners[i]);
  }
  assert_true(rows > 0);
  v->rounds = (min_rows + rows - 1) / rows;
}

static void views_close(struct views* v) {
  for (int64_t i = 0; i < v->b.n; ++i) sl_ref_release(v->owners[i]);
  v->b.n = 0;  // moved into the owners
  test_batches_release(&v->b);
}

/// Writes the views (restarted) to `dst`; the test_batches_write of them.
static int write_views(struct views* v, int one_row, const char* dst, const char* options,
                       const struct sluice_allocator* alloc, struct sluice_error* error) {
  v->one_row = one_row;
  v->round = v->batch = v->row = 0;
  struct sl_sink* sink = NULL;
  int rc = sl_sink_open(dst, alloc, &sink, error);
  if (rc != 0) return rc;
  struct ArrowArrayStream stream = {views_schema, views_next, views_error, views_release, v};
  struct sl_write_args args = {.alloc = alloc, .format_options = options};
  rc = sl_parquet_writer()->write(&stream, sink, &args, error);
  if (rc != 0) {
    sl_sink_abort(sink);
    return rc;
  }
  return sl_sink_commit(sink, error);
}

struct views_run {
  struct views* v;
  const char *dst, *dir, *options;
};

static int write_views_once(void* ctx, const struct sluice_allocator* alloc,
                            struct sluice_error* error) {
  struct views_run* r = ctx;
  int rc = write_views(r->v, 1, r->dst, r->options, alloc, error);
  if (rc != 0) {
    assert_int_equal(access(r->dst, F_OK), -1);
    assert_int_equal(test_dir_entries(r->dir), 0);
  }
  return rc;
}

/// 2,500 one-row batches (folded twice: held batches are folded from 1,024
/// on) write the bytes the same rows in whole batches write, also with row
/// groups that end between folds; and an allocation failure anywhere on
/// the way (every 1/300th of the allocations tried) is a clean ENOMEM.
static void tiny_batches(const char* file, const char* options) {
  char src[512], dir[512], whole[600], tiny[600];
  corpus_file(file, src, sizeof src);
  test_temp_path(file, dir, sizeof dir);
  assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
  snprintf(whole, sizeof whole, "%s/whole.parquet", dir);
  snprintf(tiny, sizeof tiny, "%s/tiny.parquet", dir);
  struct views v;
  views_open(&v, src, 2500);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_views(&v, 0, whole, options, NULL, &error), 0);
  struct test_allocator counted;
  test_allocator_init(&counted);
  int rc = write_views(&v, 1, tiny, options, &counted.base, &error);
  if (rc != 0) fprintf(stderr, "%s: %s\n", file, error.message);
  assert_int_equal(rc, 0);
  assert_int_equal(atomic_load(&counted.live_bytes), 0);
  test_assert_same_files(whole, tiny);
  unlink(whole);
  unlink(tiny);

  long long total = atomic_load(&counted.allocations);
  long long step = total / 300 + 1;
  struct views_run run = {&v, tiny, dir, options};
  for (long long n = 1; n <= total; n += step) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, n);
    memset(&error, 0, sizeof error);
    rc = write_views_once(&run, &ta.base, &error);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
    if (rc != 0 && rc != ENOMEM) fprintf(stderr, "fail_at %lld: %s\n", n, error.message);
    assert_true(rc == 0 || rc == ENOMEM);
    if (rc == 0) unlink(tiny);
    else assert_true(error.message[0] != '\0');
  }
  views_close(&v);
  rmdir(dir);
}

static void test_tiny_batches_dictionary(void** state) {
  (void)state;
  tiny_batches("generated_dictionary.arrow_file", "threads=1");
}

static void test_tiny_batches_map(void** state) {
  (void)state;
  tiny_batches("generated_map.arrow_file", "threads=2,row_group_size=1500");
}

static void test_tiny_batches_nested(void** state) {
  (void)state;
  tiny_batches("generated_nested.arrow_file", "threads=1,row_group_size=2000,data_page_version=2");
}

static void test_tiny_batches_primitive(void** state) {
  (void)state;
  tiny_batches("generated_primitive.arrow_file", "threads=2,row_group_size=1100");
}

/// Errors that are not the allocator's: an unknown option names itself, a
/// union column is refused naming the column, and nothing is committed.
static void test_errors(void** state) {
  (void)state;
  char src[512], dir[512], dst[600];
  corpus_file("generated_primitive.arrow_file", src, sizeof src);
  test_temp_path("pq_errors", dir, sizeof dir);
  assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
  snprintf(dst, sizeof dst, "%s/out.parquet", dir);
  struct test_batches b;
  struct sluice_error error = {0, {0}};
  assert_int_equal(read_file(sl_ipc_file_reader(), src, &b, &error), 0);
  assert_int_equal(
      test_batches_write(sl_parquet_writer(), &b, dst, "no_such_option=1", NULL, &error), EINVAL);
  assert_non_null(strstr(error.message, "no_such_option"));
  test_batches_release(&b);
  assert_int_equal(test_dir_entries(dir), 0);

  corpus_file("generated_union.arrow_file", src, sizeof src);
  assert_int_equal(read_file(sl_ipc_file_reader(), src, &b, &error), 0);
  int rc = test_batches_write(sl_parquet_writer(), &b, dst, NULL, NULL, &error);
  test_batches_release(&b);
  assert_int_equal(rc, ENOTSUP);
  assert_non_null(strstr(error.message, "union"));
  assert_int_equal(test_dir_entries(dir), 0);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nested_snappy_v1),
      cmocka_unit_test(test_map_zstd_v2),
      cmocka_unit_test(test_dictionary_gzip),
      cmocka_unit_test(test_primitive_brotli_threads),
      cmocka_unit_test(test_tiny_batches_dictionary),
      cmocka_unit_test(test_tiny_batches_map),
      cmocka_unit_test(test_tiny_batches_nested),
      cmocka_unit_test(test_tiny_batches_primitive),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
