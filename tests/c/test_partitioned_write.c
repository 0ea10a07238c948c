// sluice_write with partition_by: with a small buffer budget partitions
// spill many times, and each format keeps one file per partition open
// (row groups, batches, blocks or rows pushed), up to the limit of open
// files. The directory read back (Hive partitions) gives every row with its
// keys; an allocation-failure sweep over the whole write leaves nothing
// behind and nothing allocated, and over a directory holding data, leaves
// it as it was.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_array.h"
#include "core/sl_ref.h"
#include "format/csv/csv_reader.h"
#include "test_util.h"

#define ROWS 3000       // the read-back test's
#define SWEEP_ROWS 300  // the allocation-failure sweep's
#define N_NAMES 5

static const char* const k_names[N_NAMES] = {"plain", "a/b", "x=y %", "sp ace", ""};

/// The key values of row x (x = 0 .. ROWS-1), as the CSV holds them. An
/// empty name is a null in CSV.
static const char* name_of(int64_t x) { return k_names[(x * 7 + x / 13) % N_NAMES]; }
static int64_t day_of(int64_t x) { return (x * 11) % 4; }

static void make_csv(const char* path, int64_t rows) {
  FILE* f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "name,day,x,text,bucket\n");
  for (int64_t x = 0; x < rows; x++) {
    const char* name = name_of(x);
    fprintf(f, "%s%s%s,%lld,%lld,", name[0] ? "\"" : "", name, name[0] ? "\"" : "",
            (long long)day_of(x), (long long)x);
    if (x % 7 != 0) fprintf(f, "t%lld", (long long)(x * 3));  // else null
    fprintf(f, ",%lld\n", (long long)(x % 100));
  }
  assert_int_equal(fclose(f), 0);
}

