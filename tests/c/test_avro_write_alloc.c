// Allocation-failure sweep of the Avro writer: nested batches (lists, maps,
// structs, nullable values, enums, decimals, fixed) read from the
// arrow-testing corpus are written with an allocator that fails its N-th
// allocation, for every N until a write succeeds. Each failure must be a
// clean ENOMEM: nothing leaked (live bytes back to zero; ASan checks the
// rest), and the sink not committed (no target file, no temporary left).
#include <dirent.h>
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

#define MAX_BATCHES 64

/// The batches of one file, handed out once by an ArrowArrayStream.
struct batches {
  struct ArrowSchema schema;
  struct ArrowArray arrays[MAX_BATCHES];
  int64_t n, next;
  int64_t rows;
  struct sluice_error error;
};

static void batches_release(struct batches* b) {
  if (b->schema.release) b->schema.release(&b->schema);
  for (int64_t i = 0; i < b->n; ++i)
    if (b->arrays[i].release) b->arrays[i].release(&b->arrays[i]);
  b->n = b->next = 0;
}

/// Reads an Avro file with the default allocator, small batches so that the
/// writer sees several.
static int read_file(const char* path, struct batches* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  const struct sl_format_reader* fmt = sl_avro_reader();
  struct sl_source* src = NULL;
  int rc = sl_source_open(path, NULL, &src, error);
  if (rc != 0) return rc;
  struct sl_reader_args args = {.source = src, .batch_size = 3};
  void* reader = NULL;
  struct sl_split* splits = NULL;
  int64_t n = 0;
  rc = fmt->open(&args, &reader, error);
  if (rc == 0) rc = fmt->schema(reader, &out->schema, error);
  if (rc == 0) rc = fmt->plan_splits(reader, &splits, &n, error);
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    void* st;
    int projected;
    rc = fmt->split_open(reader, &splits[i], NULL, 0, &st, &projected, error);
    while (rc == 0) {
      struct ArrowArray a;
      rc = fmt->split_next(st, &a, error);
      if (rc != 0 || a.release == NULL) break;
      out->rows += a.length;
      if (out->n < MAX_BATCHES) sl_array_move(&a, &out->arrays[out->n++]);
      else a.release(&a);
    }
    if (st) fmt->split_close(st);
  }
  if (splits) sl_free(NULL, splits, (size_t)n * sizeof *splits);
  if (reader) fmt->close(reader);
  sl_source_close(src);
  if (rc != 0) batches_release(out);
  return rc;
}

static int bs_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct batches* b = s->private_data;
  return sl_schema_copy(&b->schema, NULL, out, &b->error);
}
static int bs_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct batches* b = s->private_data;
  if (b->next < b->n) sl_array_move(&b->arrays[b->next++], out);
  else out->release = NULL;
  return 0;
}
static const char* bs_error(struct ArrowArrayStream* s) {
  return ((struct batches*)s->private_data)->error.message;
}
static void bs_release(struct ArrowArrayStream* s) { s->release = NULL; }

/// Entries of `dir` other than "." and "..".
static int dir_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
  closedir(d);
  return n;
}

/// Writes the batches to `path` through a sink, both with `alloc`; commits
/// on success, aborts on error (as the CLI does).
static int write_avro(struct batches* b, const char* path, const char* options,
                      const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct sl_sink* sink = NULL;
  int rc = sl_sink_open(path, alloc, &sink, error);
  if (rc != 0) return rc;
  struct ArrowArrayStream stream = {bs_schema, bs_next, bs_error, bs_release, b};
  struct sl_write_args args = {.alloc = alloc, .format_options = options};
  rc = sl_avro_writer()->write(&stream, sink, &args, error);
  if (rc != 0) {
    sl_sink_abort(sink);
    return rc;
  }
  return sl_sink_commit(sink, error);
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
  assert_int_equal(dir_entries(dir), 0);

  int failures = 0, succeeded = 0;
  int64_t rows = -1;
  for (long long n = 1; n < 100000 && !succeeded; ++n) {
    struct batches b;
    struct sluice_error error = {0, {0}};
    assert_int_equal(read_file(src, &b, &error), 0);
    rows = b.rows;
    struct test_allocator ta;
    test_allocator_init(&ta);
    ta.fail_at = n;
    int rc = write_avro(&b, dst, options, &ta.base, &error);
    batches_release(&b);
    assert_int_equal(ta.live_bytes, 0);
    succeeded = rc == 0;
    if (!succeeded) {
      if (rc != ENOMEM) fprintf(stderr, "fail_at %lld: rc %d: %s\n", n, rc, error.message);
      assert_int_equal(rc, ENOMEM);
      assert_true(error.message[0] != '\0');
      assert_int_equal(access(dst, F_OK), -1);  // not committed
      assert_int_equal(dir_entries(dir), 0);    // and no temporary left behind
      failures++;
    }
  }
  assert_true(succeeded);  // every allocation point was failed once
  assert_true(failures > 5);
  // What the last run wrote reads back with every row.
  struct batches back;
  struct sluice_error error = {0, {0}};
  assert_int_equal(read_file(dst, &back, &error), 0);
  assert_int_equal(back.rows, rows);
  batches_release(&back);
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
