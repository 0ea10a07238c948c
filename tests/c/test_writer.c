// sluice_writer (the push side of sluice_write): batches handed over one at
// a time give the same bytes as sluice_write pulling them from a stream, in
// a plain file and in partitions; abort, a bad batch, an unknown format and
// every failed allocation leave nothing at the location and nothing
// allocated.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_array.h"
#include "format/csv/csv_reader.h"
#include "test_util.h"

#define ROWS 2000

static void make_csv(const char* path) {
  FILE* f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "k,x,s\n");
  for (int i = 0; i < ROWS; i++) fprintf(f, "%d,%d,\"v %d, q\"\"\"\n", i % 7, i, i * 3);
  assert_int_equal(fclose(f), 0);
}

static void read_batches(const char* csv, struct test_batches* b) {
  struct sluice_error error = {0, {0}};
  assert_int_equal(test_batches_read(sl_csv_reader(), csv, 97, 0, b, &error), 0);
}

static void remove_tree(const char* dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/// Pushes the batches of `csv` through a writer to `dst`; the result of
/// close (or of the first failing write).
static int push_all(const char* csv, const char* dst, const struct sluice_write_options* options,
                    struct sluice_error* error) {
  struct test_batches b;
  read_batches(csv, &b);
  struct sluice_writer* w = NULL;
  int rc = sluice_writer_open(dst, &b.schema, options, &w, error);
  for (int64_t i = 0; rc == 0 && i < b.n; i++) {
    struct ArrowArray batch;
    sl_array_move(&b.arrays[i], &batch);
    rc = sluice_writer_write(w, &batch, error);
    assert_null(batch.release);  // taken, also on error
  }
  if (rc == 0) {
    rc = sluice_writer_close(w, error);
  } else if (w != NULL) {
    sluice_writer_abort(w);
  }
  test_batches_release(&b);
  return rc;
}

static int pull_all(const char* csv, const char* dst, const struct sluice_write_options* options,
                    struct sluice_error* error) {
  struct test_batches b;
  read_batches(csv, &b);
  struct ArrowArrayStream stream;
  test_batches_stream(&b, &stream);
  int rc = sluice_write(&stream, dst, options, error);
  stream.release(&stream);
  test_batches_release(&b);
  return rc;
}

static void test_pushed_equals_pulled(void** state) {
  (void)state;
  char csv[512], a[512], b[512];
  test_temp_path("writer_in.csv", csv, sizeof csv);
  make_csv(csv);
  static const char* const exts[] = {"parquet", "csv", "arrow", "avro"};
  for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
    char name[64];
    snprintf(name, sizeof name, "writer_push.%s", exts[e]);
    test_temp_path(name, a, sizeof a);
    snprintf(name, sizeof name, "writer_pull.%s", exts[e]);
    test_temp_path(name, b, sizeof b);
    struct sluice_write_options options;
    sluice_write_options_init(&options);
    options.no_fsync = 1;
    options.format_options = strcmp(exts[e], "avro") == 0 ? "sync=000102030405060708090a0b0c0d0e0f"
                                                          : NULL;
    struct sluice_error error = {0, {0}};
    assert_int_equal(push_all(csv, a, &options, &error), 0);
    assert_int_equal(pull_all(csv, b, &options, &error), 0);
    test_assert_same_files(a, b);
    unlink(a);
    unlink(b);
  }
  // Partitioned: the same files under the same directories.
  test_temp_path("writer_push_dir", a, sizeof a);
  test_temp_path("writer_pull_dir", b, sizeof b);
  remove_tree(a);
  remove_tree(b);
  static const char* const keys[] = {"k"};
  struct sluice_write_options options;
  sluice_write_options_init(&options);
  options.no_fsync = 1;
  options.format = "parquet";
  options.partition_by = keys;
  options.n_partition_by = 1;
  struct sluice_error error = {0, {0}};
  assert_int_equal(push_all(csv, a, &options, &error), 0);
  assert_int_equal(pull_all(csv, b, &options, &error), 0);
  for (int k = 0; k < 7; k++) {
    char fa[700], fb[700];
    snprintf(fa, sizeof fa, "%s/k=%d/part-0.parquet", a, k);
    snprintf(fb, sizeof fb, "%s/k=%d/part-0.parquet", b, k);
    test_assert_same_files(fa, fb);
  }
  remove_tree(a);
  remove_tree(b);
  unlink(csv);
}

