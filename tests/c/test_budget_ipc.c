// The memory budget over a real file: scanning a zstd-compressed Arrow IPC
// file (every batch is decompressed into allocated memory) with a small budget
// keeps the bytes alive at once, counted through the allocator hook, under the
// budget plus the one batch the consumer holds; the same scan without a budget
// goes far past that bound, which shows the budget is what holds it down.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

#define N_BATCHES 64
#define ROWS_PER_BATCH 65536
/// Decoded bytes of one batch: one int64 column.
#define BATCH_BYTES ((long long)ROWS_PER_BATCH * 8)
#define BUDGET (4 * BATCH_BYTES)
/// Allocations that are not batch data: decompression contexts, queues,
/// schema copies, the scanner itself.
#define OVERHEAD (1024LL * 1024)

static int write_compressed_file(const char* path) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c \"import pyarrow as pa, sys\n"
           "sch=pa.schema([('a',pa.int64())])\n"
           "opts=pa.ipc.IpcWriteOptions(compression='zstd')\n"
           "w=pa.ipc.new_file(sys.argv[1], sch, options=opts)\n"
           "for k in range(%d):\n"
           "  w.write_batch(pa.record_batch([pa.array(range(k*%d,(k+1)*%d),pa.int64())],schema=sch))\n"
           "w.close()\" '%s' 2>/dev/null",
           N_BATCHES, ROWS_PER_BATCH, ROWS_PER_BATCH, path);
  return system(cmd);
}

/// Peak live bytes of a scan with a slow consumer; checks every row came.
static long long scan_peak(const char* path, long long budget) {
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.memory_budget = budget;
  options.threads = 2;
  struct test_scan_peak seen = test_scan_peak(path, options, 5);
  assert_int_equal(seen.rows, (int64_t)N_BATCHES * ROWS_PER_BATCH);
  assert_true(seen.in_order);
  return seen.peak_bytes;
}

static void test_budget_bounds_decoded_bytes(void** unused) {
  (void)unused;
  char path[512];
  test_temp_path("budget.arrow", path, sizeof path);
  if (write_compressed_file(path) != 0) skip();  // pyarrow missing
  long long bounded = scan_peak(path, BUDGET);
  long long unbounded = scan_peak(path, 1LL << 40);
  unlink(path);
  long long bound = BUDGET + BATCH_BYTES + OVERHEAD;
  print_message("peak live bytes: budget %lld -> %lld; no budget -> %lld; bound %lld\n",
                (long long)BUDGET, bounded, unbounded, bound);
  assert_true(bounded <= bound);
  assert_true(unbounded > 2 * bound);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_budget_bounds_decoded_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
