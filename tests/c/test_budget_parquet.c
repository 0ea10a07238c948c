// The memory budget over Parquet row groups cut into smaller batches
// (batch_rows): the reader decodes a whole row group and hands out slices of
// it, so the row group stays alive until its last slice is released. The
// scan must count what a split holds decoded, not only the slices queued:
// with a budget smaller than a row group, workers waiting for room for their
// next slice must not each pin a decoded row group the budget never sees.
// Bytes alive at once are counted through the allocator hook.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define N_ROW_GROUPS 12
#define ROWS_PER_GROUP 262144
#define N_COLUMNS 2
#define BATCH_ROWS 16384
/// Decoded bytes of one row group: N_COLUMNS int64 columns.
#define GROUP_BYTES ((long long)ROWS_PER_GROUP * 8 * N_COLUMNS)
/// Less than a row group: at most one row group is decoded at a time.
#define BUDGET (GROUP_BYTES / 4)
#define THREADS 4
/// Allocations that are not batch data: column readers, queues, schema
/// copies, the scanner itself.
#define OVERHEAD (1024LL * 1024)

static int write_file(const char* path) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, pyarrow.parquet as pq, sys\n"
           "n=%d*%d\n"
           "t=pa.table({'a':pa.array(range(n),pa.int64()),'b':pa.array(range(n,2*n),pa.int64())})\n"
           "pq.write_table(t, sys.argv[1], row_group_size=%d, compression='none', "
           "use_dictionary=False)\" '%s' 2>/dev/null",
           N_ROW_GROUPS, ROWS_PER_GROUP, ROWS_PER_GROUP, path);
  return system(cmd);
}

/// Scans `path` with a slow consumer (so that workers run ahead as far as
/// the budget lets them); returns the allocator's peak live bytes.
static long long scan_peak(const char* path, int ordered, const char* format_options) {
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = &ta.base;
  options.memory_budget = BUDGET;
  options.threads = THREADS;
  options.ordered = ordered;
  options.format_options = format_options;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  if (sluice_dataset_open(path, &options, &ds, &error) != 0) fail_msg("open: %s", error.message);
  struct ArrowArrayStream stream;
  if (sluice_dataset_scan(ds, &stream, &error) != 0) fail_msg("scan: %s", error.message);
  long long baseline = atomic_load(&ta.live_bytes);
  atomic_store(&ta.peak_bytes, baseline);
  int64_t rows = 0, sum = 0;
  for (;;) {
    struct ArrowArray batch;
    if (stream.get_next(&stream, &batch) != 0) fail_msg("%s", stream.get_last_error(&stream));
    if (batch.release == NULL) break;
    const struct ArrowArray* a = batch.children[0];
    const int64_t* values = (const int64_t*)a->buffers[1] + a->offset;
    if (ordered) assert_int_equal(values[0], rows);
    for (int64_t i = 0; i < batch.length; ++i) sum += values[i];
    rows += batch.length;
    struct timespec pause = {0, 2 * 1000 * 1000};
    nanosleep(&pause, NULL);
    batch.release(&batch);
  }
  int64_t n = (int64_t)N_ROW_GROUPS * ROWS_PER_GROUP;
  assert_int_equal(rows, n);
  assert_int_equal(sum, n * (n - 1) / 2);
  stream.release(&stream);
  sluice_dataset_close(ds);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  return atomic_load(&ta.peak_bytes) - baseline;
}

static void test_sliced_row_groups_within_budget(void** unused) {
  (void)unused;
  char path[512];
  test_temp_path("budget.parquet", path, sizeof path);
  if (write_file(path) != 0) skip();  // pyarrow missing
  // The row group the consumer's batch pins, the one decoding, the budget.
  long long bound = 2 * GROUP_BYTES + BUDGET + OVERHEAD;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    long long sliced = scan_peak(path, ordered, "batch_rows=16384");
    long long whole = scan_peak(path, ordered, NULL);
    print_message("%s: peak live bytes with batch_rows %lld, whole row groups %lld; bound %lld\n",
                  ordered ? "ordered" : "unordered", sliced, whole, bound);
    assert_true(sliced <= bound);
    assert_true(whole <= bound);
  }
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sliced_row_groups_within_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