static void test_abort_and_failures_leave_nothing(void** state) {
  (void)state;
  char csv[512], dst[512];
  test_temp_path("writer_in2.csv", csv, sizeof csv);
  test_temp_path("writer_out.parquet", dst, sizeof dst);
  make_csv(csv);
  FILE* f = fopen(dst, "w");  // an existing file stays as it was
  assert_non_null(f);
  fputs("old", f);
  fclose(f);
  struct test_batches b;
  read_batches(csv, &b);
  struct sluice_error error = {0, {0}};
  struct sluice_writer* w = NULL;
  // Abort after some batches.
  assert_int_equal(sluice_writer_open(dst, &b.schema, NULL, &w, &error), 0);
  for (int i = 0; i < 3; i++) {
    struct ArrowArray batch;
    sl_array_move(&b.arrays[i], &batch);
    assert_int_equal(sluice_writer_write(w, &batch, &error), 0);
  }
  sluice_writer_abort(w);
  size_t n = 0;
  uint8_t* data = test_read_file(dst, &n);
  assert_non_null(data);
  assert_int_equal(n, 3);
  free(data);
  // A batch that does not match the schema: the write fails, naming it,
  // from that write or a later one, or from close.
  assert_int_equal(sluice_writer_open(dst, &b.schema, NULL, &w, &error), 0);
  struct ArrowArray wrong;
  sl_array_move(&b.arrays[4], &wrong);
  struct ArrowArray* col = wrong.children[1];  // x: int64; claim it is a string column
  wrong.children[1] = wrong.children[2];
  wrong.children[2] = col;
  int rc = sluice_writer_write(w, &wrong, &error);
  for (int i = 5; rc == 0 && i < b.n; i++) {
    struct ArrowArray batch;
    sl_array_move(&b.arrays[i], &batch);
    rc = sluice_writer_write(w, &batch, &error);
  }
  if (rc == 0) {
    rc = sluice_writer_close(w, &error);
  } else {
    sluice_writer_abort(w);
  }
  assert_int_equal(rc, EINVAL);
  assert_non_null(strstr(error.message, "batch"));
  data = test_read_file(dst, &n);
  assert_non_null(data);
  assert_int_equal(n, 3);
  free(data);
  test_batches_release(&b);
  // An output that cannot be written: close says why.
  struct sluice_write_options options;
  sluice_write_options_init(&options);
  options.format = "nope";
  char bad[600];
  snprintf(bad, sizeof bad, "%s.nope", dst);
  assert_int_not_equal(push_all(csv, bad, &options, &error), 0);
  assert_non_null(strstr(error.message, "unknown output format"));
  assert_int_equal(access(bad, F_OK), -1);
  unlink(dst);
  unlink(csv);
}

struct sweep_ctx {
  const char *csv, *dst;
};

/// A failed write's code is the writer's, with or without an error struct
/// to take the message (which names the destination).
static void test_write_error_code_and_destination(void** state) {
  (void)state;
  char csv[512], dst[512];
  test_temp_path("writer_code.csv", csv, sizeof csv);
  make_csv(csv);
  test_temp_path("writer_code.parquet", dst, sizeof dst);
  struct sluice_write_options o;
  sluice_write_options_init(&o);
  o.format_options = "compression=nope";
  assert_int_equal(pull_all(csv, dst, &o, NULL), EINVAL);
  struct sluice_error err;
  assert_int_equal(pull_all(csv, dst, &o, &err), EINVAL);
  assert_int_equal(strncmp(err.message, dst, strlen(dst)), 0);
  assert_int_equal(err.message[strlen(dst)], ':');
  assert_int_equal(access(dst, F_OK), -1);
}

