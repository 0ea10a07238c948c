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
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
