// Allocation-failure sweep of the Avro writer: nested batches (lists, maps,
// structs, nullable values, enums, decimals, fixed) read from the
// arrow-testing corpus are written with an allocator that fails its N-th
// allocation, for every N until a write succeeds. Each failure must be a
// clean ENOMEM: nothing leaked (live bytes back to zero; ASan checks the
// rest), and the sink not committed (no target file, no temporary left).
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
#include "format/avro/avro_reader.h"
#include "format/avro/avro_writer.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"
#include "test_util.h"

/// Reads an Avro file with the default allocator, small batches so that the
/// writer sees several.
static int read_file(const char* path, struct test_batches* out, struct sluice_error* error) {
  return test_batches_read(sl_avro_reader(), path, 3, 0, out, error);
}

/// One write of the sweep: the file read afresh, written to `dst`.
struct write_run {
  const char *src, *dst, *dir, *options;
  int64_t rows;
};

static int write_once(void* ctx, const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct write_run* w = ctx;
  struct test_batches b;
  assert_int_equal(read_file(w->src, &b, error), 0);
  w->rows = b.rows;
  int rc = test_batches_write(sl_avro_writer(), &b, w->dst, w->options, alloc, error);
  test_batches_release(&b);
  if (rc != 0) {
    assert_int_equal(access(w->dst, F_OK), -1);     // not committed
    assert_int_equal(test_dir_entries(w->dir), 0);  // and no temporary left behind
  }
  return rc;
}

/// Fails unless the two Avro files declare the same schema (avro.schema).
static void assert_same_avro_schema(const char* a, const char* b) {
  struct test_batches x, y;
  struct sluice_error error = {0, {0}};
  assert_int_equal(read_file(a, &x, &error), 0);
  assert_int_equal(read_file(b, &y, &error), 0);
  int32_t nx = 0, ny = 0;
  const char* sx = sl_metadata_find(x.schema.metadata, "avro.schema", &nx);
  const char* sy = sl_metadata_find(y.schema.metadata, "avro.schema", &ny);
  assert_non_null(sx);
  assert_non_null(sy);
  assert_int_equal(nx, ny);
  assert_memory_equal(sx, sy, (size_t)nx);
  test_batches_release(&x);
  test_batches_release(&y);
}

/// Sweeps fail_at = 1, 2, ... over one write of `file` with `options`.
static void sweep(const char* file, const char* options) {
  char rel[256], src[512], dir[512], dst[600];
  snprintf(rel, sizeof rel, "arrow-testing/data/avro/%s", file);
  test_corpus_path(rel, src, sizeof src);
  if (access(src, R_OK) != 0) {
    fprintf(stderr, "corpus file %s not found: skipped\n", src);
    skip();
  }
  // A directory of its own, so that a stray temporary file shows.
  test_temp_path(file, dir, sizeof dir);
  assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
  snprintf(dst, sizeof dst, "%s/out.avro", dir);
  unlink(dst);
  assert_int_equal(test_dir_entries(dir), 0);

  // The schema a write with the default allocator gives: a failure taken
  // for something else (an allocation while parsing the input's
  // avro.schema read as "it does not parse") must not change it (the
  // record names were lost).
  char ref[600];
  char ref_name[300];
  snprintf(ref_name, sizeof ref_name, "%s-%.*s.ref.avro", file,
           (int)strcspn(options, ","), options);  // (its codec: one per test)
  test_temp_path(ref_name, ref, sizeof ref);
  struct test_batches b;
  struct sluice_error ref_error = {0, {0}};
  assert_int_equal(read_file(src, &b, &ref_error), 0);
  assert_int_equal(test_batches_write(sl_avro_writer(), &b, ref, options, NULL, &ref_error), 0);
  test_batches_release(&b);

  struct write_run run = {src, dst, dir, options, -1};
  assert_true(test_alloc_sweep(write_once, &run, 99999) > 5);
  assert_same_avro_schema(dst, ref);
  unlink(ref);
  // What the last run wrote reads back with every row.
  struct test_batches back;
  struct sluice_error error = {0, {0}};
  assert_int_equal(read_file(dst, &back, &error), 0);
  assert_int_equal(back.rows, run.rows);
  test_batches_release(&back);
  unlink(dst);
  rmdir(dir);
}

static void test_nested_deflate(void** state) {
  (void)state;
  sweep("nullable.impala.avro", "codec=deflate,block_size=64");
}

static void test_nested_lists_zstd(void** state) {
  (void)state;
  sweep("nested_lists.snappy.avro", "codec=zstandard,block_size=32");
}

static void test_enum_snappy(void** state) {
  (void)state;
  sweep("simple_enum.avro", "codec=snappy,block_size=16");
}

static void test_decimal_fixed_xz(void** state) {
  (void)state;
  sweep("fixed_length_decimal.avro", "codec=xz,block_size=100");
}

static void test_nested_lzma(void** state) {
  (void)state;
  sweep("nullable.impala.avro", "codec=lzma,block_size=200");
}

static void test_alltypes_bzip2(void** state) {
  (void)state;
  sweep("alltypes_nulls_plain.avro", "codec=bzip2");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nested_deflate),
      cmocka_unit_test(test_nested_lists_zstd),
      cmocka_unit_test(test_enum_snappy),
      cmocka_unit_test(test_decimal_fixed_xz),
      cmocka_unit_test(test_nested_lzma),
      cmocka_unit_test(test_alltypes_bzip2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