static void remove_tree(const char* dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static int count_files(const char* dir, const char* name) {
  char cmd[900];
  snprintf(cmd, sizeof cmd, "find '%s' -type f -name '%s' | wc -l", dir, name);
  FILE* p = popen(cmd, "r");
  assert_non_null(p);
  int n = -1;
  assert_int_equal(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

static const char* const k_keys[] = {"name", "day"};
static const char* const k_bucket[] = {"bucket"};  // 100 partitions

/// Each batch of `b` as two struct arrays viewing its rows [0, h) and
/// [h, n) through the struct's own offset and length (as a C producer may
/// slice a batch): the key columns must be read at that offset too.
static void split_by_struct_offsets(struct test_batches* b) {
  struct test_batches halves;
  memset(&halves, 0, sizeof halves);
  struct sluice_error error = {0, {0}};
  assert_int_equal(sl_schema_copy(&b->schema, NULL, &halves.schema, &error), 0);
  for (int64_t i = 0; i < b->n; i++) {
    const struct ArrowArray* whole = NULL;
    int64_t n = b->arrays[i].length, h = n / 3;
    struct sl_ref* owner = sl_array_share(&b->arrays[i], NULL, &whole);
    assert_non_null(owner);
    for (int part = 0; part < 2; part++) {
      assert_true(halves.n < TEST_MAX_BATCHES);
      struct ArrowArray* v = &halves.arrays[halves.n++];
      assert_int_equal(sl_array_view(whole, owner, NULL, v, &error), 0);
      v->offset = part == 0 ? 0 : h;
      v->length = part == 0 ? h : n - h;
      v->null_count = 0;
    }
    sl_ref_release(owner);
  }
  halves.rows = b->rows;
  test_batches_release(b);
  *b = halves;
}

static int write_partitioned_into(const char* src, const char* dst, const char* format,
                                  const char* const* keys, int64_t n_keys, int64_t buffer_bytes,
                                  int existing, int64_t max_file_rows,
                                  const struct sluice_allocator* alloc,
                                  struct sluice_error* error) {
  struct test_batches b;
  assert_int_equal(test_batches_read(sl_csv_reader(), src, 211, 0, &b, error), 0);
  if (n_keys < 0) {
    n_keys = -n_keys;
    split_by_struct_offsets(&b);
  }
  struct ArrowArrayStream stream;
  test_batches_stream(&b, &stream);
  struct sluice_write_options options;
  sluice_write_options_init(&options);
  options.format = format;
  options.allocator = alloc;
  options.partition_by = keys;
  options.n_partition_by = n_keys;
  options.partition_buffer_bytes = buffer_bytes;
  options.no_fsync = 1;
  options.existing_data_behavior = existing;
  options.max_rows_per_file = max_file_rows;
  int rc = sluice_write(&stream, dst, &options, error);
  stream.release(&stream);
  test_batches_release(&b);
  return rc;
}

static int write_partitioned(const char* src, const char* dst, const char* format,
                             const char* const* keys, int64_t n_keys, int64_t buffer_bytes,
                             const struct sluice_allocator* alloc, struct sluice_error* error) {
  return write_partitioned_into(src, dst, format, keys, n_keys, buffer_bytes,
                                SLUICE_EXISTING_DATA_ERROR, 0, alloc, error);
}

/// A digest of everything under `dir`: names, kinds, sizes and contents
/// (hidden entries included), to see that a failed write left it as it was.
static void tree_digest(const char* dir, char out[33]) {
  char cmd[900];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && { find . -printf '%%P %%y %%s\\n'; find . -type f -exec md5sum {} +; } "
           "| sort | md5sum", dir);
  FILE* p = popen(cmd, "r");
  assert_non_null(p);
  assert_int_equal(fscanf(p, "%32s", out), 1);
  pclose(p);
}

static int64_t count_rows(const char* dir) {
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  struct sluice_dataset* ds = NULL;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sluice_dataset_open(dir, &options, &ds, &error), 0);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(stream.get_next(&stream, &batch), 0);
    if (batch.release == NULL) break;
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  sluice_dataset_close(ds);
  return rows;
}

static int64_t column_named(const struct ArrowSchema* schema, const char* name) {
  for (int64_t i = 0; i < schema->n_children; i++) {
    if (strcmp(schema->children[i]->name, name) == 0) return i;
  }
  fail_msg("no column %s", name);
  return -1;
}

/// Reads `dir` back and checks that it holds rows 0 .. rows-1 once each,
/// with their keys (name_of / day_of) and texts, whether those are file
/// columns or partition columns.
static void check_read_back(const char* dir, int64_t rows_written) {
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  struct sluice_dataset* ds = NULL;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sluice_dataset_open(dir, &options, &ds, &error), 0);
  struct ArrowSchema schema;
  assert_int_equal(sluice_dataset_schema(ds, &schema, &error), 0);
  assert_int_equal(schema.n_children, 5);
  int64_t c_x = column_named(&schema, "x"), c_text = column_named(&schema, "text");
  int64_t c_name = column_named(&schema, "name"), c_day = column_named(&schema, "day");
  assert_string_equal(schema.children[c_name]->format, "u");
  assert_string_equal(schema.children[c_day]->format, "l");
  schema.release(&schema);
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  unsigned char* seen = calloc((size_t)rows_written, 1);
  assert_non_null(seen);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(stream.get_next(&stream, &batch), 0);
    if (batch.release == NULL) break;
    const struct ArrowArray* xs = batch.children[c_x];
    const struct ArrowArray* texts = batch.children[c_text];
    const struct ArrowArray* names = batch.children[c_name];
    const struct ArrowArray* days = batch.children[c_day];
    for (int64_t r = 0; r < batch.length; r++) {
      int64_t x = ((const int64_t*)xs->buffers[1])[xs->offset + r];
      assert_true(x >= 0 && x < rows_written);
      assert_int_equal(seen[x], 0);
      seen[x] = 1;
      assert_int_equal(((const int64_t*)days->buffers[1])[days->offset + r], day_of(x));
      int64_t t = texts->offset + r;
      const uint8_t* t_valid = texts->buffers[0];
      int t_null = t_valid != NULL && !(t_valid[t >> 3] & (1u << (t & 7)));
      assert_int_equal(t_null, x % 7 == 0);
      if (!t_null) {
        char want_text[32];
        int len = snprintf(want_text, sizeof want_text, "t%lld", (long long)(x * 3));
        const int32_t* o = texts->buffers[1];
        assert_int_equal(o[t + 1] - o[t], len);
        assert_memory_equal((const char*)texts->buffers[2] + o[t], want_text, (size_t)len);
      }
      const char* want = name_of(x);
      const uint8_t* valid = names->buffers[0];
      int64_t i = names->offset + r;
      int is_null = valid != NULL && !(valid[i >> 3] & (1u << (i & 7)));
      if (want[0] == '\0') {
        assert_true(is_null);
      } else {
        assert_false(is_null);
        const int32_t* o = names->buffers[1];
        const char* d = names->buffers[2];
        assert_int_equal(o[i + 1] - o[i], (int32_t)strlen(want));
        assert_memory_equal(d + o[i], want, strlen(want));
      }
      rows++;
    }
    batch.release(&batch);
  }
  assert_int_equal(rows, rows_written);
  free(seen);
  stream.release(&stream);
  sluice_dataset_close(ds);
}