/// Options no write can take (a negative count, n_partition_by without
/// partition_by) are EINVAL naming the field, from sluice_write and from
/// sluice_writer_open itself, as the open options refuse theirs; before,
/// partition_by NULL crashed and negative counts became the defaults (a
/// single file for n_partition_by -1). Nothing is left at the location.
static void test_bad_write_options_refused(void** state) {
  (void)state;
  char csv[512], dst[512];
  test_temp_path("writer_bad_options.csv", csv, sizeof csv);
  test_temp_path("writer_bad_options_out", dst, sizeof dst);
  make_csv(csv);
  remove_tree(dst);
  static const char* const keys[] = {"k"};
  static const char* const fields[] = {"partition_by is NULL", "n_partition_by",
                                       "max_partitions", "partition_buffer_bytes",
                                       "max_rows_per_file"};
  struct test_batches b;
  read_batches(csv, &b);
  for (int c = 0; c < 5; c++) {
    struct sluice_write_options o;
    sluice_write_options_init(&o);
    o.format = "csv";
    o.no_fsync = 1;
    o.partition_by = c == 0 ? NULL : keys;
    o.n_partition_by = c == 0 ? 1 : c == 1 ? -1 : 1;
    if (c == 2) o.max_partitions = -3;
    if (c == 3) o.partition_buffer_bytes = -3;
    if (c == 4) o.max_rows_per_file = -1;
    struct sluice_error error = {0, {0}};
    assert_int_equal(pull_all(csv, dst, &o, &error), EINVAL);
    if (strstr(error.message, fields[c]) == NULL) fail_msg("case %d: %s", c, error.message);
    assert_int_equal(strncmp(error.message, dst, strlen(dst)), 0);
    assert_int_equal(access(dst, F_OK), -1);
    struct sluice_writer* w = (struct sluice_writer*)&b;  // overwritten with NULL
    memset(&error, 0, sizeof error);
    assert_int_equal(sluice_writer_open(dst, &b.schema, &o, &w, &error), EINVAL);
    assert_null(w);
    assert_non_null(strstr(error.message, fields[c]));
    assert_int_equal(access(dst, F_OK), -1);
  }
  test_batches_release(&b);
  unlink(csv);
}

/// A multipart part size over S3's 5 GiB is refused by the write API when
/// the output opens (it was taken, and S3 would have refused the first
/// part after the whole output was written); 5 GiB itself is taken. No
/// request is made: the endpoint does not listen.
static void test_part_size_over_s3s_limit_refused(void** state) {
  (void)state;
  char csv[512];
  test_temp_path("writer_part_size.csv", csv, sizeof csv);
  make_csv(csv);
  struct test_batches b;
  read_batches(csv, &b);
  for (int big = 0; big < 2; big++) {
    struct sluice_s3_options s3;
    memset(&s3, 0, sizeof s3);
    s3.endpoint_url = "http://127.0.0.1:1";
    s3.anonymous = 1;
    s3.part_size = (INT64_C(5) << 30) + big;
    struct sluice_write_options o;
    sluice_write_options_init(&o);
    o.format = "csv";
    o.s3 = &s3;
    struct sluice_error error = {0, {0}};
    struct sluice_writer* w = NULL;
    int rc = sluice_writer_open("s3://bucket/part.csv", &b.schema, &o, &w, &error);
    if (!big) {
      assert_int_equal(rc, 0);
      sluice_writer_abort(w);
      continue;
    }
    assert_int_equal(rc, EINVAL);
    assert_null(w);
    assert_non_null(strstr(error.message, "s3://bucket/part.csv: part size 5368709121 bytes"));
    assert_non_null(strstr(error.message, "at most 5g"));
    memset(&error, 0, sizeof error);
    assert_int_equal(pull_all(csv, "s3://bucket/part.csv", &o, &error), EINVAL);
    assert_non_null(strstr(error.message, "at most 5g"));
  }
  test_batches_release(&b);
  unlink(csv);
}