static void test_spilled_partitions_read_back(void** state) {
  (void)state;
  char src[512], dst[512];
  test_temp_path("partitioned_in.csv", src, sizeof src);
  test_temp_path("partitioned_out", dst, sizeof dst);
  make_csv(src, ROWS);
  remove_tree(dst);
  struct sluice_error error = {0, {0}};
  // 20 partitions; a 16 KiB budget makes each spill several times. Parquet
  // appends row groups to one file per partition.
  assert_int_equal(write_partitioned(src, dst, "parquet", k_keys, 2, 16 << 10, NULL, &error), 0);
  assert_int_equal(count_files(dst, "*"), N_NAMES * 4);
  assert_int_equal(count_files(dst, "part-0.parquet"), N_NAMES * 4);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  // The other formats keep their file open too: one file per partition,
  // each spill ending a batch (IPC) or block (Avro), or text rows.
  static const char* const others[] = {"arrow", "arrows", "avro", "csv"};
  for (size_t f = 0; f < sizeof others / sizeof others[0]; f++) {
    char name[32];
    snprintf(name, sizeof name, "part-0.%s", others[f]);
    assert_int_equal(write_partitioned(src, dst, others[f], k_keys, 2, 16 << 10, NULL, &error),
                     0);
    assert_int_equal(count_files(dst, "*"), N_NAMES * 4);
    assert_int_equal(count_files(dst, name), N_NAMES * 4);
    check_read_back(dst, ROWS);
    remove_tree(dst);
  }
  // 100 partitions: with a quarter of the descriptors this process may
  // open (here 1024 or more, when it may open 4096), all stay open: one
  // file each, as pyarrow (1024 open files) and DuckDB write them.
  struct rlimit limit, lowered;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= 4096) {
    assert_int_equal(
        write_partitioned(src, dst, "parquet", k_bucket, 1, 16 << 10, NULL, &error), 0);
    assert_int_equal(count_files(dst, "*"), 100);
    check_read_back(dst, ROWS);
    remove_tree(dst);
  }
  // Allowed 300 descriptors, at most 75 files are open (the floor is 64):
  // the least recently used are ended, and their partitions go on in part-1.
  lowered = limit;
  lowered.rlim_cur = 300;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  int rc = write_partitioned(src, dst, "parquet", k_bucket, 1, 16 << 10, NULL, &error);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &limit), 0);
  assert_int_equal(rc, 0);
  assert_int_equal(count_files(dst, "part-0.parquet"), 100);
  assert_true(count_files(dst, "part-1.parquet") > 0);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  // Allowed 64 (the floor of open files): 32 stay open, the rest of the
  // descriptors left to the process (64 open files failed with EMFILE).
  // (Nothing spills: each partition's file opens once, at the end.)
  lowered.rlim_cur = 64;
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  rc = write_partitioned(src, dst, "parquet", k_bucket, 1, INT64_MAX, NULL, &error);
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &limit), 0);
  assert_int_equal(rc, 0);
  assert_int_equal(count_files(dst, "part-0.parquet"), 100);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  // Batches sliced through their struct's offset (n_keys < 0 asks).
  assert_int_equal(write_partitioned(src, dst, "parquet", k_keys, -2, 16 << 10, NULL, &error), 0);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  // A budget that never spills (the write cache's size saturates).
  assert_int_equal(write_partitioned(src, dst, "parquet", k_keys, 2, INT64_MAX, NULL, &error), 0);
  assert_int_equal(count_files(dst, "*"), N_NAMES * 4);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  // The default budget: one file each.
  assert_int_equal(write_partitioned(src, dst, "arrow", k_keys, 2, 0, NULL, &error), 0);
  assert_int_equal(count_files(dst, "*"), N_NAMES * 4);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  unlink(src);
}

/// The rows of each file under `dir` (largest first in *largest), and how
/// many files there are.
static int64_t file_rows(const char* dir, const char* pattern, int64_t* largest,
                         int64_t* total) {
  char cmd[900];
  snprintf(cmd, sizeof cmd, "find '%s' -type f -name '%s' | sort", dir, pattern);
  FILE* p = popen(cmd, "r");
  assert_non_null(p);
  char path[1024];
  int64_t files = 0;
  *largest = 0;
  *total = 0;
  while (fgets(path, sizeof path, p) != NULL) {
    path[strcspn(path, "\n")] = '\0';
    int64_t rows = count_rows(path);
    if (rows > *largest) *largest = rows;
    *total += rows;
    files++;
  }
  pclose(p);
  return files;
}

/// max_rows_per_file: every partition's rows fill files of at most that
/// many (the last partly), named part-0, part-1, ..., in every
/// format, while spills split pieces between files; without partition_by
/// it is refused.
static void test_max_rows_per_file(void** state) {
  (void)state;
  char src[512], dst[512];
  test_temp_path("partitioned_max_rows.csv", src, sizeof src);
  test_temp_path("partitioned_max_rows_out", dst, sizeof dst);
  make_csv(src, ROWS);
  remove_tree(dst);
  struct sluice_error error = {0, {0}};
  static const char* const formats[] = {"parquet", "arrow", "arrows", "avro", "csv"};
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    // 20 partitions of ~150 rows; the 16 KiB budget spills each often.
    int rc = write_partitioned_into(src, dst, formats[f], k_keys, 2, 16 << 10,
                                    SLUICE_EXISTING_DATA_ERROR, 37, NULL, &error);
    if (rc != 0) fail_msg("%s: %s", formats[f], error.message);
    int64_t largest = 0, total = 0;
    int64_t files = file_rows(dst, "part-*", &largest, &total);
    assert_int_equal(total, ROWS);
    assert_int_equal(largest, 37);
    // ceil(rows / 37) files in each partition: only the last one short.
    int64_t want = 0;
    for (int n = 0; n < N_NAMES; n++) {
      for (int d = 0; d < 4; d++) {
        int64_t rows = 0;
        for (int64_t x = 0; x < ROWS; x++) rows += name_of(x) == k_names[n] && day_of(x) == d;
        want += (rows + 36) / 37;
      }
    }
    assert_int_equal(files, want);
    check_read_back(dst, ROWS);
    remove_tree(dst);
  }
  // A single file (no partition_by, no max_rows_per_file) refuses
  // existing_data_behavior: it is always replaced whole.
  char single[600];
  snprintf(single, sizeof single, "%s.parquet", dst);
  assert_int_equal(write_partitioned_into(src, single, "parquet", k_keys, 0, 0,
                                          SLUICE_EXISTING_DATA_APPEND, 0, NULL, &error),
                   EINVAL);
  assert_non_null(strstr(error.message, "existing_data_behavior"));
  assert_int_equal(access(single, F_OK), -1);
  assert_int_equal(write_partitioned_into(src, dst, "parquet", k_keys, 2, 0,
                                          SLUICE_EXISTING_DATA_ERROR, -1, NULL, &error),
                   EINVAL);
  assert_int_equal(access(dst, F_OK), -1);
  unlink(src);
}

struct sweep_run {
  const char *src, *dst, *format;
  int64_t n_keys, rows, max_file_rows;
};

static int write_once(void* ctx, const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct sweep_run* run = ctx;
  // 2 KiB: every partition spills before the end (and with max_file_rows,
  // pieces are split between files).
  int rc = write_partitioned_into(run->src, run->dst, run->format, k_keys, run->n_keys, 2 << 10,
                                  SLUICE_EXISTING_DATA_ERROR, run->max_file_rows, alloc, error);
  if (rc != 0) {
    assert_int_equal(access(run->dst, F_OK), -1);  // no directory (staging inside), no file
  } else {
    check_read_back(run->dst, run->rows);
    remove_tree(run->dst);
  }
  return rc;
}