/// compression "" is no codec asked for, as NULL, in every format: the
/// same bytes as the default (before, Parquet refused it, the others took
/// it so).
static void test_empty_compression_is_the_default(void** state) {
  (void)state;
  char csv[512], a[512], b[512];
  test_temp_path("writer_empty_codec.csv", csv, sizeof csv);
  make_csv(csv);
  static const char* const exts[] = {"parquet", "csv", "arrow", "avro", "jsonl", "csv.gz"};
  for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
    char name[64];
    snprintf(name, sizeof name, "writer_codec_null.%s", exts[e]);
    test_temp_path(name, a, sizeof a);
    snprintf(name, sizeof name, "writer_codec_empty.%s", exts[e]);
    test_temp_path(name, b, sizeof b);
    struct sluice_write_options options;
    sluice_write_options_init(&options);
    options.no_fsync = 1;
    options.format_options = strcmp(exts[e], "avro") == 0 ? "sync=000102030405060708090a0b0c0d0e0f"
                                                          : NULL;
    struct sluice_error error = {0, {0}};
    assert_int_equal(pull_all(csv, a, &options, &error), 0);
    options.compression = "";
    if (pull_all(csv, b, &options, &error) != 0) fail_msg("%s: %s", exts[e], error.message);
    test_assert_same_files(a, b);
    unlink(a);
    unlink(b);
  }
  unlink(csv);
}

static int write_once(void* ctx, const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct sweep_ctx* s = ctx;
  struct sluice_write_options options;
  sluice_write_options_init(&options);
  options.allocator = alloc;
  options.no_fsync = 1;
  int rc = push_all(s->csv, s->dst, &options, error);
  if (rc != 0) assert_int_equal(access(s->dst, F_OK), -1);
  unlink(s->dst);
  return rc;
}

static void test_allocation_failures(void** state) {
  (void)state;
  char csv[512], dst[512];
  test_temp_path("writer_in3.csv", csv, sizeof csv);
  test_temp_path("writer_sweep.arrow", dst, sizeof dst);
  make_csv(csv);
  struct sweep_ctx s = {csv, dst};
  assert_true(test_alloc_sweep(write_once, &s, 99999) > 5);
  unlink(csv);
}

/// Counts the write's cancel polls, and where the stream stood at each.
struct poll_count {
  struct ArrowArrayStream* inner;
  atomic_int polls;  ///< (polled from the writer's thread and its flusher)
  int gets;
  int polls_at_get[8];
};

static int count_poll(void* user) {
  atomic_fetch_add(&((struct poll_count*)user)->polls, 1);
  return 0;
}

static int counting_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct poll_count* c = s->private_data;
  if (c->gets < 8) c->polls_at_get[c->gets] = atomic_load(&c->polls);
  c->gets++;
  return c->inner->get_next(c->inner, out);
}

static int counting_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct poll_count* c = s->private_data;
  return c->inner->get_schema(c->inner, out);
}

static const char* counting_last_error(struct ArrowArrayStream* s) {
  struct poll_count* c = s->private_data;
  return c->inner->get_last_error(c->inner);
}

static void counting_release(struct ArrowArrayStream* s) { s->release = NULL; }

/// One big batch written as CSV and JSON Lines: the cancel callback is
/// polled while it is written (per slice of rows and per buffer written),
/// not only between batches, so that Ctrl-C stops such a write soon.
static void test_cancel_is_polled_within_a_big_batch(void** state) {
  (void)state;
  char csv[512], dst[512];
  test_temp_path("writer_big.csv", csv, sizeof csv);
  FILE* f = fopen(csv, "w");
  assert_non_null(f);
  fprintf(f, "a,b\n");
  for (int i = 0; i < 300000; i++) fprintf(f, "%d,%d.25\n", i, i);
  assert_int_equal(fclose(f), 0);
  const char* exts[] = {"writer_big_out.csv", "writer_big_out.jsonl"};
  for (int e = 0; e < 2; e++) {
    struct test_batches b;
    struct sluice_error error = {0, {0}};
    assert_int_equal(test_batches_read(sl_csv_reader(), csv, 1000000, 0, &b, &error), 0);
    assert_true(b.n >= 1 && b.n < 8);  // a batch per split
    struct ArrowArrayStream inner, stream;
    test_batches_stream(&b, &inner);
    struct poll_count c = {.inner = &inner};
    stream = (struct ArrowArrayStream){.get_schema = counting_get_schema,
                                       .get_next = counting_get_next,
                                       .get_last_error = counting_last_error,
                                       .release = counting_release,
                                       .private_data = &c};
    test_temp_path(exts[e], dst, sizeof dst);
    struct sluice_write_options o;
    sluice_write_options_init(&o);
    o.no_fsync = 1;
    o.cancelled = count_poll;
    o.cancelled_user = &c;
    assert_int_equal(sluice_write(&stream, dst, &o, &error), 0);
    assert_int_equal(c.gets, b.n + 1);  // the batches, then the end
    // Polled after taking a batch and before asking for the next, and (new)
    // while writing it.
    for (int64_t i = 0; i < b.n; i++) assert_true(c.polls_at_get[i + 1] - c.polls_at_get[i] >= 3);
    inner.release(&inner);
    test_batches_release(&b);
    unlink(dst);
  }
  unlink(csv);
}

/// A foreign batch of one int64 column "x" over `values` (not copied); its
/// release only counts.
struct foreign {
  struct ArrowArray column, *children[1];
  const void* buffers[2];
  const void* top_buffers[1];
  int released;
};

static void foreign_child_release(struct ArrowArray* a) { a->release = NULL; }

static void foreign_release(struct ArrowArray* a) {
  struct foreign* f = a->private_data;
  f->released++;
  a->release = NULL;
}

static void foreign_batch(struct foreign* f, const int64_t* values, int64_t n,
                          struct ArrowArray* out) {
  f->buffers[0] = NULL;
  f->buffers[1] = values;
  f->top_buffers[0] = NULL;
  f->column = (struct ArrowArray){.length = n, .n_buffers = 2, .buffers = f->buffers,
                                  .release = foreign_child_release};
  f->children[0] = &f->column;
  *out = (struct ArrowArray){.length = n, .n_buffers = 1, .n_children = 1,
                             .buffers = f->top_buffers, .children = f->children,
                             .release = foreign_release, .private_data = f};
}

/// A producer refilling one buffer once sluice_writer_write returned (as
/// pyarrow's writers allow) writes what one with a buffer per batch writes:
/// the writer consumed each batch before returning, the Parquet writer
/// copied the rows its unfinished row group keeps.
static void test_batch_memory_reusable_after_write(void** state) {
  (void)state;
  struct ArrowSchema schema;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sl_schema_init(&schema, NULL, "+s", "", 0, 1, &error), 0);
  assert_int_equal(sl_schema_init(schema.children[0], NULL, "l", "x", 0, 0, &error), 0);
  enum { N = 5000, BATCHES = 4 };
  static int64_t reused[N], fresh[BATCHES][N];
  const char* names[] = {"reuse.parquet", "reuse.arrow", "reuse.csv", "reuse.arrows"};
  for (int e = 0; e < 4; e++) {
    char path[2][512];
    for (int k = 0; k < 2; k++) {
      char name[64];
      snprintf(name, sizeof name, "%d_%s", k, names[e]);
      test_temp_path(name, path[k], sizeof path[k]);
      struct sluice_write_options o;
      sluice_write_options_init(&o);
      o.no_fsync = 1;
      if (e == 0) o.format_options = "row_group_size=1000000";  // rows kept across batches
      struct sluice_writer* w = NULL;
      assert_int_equal(sluice_writer_open(path[k], &schema, &o, &w, &error), 0);
      struct foreign f[BATCHES];
      memset(f, 0, sizeof f);
      for (int b = 0; b < BATCHES; b++) {
        int64_t* values = k == 0 ? reused : fresh[b];
        for (int i = 0; i < N; i++) values[i] = (int64_t)b * 1000000 + i;
        struct ArrowArray batch;
        foreign_batch(&f[b], values, N, &batch);
        assert_int_equal(sluice_writer_write(w, &batch, &error), 0);
      }
      assert_int_equal(sluice_writer_close(w, &error), 0);
      for (int b = 0; b < BATCHES; b++) assert_int_equal(f[b].released, 1);
    }
    test_assert_same_files(path[0], path[1]);
    unlink(path[0]);
    unlink(path[1]);
  }
  schema.release(&schema);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pushed_equals_pulled),
      cmocka_unit_test(test_abort_and_failures_leave_nothing),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_write_error_code_and_destination),
      cmocka_unit_test(test_cancel_is_polled_within_a_big_batch),
      cmocka_unit_test(test_bad_write_options_refused),
      cmocka_unit_test(test_empty_compression_is_the_default),
      cmocka_unit_test(test_part_size_over_s3s_limit_refused),
      cmocka_unit_test(test_batch_memory_reusable_after_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