static void sweep(const char* format, int64_t n_keys, int64_t rows, int64_t max_file_rows) {
  char src[512], dst[512];
  test_temp_path("partitioned_sweep.csv", src, sizeof src);
  test_temp_path("partitioned_sweep_out", dst, sizeof dst);
  make_csv(src, rows);
  remove_tree(dst);
  struct sweep_run run = {src, dst, format, n_keys, rows, max_file_rows};
  assert_true(test_alloc_sweep(write_once, &run, 99999) > 20);
  unlink(src);
}

struct existing_run {
  const char *src, *dst;
  int existing;
  char before[33];  ///< tree_digest of dst before each attempt
  int64_t n_keys;         ///< of k_keys
  int64_t max_file_rows;  ///< 0 = no limit
};

static int write_over_existing(void* ctx, const struct sluice_allocator* alloc,
                               struct sluice_error* error) {
  struct existing_run* run = ctx;
  // One key (5 partitions), the default budget: the spills have their own
  // sweep above; this one is about what the commit does to old files.
  int rc = write_partitioned_into(run->src, run->dst, "parquet", k_keys, run->n_keys, 0,
                                  run->existing, run->max_file_rows, alloc, error);
  if (rc != 0) {  // the old files as they were, nothing new, no staging directory
    char after[33];
    tree_digest(run->dst, after);
    assert_string_equal(after, run->before);
  }
  return rc;
}

/// max_rows_per_file without partition_by: the location becomes a directory
/// of part-0, part-1, ... of at most that many rows, all columns in them
/// (pyarrow's write_dataset without partitioning); what is there already
/// as existing_data_behavior says, the location being the one partition:
/// delete_matching empties it (other files and directories too), and any
/// failure on the way leaves it as it was.
static void test_dataset_without_partitions(void** state) {
  (void)state;
  char src[512], dst[512], other[600];
  test_temp_path("unpartitioned.csv", src, sizeof src);
  test_temp_path("unpartitioned_out", dst, sizeof dst);
  make_csv(src, ROWS);
  remove_tree(dst);
  struct sluice_error error = {0, {0}};
  static const char* const formats[] = {"parquet", "arrow", "avro", "csv"};
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    int rc = write_partitioned_into(src, dst, formats[f], k_keys, 0, 16 << 10,
                                    SLUICE_EXISTING_DATA_ERROR, 700, NULL, &error);
    if (rc != 0) fail_msg("%s: %s", formats[f], error.message);
    int64_t largest = 0, total = 0;
    assert_int_equal(file_rows(dst, "part-*", &largest, &total), (ROWS + 699) / 700);
    assert_int_equal(total, ROWS);
    assert_int_equal(largest, 700);
    assert_int_equal(count_files(dst, "*"), (ROWS + 699) / 700);  // nothing else, no directory
    check_read_back(dst, ROWS);
    remove_tree(dst);
  }
  assert_int_equal(write_partitioned_into(src, dst, "parquet", k_keys, 0, 0,
                                          SLUICE_EXISTING_DATA_ERROR, 700, NULL, &error), 0);
  assert_int_equal(write_partitioned_into(src, dst, "parquet", k_keys, 0, 0,
                                          SLUICE_EXISTING_DATA_ERROR, 700, NULL, &error),
                   EEXIST);
  // overwrite_or_ignore: the same five files again.
  assert_int_equal(write_partitioned_into(src, dst, "parquet", k_keys, 0, 0,
                                          SLUICE_EXISTING_DATA_OVERWRITE_OR_IGNORE, 700, NULL,
                                          &error), 0);
  assert_int_equal(count_files(dst, "*"), 5);
  check_read_back(dst, ROWS);
  // append: five more, part-5 .. part-9.
  assert_int_equal(write_partitioned_into(src, dst, "parquet", k_keys, 0, 0,
                                          SLUICE_EXISTING_DATA_APPEND, 700, NULL, &error), 0);
  assert_int_equal(count_files(dst, "part-9.parquet"), 1);
  assert_int_equal(count_rows(dst), 2 * ROWS);
  // delete_matching: whatever was there goes (a stray file, a directory).
  snprintf(other, sizeof other, "%s/notes.txt", dst);
  FILE* stray = fopen(other, "w");
  assert_non_null(stray);
  assert_int_equal(fclose(stray), 0);
  snprintf(other, sizeof other, "%s/k=1", dst);
  assert_int_equal(mkdir(other, 0755), 0);
  struct existing_run run = {src, dst, SLUICE_EXISTING_DATA_DELETE_MATCHING, {0}, 0, 1000};
  tree_digest(dst, run.before);
  assert_true(test_alloc_sweep(write_over_existing, &run, 99999) > 20);
  assert_int_equal(count_files(dst, "*"), 3);
  assert_int_equal(count_files(dst, ".sluice-*"), 0);
  assert_int_equal(access(other, F_OK), -1);
  check_read_back(dst, ROWS);
  remove_tree(dst);
  unlink(src);
}

/// Into a directory holding an earlier write: overwrite_or_ignore replaces
/// the files of the same names, delete_matching the partitions written,
/// append adds the new files beside the old (part-1 after part-0); any
/// failure on the way, the commit's moves included, leaves the directory
/// as it was.
static void test_existing_data_kept_or_replaced(void** state) {
  (void)state;
  char src[512], dst[512];
  test_temp_path("partitioned_existing.csv", src, sizeof src);
  test_temp_path("partitioned_existing_out", dst, sizeof dst);
  make_csv(src, SWEEP_ROWS);
  struct sluice_error error = {0, {0}};
  const int modes[] = {SLUICE_EXISTING_DATA_OVERWRITE_OR_IGNORE,
                       SLUICE_EXISTING_DATA_DELETE_MATCHING, SLUICE_EXISTING_DATA_APPEND};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    remove_tree(dst);
    assert_int_equal(write_partitioned(src, dst, "parquet", k_keys, 1, 0, NULL, &error), 0);
    // The default refuses a directory that is not empty, and names the way out.
    assert_int_equal(write_partitioned(src, dst, "parquet", k_keys, 1, 0, NULL, &error), EEXIST);
    assert_non_null(strstr(error.message, "existing_data_behavior"));
    struct existing_run run = {src, dst, modes[m], {0}, 1, 0};
    // A failure while the new files move in, after some have: the "sp ace"
    // partition comes last (first seen at row 4) and its directory's name
    // is taken by a file. Every move is undone.
    char blocker[700], aside[700];
    snprintf(blocker, sizeof blocker, "%s/name=sp%%20ace", dst);
    snprintf(aside, sizeof aside, "%s.aside", dst);
    assert_int_equal(rename(blocker, aside), 0);
    FILE* f = fopen(blocker, "w");
    assert_non_null(f);
    assert_int_equal(fclose(f), 0);
    tree_digest(dst, run.before);
    assert_int_equal(write_over_existing(&run, NULL, &error), ENOTDIR);
    assert_non_null(strstr(error.message, "name=sp%20ace"));
    assert_int_equal(unlink(blocker), 0);
    assert_int_equal(rename(aside, blocker), 0);
    tree_digest(dst, run.before);
    assert_true(test_alloc_sweep(write_over_existing, &run, 99999) > 20);
    assert_int_equal(count_files(dst, ".sluice-*"), 0);
    if (modes[m] == SLUICE_EXISTING_DATA_APPEND) {
      assert_int_equal(count_files(dst, "part-0.parquet"), N_NAMES);
      assert_int_equal(count_files(dst, "part-1.parquet"), N_NAMES);
      assert_int_equal(count_rows(dst), 2 * SWEEP_ROWS);
    } else {  // the same files again (overwrite_or_ignore), or in place of them
      assert_int_equal(count_files(dst, "*"), N_NAMES);
      check_read_back(dst, SWEEP_ROWS);
    }
  }
  remove_tree(dst);
  unlink(src);
}

static void test_allocation_failures_leave_nothing(void** state) {
  (void)state;
  sweep("parquet", 2, SWEEP_ROWS, 0);  // row groups pushed
  sweep("arrow", 2, SWEEP_ROWS, 0);    // batches pushed, dictionaries unified across them
  sweep("avro", 2, SWEEP_ROWS, 0);     // blocks pushed
  sweep("csv", 2, SWEEP_ROWS, 0);      // rows spelled by a pool of threads started per spill
  sweep("parquet", 1, 40, 3);          // 5 partitions, pieces split between files of 3 rows
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spilled_partitions_read_back),
      cmocka_unit_test(test_max_rows_per_file),
      cmocka_unit_test(test_allocation_failures_leave_nothing),
      cmocka_unit_test(test_existing_data_kept_or_replaced),
      cmocka_unit_test(test_dataset_without_partitions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
