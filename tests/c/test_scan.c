// Scan engine tests over a synthetic in-test format: N splits of int64
// batches whose values encode their position, so that any reordering, loss or
// duplication shows.
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

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "scan/sl_scan.h"
#include "test_util.h"

/* ---- The synthetic format ------------------------------------------------- */

/// Column c of global row r holds r * 10 + c, where r counts rows in plan
/// order across all splits.
struct synth {
  const struct sluice_allocator* alloc;
  int64_t n_splits;
  int64_t batches;  // per split
  int64_t rows;     // per batch
  int64_t n_cols;
  int64_t fail_split;  // -1 = none; fails its second batch
  int can_project;
  int64_t est_bytes;
  /// Column parts test: a split opened without column 0 has one batch more
  /// (a reader breaking the split_by_columns promise).
  int batches_depend_on_columns;
  const int64_t* column_weights;  // column_bytes' answers (NULL = 0)
  atomic_llong batches_made;
  atomic_llong opens;
  atomic_llong widest_open;  // most columns asked for in one split_open
  atomic_llong repeats_asked;  // split_opens given a column twice
};

struct synth_state {
  struct synth* synth;
  int64_t split;
  int64_t batch;
  int64_t cols[8];
  int64_t n_cols;
  int projected;
};

static int64_t synth_value(const struct synth* s, int64_t split, int64_t batch, int64_t i,
                           int64_t col) {
  return ((split * s->batches + batch) * s->rows + i) * 10 + col;
}

static int synth_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                            int64_t n_columns, void** state, int* projected,
                            struct sluice_error* error) {
  struct synth* s = reader;
  struct synth_state* st = calloc(1, sizeof *st);
  if (st == NULL) return sl_error_set(error, ENOMEM, "synth: out of memory");
  st->synth = s;
  st->split = split->index;
  atomic_fetch_add(&s->opens, 1);
  int64_t asked = columns != NULL ? n_columns : s->n_cols;
  if (columns != NULL && sl_columns_repeat(columns, n_columns))
    atomic_fetch_add(&s->repeats_asked, 1);
  for (long long w = atomic_load(&s->widest_open);
       asked > w && !atomic_compare_exchange_weak(&s->widest_open, &w, asked);) {
  }
  if (s->can_project && columns != NULL) {
    st->n_cols = n_columns;
    memcpy(st->cols, columns, (size_t)n_columns * sizeof *columns);
    st->projected = 1;
  } else {
    st->n_cols = s->n_cols;
    for (int64_t c = 0; c < s->n_cols; ++c) st->cols[c] = c;
  }
  *projected = st->projected;
  *state = st;
  return 0;
}

static int synth_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct synth_state* st = state;
  struct synth* s = st->synth;
  out->release = NULL;
  int64_t batches = s->batches;
  if (s->batches_depend_on_columns && st->n_cols > 0 && st->cols[0] != 0) batches++;
  if (st->batch == batches) return 0;
  if (st->split == s->fail_split && st->batch == 1) {
    return sl_error_set(error, EILSEQ, "synth: split %lld is broken at batch 1",
                        (long long)st->split);
  }
  int rc = sl_array_init(out, s->alloc, 1, st->n_cols, error);
  if (rc != 0) return rc;
  out->length = s->rows;
  for (int64_t c = 0; c < st->n_cols; ++c) {
    struct ArrowArray* child = out->children[c];
    rc = sl_array_init(child, s->alloc, 2, 0, error);
    if (rc != 0) break;
    int64_t* data = sl_alloc_buffer(s->alloc, (size_t)s->rows * 8);
    if (data == NULL) {
      rc = sl_error_set(error, ENOMEM, "synth: out of memory");
      break;
    }
    for (int64_t i = 0; i < s->rows; ++i) {
      data[i] = synth_value(s, st->split, st->batch, i, st->cols[c]);
    }
    sl_array_set_buffer_owned(child, 1, data, s->rows * 8);
    child->length = s->rows;
  }
  if (rc != 0) {
    out->release(out);
    return rc;
  }
  st->batch++;
  atomic_fetch_add(&s->batches_made, 1);
  return 0;
}

static void synth_split_close(void* state) { free(state); }

static const struct sl_format_reader synth_format = {
    .name = "synth",
    .split_open = synth_split_open,
    .split_next = synth_split_next,
    .split_close = synth_split_close,
};

static int64_t synth_column_bytes(void* reader, int64_t column) {
  const struct synth* s = reader;
  return s->column_weights != NULL ? s->column_weights[column] : 0;
}

/// The same format, declaring that its splits decode by column subsets (and
/// how big its columns are).
static const struct sl_format_reader synth_columns_format = {
    .name = "synth-columns",
    .split_open = synth_split_open,
    .split_next = synth_split_next,
    .split_close = synth_split_close,
    .split_by_columns = 1,
    .column_bytes = synth_column_bytes,
};

/// Fixture: the synthetic reader, its splits and schema, and scan arguments
/// pointing at them.
struct fixture {
  struct test_allocator ta;
  struct synth synth;
  struct sl_split* splits;
  struct ArrowSchema schema;
  struct sl_scan_args args;
};

static void fixture_init(struct fixture* f, int64_t n_splits, int64_t batches, int64_t rows,
                         int64_t n_cols) {
  memset(f, 0, sizeof *f);
  test_allocator_init(&f->ta);
  f->synth.alloc = &f->ta.base;
  f->synth.n_splits = n_splits;
  f->synth.batches = batches;
  f->synth.rows = rows;
  f->synth.n_cols = n_cols;
  f->synth.fail_split = -1;
  f->synth.est_bytes = rows * 8 * n_cols;
  atomic_init(&f->synth.batches_made, 0);
  atomic_init(&f->synth.opens, 0);
  atomic_init(&f->synth.widest_open, 0);
  atomic_init(&f->synth.repeats_asked, 0);
  f->splits = calloc((size_t)(n_splits > 0 ? n_splits : 1), sizeof *f->splits);
  assert_non_null(f->splits);
  for (int64_t i = 0; i < n_splits; ++i) {
    f->splits[i].index = i;
    f->splits[i].est_bytes = f->synth.est_bytes;
    f->splits[i].est_rows = batches * rows;
  }
  // The schema is plain malloc memory of the test's own: only the scan's
  // allocations are counted.
  assert_int_equal(sl_schema_init(&f->schema, NULL, "+s", NULL, 0, n_cols, NULL), 0);
  for (int64_t c = 0; c < n_cols; ++c) {
    char name[32];
    snprintf(name, sizeof name, "c%lld", (long long)c);
    assert_int_equal(sl_schema_init(f->schema.children[c], NULL, "l", name, 2, 0, NULL), 0);
  }
  struct sl_scan_args* a = &f->args;
  a->format = &synth_format;
  a->reader = &f->synth;
  a->splits = f->splits;
  a->n_splits = n_splits;
  a->schema = &f->schema;
  a->threads = 4;
  a->ordered = 1;
  a->limit = -1;
  a->alloc = &f->ta.base;
  a->slow_split = -1;
}

static void fixture_done(struct fixture* f) {
  f->schema.release(&f->schema);
  free(f->splits);
  assert_int_equal(atomic_load(&f->ta.live_bytes), 0);
}

/// Checks that `batch` is (split, b) with all rows, column j holding column
/// cols[j] (cols NULL = identity).
static void check_batch(const struct synth* s, const struct ArrowArray* batch, int64_t split,
                        int64_t b, const int64_t* cols, int64_t n_cols, int64_t rows) {
  assert_int_equal(batch->length, rows);
  assert_int_equal(batch->n_children, n_cols);
  for (int64_t j = 0; j < n_cols; ++j) {
    const struct ArrowArray* child = batch->children[j];
    const int64_t* data = child->buffers[1];
    int64_t col = cols != NULL ? cols[j] : j;
    for (int64_t i = 0; i < rows; ++i) {
      assert_int_equal(data[child->offset + i], synth_value(s, split, b, i, col));
    }
  }
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_ordered_with_slow_first_split(void** unused) {
  (void)unused;
  struct fixture f;
  fixture_init(&f, 8, 3, 50, 2);
  f.args.slow_split = 0;
  f.args.slow_split_delay_us = 200 * 1000;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  for (int64_t s = 0; s < 8; ++s) {
    for (int64_t b = 0; b < 3; ++b) {
      struct ArrowArray batch;
      struct sluice_batch_tag tag;
      assert_int_equal(sl_scan_next(scan, &batch, &tag, NULL), 0);
      assert_non_null(batch.release);
      assert_int_equal(tag.split, s);
      assert_int_equal(tag.batch, b);
      check_batch(&f.synth, &batch, s, b, NULL, 2, 50);
      if (s == 0 && b == 0) {
        // While split 0 slept, the other workers went on with later splits.
        assert_true(atomic_load(&f.synth.batches_made) > 3);
      }
      batch.release(&batch);
    }
  }
  struct ArrowArray end;
  assert_int_equal(sl_scan_next(scan, &end, NULL, NULL), 0);
  assert_null(end.release);
  assert_int_equal(sl_scan_next(scan, &end, NULL, NULL), 0);
  assert_null(end.release);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static int compare_tags(const void* a, const void* b) {
  const struct sluice_batch_tag* x = a;
  const struct sluice_batch_tag* y = b;
  if (x->split != y->split) return x->split < y->split ? -1 : 1;
  return x->batch < y->batch ? -1 : x->batch > y->batch;
}

static void test_unordered_completion_order(void** unused) {
  (void)unused;
  struct fixture f;
  fixture_init(&f, 8, 3, 50, 1);
  f.args.ordered = 0;
  f.args.slow_split = 0;
  f.args.slow_split_delay_us = 200 * 1000;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  struct sluice_batch_tag tags[24];
  int n = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(sl_scan_next(scan, &batch, &tags[n], NULL), 0);
    if (batch.release == NULL) break;
    assert_true(n < 24);
    // The tag tells the batch's true position.
    check_batch(&f.synth, &batch, tags[n].split, tags[n].batch, NULL, 1, 50);
    batch.release(&batch);
    ++n;
  }
  assert_int_equal(n, 24);
  // The delayed split finishes last, so it is not first and is delivered last.
  assert_int_not_equal(tags[0].split, 0);
  assert_int_equal(tags[23].split, 0);
  qsort(tags, 24, sizeof tags[0], compare_tags);
  for (int i = 0; i < 24; ++i) {
    assert_int_equal(tags[i].split, i / 3);
    assert_int_equal(tags[i].batch, i % 3);
  }
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void test_zero_splits(void** unused) {
  (void)unused;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_init(&f, 0, 0, 0, 3);
    f.args.ordered = ordered;
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    struct ArrowArray batch;
    assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
    assert_null(batch.release);
    sl_scan_stop(scan);
    fixture_done(&f);
  }
}

static void run_limit_on(int64_t n_splits, int64_t batches, int64_t rows_per_batch, int ordered,
                         int64_t limit, int64_t expect_rows, int64_t slow_split) {
  struct fixture f;
  fixture_init(&f, n_splits, batches, rows_per_batch, 1);
  f.args.slow_split = slow_split;
  f.args.slow_split_delay_us = 20 * 1000;
  f.args.ordered = ordered;
  f.args.limit = limit;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    assert_int_equal(sl_scan_next(scan, &batch, &tag, NULL), 0);
    if (batch.release == NULL) break;
    // Rows kept are the batch's first rows, values intact.
    const int64_t* data = batch.children[0]->buffers[1];
    for (int64_t i = 0; i < batch.length; ++i) {
      assert_int_equal(data[i], synth_value(&f.synth, tag.split, tag.batch, i, 0));
    }
    if (ordered) assert_int_equal(data[0], rows * 10);
    // A cut batch's columns are cut too: a stream's consumer (pyarrow's
    // record batch importer) takes the children as the columns.
    for (int64_t c = 0; c < batch.n_children; ++c)
      assert_int_equal(batch.children[c]->length, batch.length);
    rows += batch.length;
    batch.release(&batch);
  }
  assert_int_equal(rows, expect_rows);
  sl_scan_stop(scan);
  fixture_done(&f);
}

/// Once decoded rows cover the limit, workers stop decoding (no budget's
/// worth of wasted work after `--limit 10`).
static void test_limit_stops_decoding(void** unused) {
  (void)unused;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_init(&f, 50, 10, 100, 1);
    f.args.ordered = ordered;
    f.args.limit = 250;
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);  // give the workers time to run ahead if they would
    int64_t rows = 0;
    for (;;) {
      struct ArrowArray batch;
      assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
      if (batch.release == NULL) break;
      rows += batch.length;
      batch.release(&batch);
    }
    assert_int_equal(rows, 250);
    // At most 3 batches per worker (4) before the limit was covered.
    assert_true(atomic_load(&f.synth.batches_made) <= 12);
    sl_scan_stop(scan);
    fixture_done(&f);
  }
}

static void run_limit(int ordered, int64_t limit, int64_t expect_rows) {
  run_limit_on(6, 4, 100, ordered, limit, expect_rows, -1);
}

static void test_limit(void** unused) {
  (void)unused;
  // A limit spanning several one-batch splits: covering the limit at a later
  // split must not cut the earlier ones still decoding.
  for (int i = 0; i < 5; ++i) {
    run_limit_on(20, 1, 1000, 1, 1500, 1500, 0);
    run_limit_on(20, 1, 1000, 0, 1500, 1500, 0);
  }
  for (int i = 0; i < 50; ++i) {
    run_limit_on(20, 1, 1000, 1, 1500, 1500, -1);
    run_limit_on(20, 1, 1000, 0, 1500, 1500, -1);
  }
  run_limit(1, 250, 250);   // cuts the third batch in half
  run_limit(0, 250, 250);
  run_limit(1, 300, 300);   // ends on a batch boundary
  run_limit(1, 0, 0);
  run_limit(1, 100000, 2400);
  run_limit(0, 1, 1);
}

static void run_projection(int can_project) {
  struct fixture f;
  fixture_init(&f, 5, 2, 20, 4);
  f.synth.can_project = can_project;
  const int64_t cols[] = {3, 1};
  f.args.columns = cols;
  f.args.n_columns = 2;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  for (int64_t s = 0; s < 5; ++s) {
    for (int64_t b = 0; b < 2; ++b) {
      struct ArrowArray batch;
      assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
      assert_non_null(batch.release);
      check_batch(&f.synth, &batch, s, b, cols, 2, 20);
      batch.release(&batch);
    }
  }
  struct ArrowArray end;
  assert_int_equal(sl_scan_next(scan, &end, NULL, NULL), 0);
  assert_null(end.release);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void test_projection(void** unused) {
  (void)unused;
  run_projection(0);  // the engine projects
  run_projection(1);  // the reader projects
}

static void test_error_propagates(void** unused) {
  (void)unused;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_init(&f, 20, 3, 10, 1);
    f.synth.fail_split = 5;
    f.args.ordered = ordered;
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    struct sluice_error error;
    sl_error_clear(&error);
    int rc = 0;
    int64_t batches = 0;
    for (;;) {
      struct ArrowArray batch;
      rc = sl_scan_next(scan, &batch, NULL, &error);
      if (rc != 0) {
        assert_null(batch.release);
        break;
      }
      assert_non_null(batch.release);  // the scan must not end cleanly
      batch.release(&batch);
      ++batches;
    }
    assert_int_equal(rc, EILSEQ);
    assert_int_equal(error.code, EILSEQ);
    assert_non_null(strstr(error.message, "split 5 is broken at batch 1"));
    assert_true(batches < 60);
    // The error sticks.
    struct ArrowArray again;
    assert_int_equal(sl_scan_next(scan, &again, NULL, NULL), EILSEQ);
    sl_scan_stop(scan);
    fixture_done(&f);
  }
}

static void run_budget(int ordered) {
  const int64_t rows = 1024;          // 8 KiB per batch, a multiple of 64
  const int64_t batch_bytes = rows * 8;
  const int64_t budget = 4 * batch_bytes;
  struct fixture f;
  fixture_init(&f, 32, 8, rows, 1);
  f.args.ordered = ordered;
  f.args.memory_budget = budget;
  f.args.slow_split = 1;
  f.args.slow_split_delay_us = 20 * 1000;
  assert_int_equal(atomic_load(&f.ta.live_bytes), 0);
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  int64_t n = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
    if (batch.release == NULL) break;
    // A slow consumer: the workers run ahead until the budget stops them.
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
    batch.release(&batch);
    ++n;
  }
  assert_int_equal(n, 32 * 8);
  int64_t peak = sl_scan_peak_in_flight(scan);
  assert_true(peak <= budget);
  assert_true(peak >= 2 * batch_bytes);  // the budget was actually used
  long long live_peak = atomic_load(&f.ta.peak_bytes);
  // In flight + the batch the consumer holds + the scan's own bookkeeping,
  // node headers and queue items (about 10 KiB here).
  assert_true(live_peak <= budget + batch_bytes + 16 * 1024);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void test_memory_budget(void** unused) {
  (void)unused;
  run_budget(1);
  run_budget(0);
}

/// Batches of one row (8 bytes of data, a few hundred bytes of structs and
/// allocations): the budget charges each node, so a slow consumer holds
/// the scan to about the budget. Charging the data alone let the workers
/// decode every batch ahead (4,096 batches, about 2 MB against 64 KiB).
static void test_memory_budget_tiny_batches(void** unused) {
  (void)unused;
  const int64_t budget = 64 << 10;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_init(&f, 8, 512, 1, 1);
    f.args.ordered = ordered;
    f.args.memory_budget = budget;
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    int64_t n = 0;
    for (;;) {
      struct ArrowArray batch;
      assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
      if (batch.release == NULL) break;
      if (n % 64 == 0) {  // a slow consumer: the workers run ahead
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
      }
      batch.release(&batch);
      ++n;
    }
    assert_int_equal(n, 8 * 512);
    long long live_peak = atomic_load(&f.ta.peak_bytes);
    // (a batch is admitted on its split's estimate, 8 bytes, then charged
    // in full: each of the 4 workers may pass the budget by one batch)
    assert_true(sl_scan_peak_in_flight(scan) <= budget + 4 * 1024);
    // The batches in flight, their queue items and the scan's bookkeeping.
    assert_true(live_peak <= 2 * budget);
    sl_scan_stop(scan);
    fixture_done(&f);
  }
}

/// A batch bigger than the whole budget must still pass (no deadlock).
static void test_budget_smaller_than_a_batch(void** unused) {
  (void)unused;
  struct fixture f;
  fixture_init(&f, 6, 2, 1000, 1);
  f.args.memory_budget = 100;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  int64_t n = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
    if (batch.release == NULL) break;
    batch.release(&batch);
    ++n;
  }
  assert_int_equal(n, 12);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void test_stop_early(void** unused) {
  (void)unused;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_init(&f, 100, 10, 100, 2);
    f.args.ordered = ordered;
    f.args.memory_budget = 3 * 1600;  // workers will be waiting on the budget
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    struct ArrowArray kept;
    assert_int_equal(sl_scan_next(scan, &kept, NULL, NULL), 0);
    for (int i = 0; i < 3; ++i) {
      struct ArrowArray batch;
      assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
      batch.release(&batch);
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    sl_scan_stop(scan);
    // Arrays already returned outlive the scan.
    assert_int_equal(kept.length, 100);
    kept.release(&kept);
    fixture_done(&f);
  }
  // Stopping before taking anything, and right after starting.
  struct fixture f;
  fixture_init(&f, 1000, 2, 10, 1);
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void run_many_splits(int ordered) {
  struct fixture f;
  fixture_init(&f, 10000, 1, 4, 1);
  f.args.ordered = ordered;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  char* seen = calloc(10000, 1);
  assert_non_null(seen);
  int64_t n = 0;
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    assert_int_equal(sl_scan_next(scan, &batch, &tag, NULL), 0);
    if (batch.release == NULL) break;
    if (ordered) assert_int_equal(tag.split, n);
    assert_true(tag.split >= 0 && tag.split < 10000);
    assert_int_equal(seen[tag.split], 0);
    seen[tag.split] = 1;
    const int64_t* data = batch.children[0]->buffers[1];
    assert_int_equal(data[0], tag.split * 40);
    batch.release(&batch);
    ++n;
  }
  assert_int_equal(n, 10000);
  free(seen);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void test_many_splits(void** unused) {
  (void)unused;
  run_many_splits(1);
  run_many_splits(0);
}

static int count_rows(void* ctx, const struct ArrowArray* batch, struct sluice_error* error) {
  (void)error;
  atomic_fetch_add((atomic_llong*)ctx, batch->length);
  return 0;
}

static int fail_on_batch(void* ctx, const struct ArrowArray* batch, struct sluice_error* error) {
  (void)ctx;
  (void)batch;
  return sl_error_set(error, ERANGE, "hook refused the batch");
}

static void test_on_batch_hook(void** unused) {
  (void)unused;
  struct fixture f;
  fixture_init(&f, 10, 3, 7, 1);
  atomic_llong rows;
  atomic_init(&rows, 0);
  f.args.on_batch = count_rows;
  f.args.on_batch_ctx = &rows;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
    if (batch.release == NULL) break;
    batch.release(&batch);
  }
  assert_int_equal(atomic_load(&rows), 10 * 3 * 7);
  sl_scan_stop(scan);

  f.args.on_batch = fail_on_batch;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  struct sluice_error error;
  struct ArrowArray batch;
  assert_int_equal(sl_scan_next(scan, &batch, NULL, &error), ERANGE);
  assert_string_equal(error.message, "hook refused the batch");
  sl_scan_stop(scan);
  fixture_done(&f);
}

/// Runs a scan of f's arguments to its end, where every failure (the
/// allocator failing one allocation) must be a clean ENOMEM; `children`
/// (when >= 0) is every batch's width.
static void scan_to_end_or_enomem(struct fixture* f, int64_t children) {
  struct sl_scan* scan = NULL;
  struct sluice_error error;
  if (sl_scan_start(&f->args, &scan, &error) != 0) {
    assert_int_equal(error.code, ENOMEM);
    return;
  }
  for (;;) {
    struct ArrowArray batch;
    int rc = sl_scan_next(scan, &batch, NULL, &error);
    if (rc != 0) {
      assert_int_equal(rc, ENOMEM);
      break;
    }
    if (batch.release == NULL) break;
    if (children >= 0) assert_int_equal(batch.n_children, children);
    batch.release(&batch);
  }
  sl_scan_stop(scan);
}

/// Allocation failures anywhere (scan setup, queue items, batches) fail the
/// scan cleanly: an error or a complete result, and nothing leaked.
static void test_allocation_failures(void** unused) {
  (void)unused;
  for (long long fail_at = 1; fail_at < 60; ++fail_at) {
    struct fixture f;
    fixture_init(&f, 4, 2, 8, 2);
    f.args.threads = 2;
    atomic_store(&f.ta.fail_at, fail_at);
    scan_to_end_or_enomem(&f, -1);
    fixture_done(&f);
  }
}

/// Random shapes, budgets, thread counts, limits and failures: every scan
/// ends (no deadlock), delivers exactly what it should, and leaks nothing.
static void test_randomized(void** unused) {
  (void)unused;
  unsigned seed = 12345;
  unsigned parts_seed = 777;  // its own, so that the shapes above stay as they were
  for (int iter = 0; iter < 300; ++iter) {
    int64_t n_splits = rand_r(&seed) % 40;
    int64_t batches = rand_r(&seed) % 5;
    int64_t rows = rand_r(&seed) % 40;
    struct fixture f;
    fixture_init(&f, n_splits, batches, rows, 1 + rand_r(&seed) % 2);
    f.args.threads = 1 + rand_r(&seed) % 6;
    if (rand_r(&parts_seed) % 2) {
      // A reader that splits by columns: with fewer splits than threads and
      // two columns, each split runs as two column parts.
      f.args.format = &synth_columns_format;
      f.synth.can_project = 1;
    }
    f.args.ordered = rand_r(&seed) % 2;
    f.args.memory_budget = 1 + rand_r(&seed) % 4096;
    if (rand_r(&seed) % 2) {
      // Unknown sizes: the engine estimates from previous batches.
      for (int64_t i = 0; i < n_splits; ++i) f.splits[i].est_bytes = 0;
    }
    int64_t total = n_splits * batches * rows;
    f.args.limit = rand_r(&seed) % 3 == 0 ? -1 : rand_r(&seed) % (total + 10);
    int fails = n_splits > 0 && batches > 1 && rand_r(&seed) % 5 == 0;
    if (fails) f.synth.fail_split = rand_r(&seed) % n_splits;
    if (n_splits > 0 && rand_r(&seed) % 4 == 0) {
      f.args.slow_split = rand_r(&seed) % n_splits;
      f.args.slow_split_delay_us = 1000;
    }
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    int64_t got = 0;
    int rc = 0;
    int early_stop = rand_r(&seed) % 8 == 0;
    for (;;) {
      struct ArrowArray batch;
      struct sluice_batch_tag tag;
      rc = sl_scan_next(scan, &batch, &tag, NULL);
      if (rc != 0 || batch.release == NULL) break;
      for (int64_t c = 0; c < batch.n_children; ++c) {
        const int64_t* values = batch.children[c]->buffers[1];
        for (int64_t i = 0; i < batch.length; ++i) {
          assert_int_equal(values[i], synth_value(&f.synth, tag.split, tag.batch, i, c));
        }
      }
      const int64_t* data = batch.children[0]->buffers[1];
      if (f.args.ordered && batch.length > 0 && !fails) assert_int_equal(data[0], got * 10);
      got += batch.length;
      batch.release(&batch);
      if (early_stop) break;
    }
    if (!early_stop) {
      if (rc != 0) {
        assert_true(fails);
        assert_int_equal(rc, EILSEQ);
      } else {
        int64_t want = f.args.limit >= 0 && f.args.limit < total ? f.args.limit : total;
        // A failing split may be skipped only when the limit was covered first.
        assert_int_equal(got, want);
      }
    }
    sl_scan_stop(scan);
    fixture_done(&f);
  }
}

/* ---- Column parts ------------------------------------------------------------- */

/// A fixture whose reader splits by columns: `n_splits` splits of `batches`
/// batches of `rows` rows and `n_cols` columns, on 2 threads.
static void fixture_columns(struct fixture* f, int64_t n_splits, int64_t batches, int64_t rows,
                            int64_t n_cols) {
  fixture_init(f, n_splits, batches, rows, n_cols);
  f->synth.can_project = 1;
  f->args.format = &synth_columns_format;
  f->args.threads = 2;
}

/// Scans to the end, checking every batch against the synthetic values of
/// its tag (and, ordered, that tags come in plan order). Returns the rows.
static int64_t scan_and_check(struct fixture* f, const int64_t* cols, int64_t n_cols,
                              int64_t batches_per_split, int64_t* n_batches) {
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f->args, &scan, NULL), 0);
  int64_t rows = 0, n = 0;
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    assert_int_equal(sl_scan_next(scan, &batch, &tag, NULL), 0);
    if (batch.release == NULL) break;
    if (f->args.ordered) {
      assert_int_equal(tag.split, n / batches_per_split);
      assert_int_equal(tag.batch, n % batches_per_split);
    }
    int64_t want = f->synth.rows;
    if (f->args.limit >= 0 && f->args.limit - rows < want) want = f->args.limit - rows;
    check_batch(&f->synth, &batch, tag.split, tag.batch, cols, n_cols, want);
    rows += batch.length;
    batch.release(&batch);
    ++n;
  }
  if (n_batches != NULL) *n_batches = n;
  sl_scan_stop(scan);
  return rows;
}

/// One split, many columns, two threads: the split runs as two column parts
/// (two opens, none with every column) and the zipped batches equal the
/// unsplit scan's, in order or not, projected or not.
static void test_column_parts(void** unused) {
  (void)unused;
  const int64_t projection[] = {5, 0, 3, 2, 4};
  for (int ordered = 0; ordered <= 1; ++ordered) {
    for (int projected = 0; projected <= 1; ++projected) {
      struct fixture f;
      fixture_columns(&f, 1, 5, 100, 6);
      f.args.ordered = ordered;
      const int64_t* cols = projected ? projection : NULL;
      int64_t n_cols = projected ? 5 : 6;
      if (projected) {
        f.args.columns = projection;
        f.args.n_columns = 5;
      }
      int64_t n = 0;
      assert_int_equal(scan_and_check(&f, cols, n_cols, 5, &n), 500);
      assert_int_equal(n, 5);
      assert_int_equal(atomic_load(&f.synth.opens), 2);
      assert_true(atomic_load(&f.synth.widest_open) <= (n_cols + 1) / 2);
      fixture_done(&f);

      // The same scan without column parts, for comparison.
      fixture_init(&f, 1, 5, 100, 6);
      f.synth.can_project = 1;
      f.args.threads = 2;
      f.args.ordered = ordered;
      f.args.columns = projected ? projection : NULL;
      f.args.n_columns = projected ? 5 : 0;
      assert_int_equal(scan_and_check(&f, cols, n_cols, 5, &n), 500);
      assert_int_equal(atomic_load(&f.synth.opens), 1);
      fixture_done(&f);
    }
  }
  // Two splits on four threads: two parts each. One column: no parts.
  struct fixture f;
  fixture_columns(&f, 2, 3, 10, 4);
  f.args.threads = 4;
  assert_int_equal(scan_and_check(&f, NULL, 4, 3, NULL), 60);
  assert_int_equal(atomic_load(&f.synth.opens), 4);
  fixture_done(&f);
  fixture_columns(&f, 1, 3, 10, 1);
  assert_int_equal(scan_and_check(&f, NULL, 1, 3, NULL), 30);
  assert_int_equal(atomic_load(&f.synth.opens), 1);
  fixture_done(&f);
}

/// Parts balanced by the reader's column sizes: the two big columns go to
/// different parts, the small ones fill in (parts that are not runs of
/// neighbouring columns, which the zip must put back in place).
static void test_column_parts_weighted(void** unused) {
  (void)unused;
  const int64_t weights[] = {1, 100, 1, 100, 1, 1};
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_columns(&f, 1, 4, 50, 6);
    f.synth.column_weights = weights;
    f.args.ordered = ordered;
    assert_int_equal(scan_and_check(&f, NULL, 6, 4, NULL), 200);
    assert_int_equal(atomic_load(&f.synth.opens), 2);
    assert_int_equal(atomic_load(&f.synth.widest_open), 3);
    fixture_done(&f);
    // One heavy column against five light ones.
    const int64_t skewed[] = {0, 0, 0, 0, 0, 500};
    const int64_t projection[] = {5, 3, 0, 1};
    fixture_columns(&f, 1, 4, 50, 6);
    f.synth.column_weights = skewed;
    f.args.ordered = ordered;
    f.args.columns = projection;
    f.args.n_columns = 4;
    assert_int_equal(scan_and_check(&f, projection, 4, 4, NULL), 200);
    assert_int_equal(atomic_load(&f.synth.widest_open), 3);
    fixture_done(&f);
  }
}

static void test_column_parts_limit(void** unused) {
  (void)unused;
  const int64_t limits[] = {0, 1, 99, 100, 250, 499, 500, 10000};
  for (int ordered = 0; ordered <= 1; ++ordered) {
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; ++i) {
      struct fixture f;
      fixture_columns(&f, 1, 5, 100, 6);
      f.args.ordered = ordered;
      f.args.limit = limits[i];
      int64_t want = limits[i] < 500 ? limits[i] : 500;
      assert_int_equal(scan_and_check(&f, NULL, 6, 5, NULL), want);
      fixture_done(&f);
    }
  }
}

/// Under a small budget (a batch and a half, or less than one batch) parked
/// parts neither deadlock nor run far past the budget.
static void test_column_parts_budget(void** unused) {
  (void)unused;
  const int64_t rows = 1024, batch_bytes = rows * 8 * 6;
  const int64_t budgets[] = {100, batch_bytes + batch_bytes / 2, 3 * batch_bytes};
  for (int ordered = 0; ordered <= 1; ++ordered) {
    for (int known = 0; known <= 1; ++known) {
      for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; ++i) {
        struct fixture f;
        fixture_columns(&f, 1, 12, rows, 6);
        f.args.ordered = ordered;
        f.args.memory_budget = budgets[i];
        if (!known) f.splits[0].est_bytes = 0;
        struct sl_scan* scan = NULL;
        assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
        int64_t n = 0;
        for (;;) {
          struct ArrowArray batch;
          struct sluice_batch_tag tag;
          assert_int_equal(sl_scan_next(scan, &batch, &tag, NULL), 0);
          if (batch.release == NULL) break;
          check_batch(&f.synth, &batch, 0, tag.batch, NULL, 6, rows);
          if (ordered) assert_int_equal(tag.batch, n);
          struct timespec ts = {0, 200 * 1000};  // a slow consumer
          nanosleep(&ts, NULL);
          batch.release(&batch);
          ++n;
        }
        assert_int_equal(n, 12);
        int64_t peak = sl_scan_peak_in_flight(scan);
        // Promised halves hold a part that runs ahead; the part they wait
        // for, or the head, may pass the budget by at most a batch.
        if (budgets[i] > batch_bytes) assert_true(peak <= budgets[i] + batch_bytes);
        sl_scan_stop(scan);
        fixture_done(&f);
      }
    }
  }
}

/// Parts that disagree on their batches fail the scan with a clear error.
static void test_column_parts_disagree(void** unused) {
  (void)unused;
  for (int ordered = 0; ordered <= 1; ++ordered) {
    struct fixture f;
    fixture_columns(&f, 1, 3, 10, 4);
    f.synth.batches_depend_on_columns = 1;
    f.args.ordered = ordered;
    struct sl_scan* scan = NULL;
    assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
    struct sluice_error error;
    int rc = 0;
    for (;;) {
      struct ArrowArray batch;
      rc = sl_scan_next(scan, &batch, NULL, &error);
      if (rc != 0 || batch.release == NULL) break;
      batch.release(&batch);
    }
    assert_int_equal(rc, EINVAL);
    assert_non_null(strstr(error.message, "disagree on the number of batches"));
    sl_scan_stop(scan);
    fixture_done(&f);
  }
}

static void test_column_parts_hook_and_stop(void** unused) {
  (void)unused;
  struct fixture f;
  fixture_columns(&f, 1, 4, 7, 3);
  atomic_llong rows;
  atomic_init(&rows, 0);
  f.args.on_batch = count_rows;
  f.args.on_batch_ctx = &rows;
  assert_int_equal(scan_and_check(&f, NULL, 3, 4, NULL), 28);
  assert_int_equal(atomic_load(&rows), 28);  // once per zipped batch
  f.args.on_batch = fail_on_batch;
  struct sl_scan* scan = NULL;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  struct sluice_error error;
  struct ArrowArray batch;
  assert_int_equal(sl_scan_next(scan, &batch, NULL, &error), ERANGE);
  sl_scan_stop(scan);
  // Stopping with parts parked and workers waiting on the budget.
  f.args.on_batch = NULL;
  f.args.memory_budget = 10;
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  assert_int_equal(sl_scan_next(scan, &batch, NULL, NULL), 0);
  sl_scan_stop(scan);
  batch.release(&batch);
  assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
  sl_scan_stop(scan);
  fixture_done(&f);
}

static void test_column_parts_allocation_failures(void** unused) {
  (void)unused;
  for (long long fail_at = 1; fail_at < 120; ++fail_at) {
    struct fixture f;
    fixture_columns(&f, 1, 3, 8, 4);
    atomic_store(&f.ta.fail_at, fail_at);
    scan_to_end_or_enomem(&f, -1);
    fixture_done(&f);
  }
}

/// The on_batch hook sees the projection asked for, repeats included.
static int hook_sees_repeats(void* ctx, const struct ArrowArray* batch,
                             struct sluice_error* error) {
  (void)error;
  atomic_fetch_add((atomic_llong*)ctx, batch->n_children == 5 ? 1 : 1000);
  return 0;
}

/// A projection naming columns twice: readers are asked for each column once
/// (whole splits or column parts, projecting themselves or not), each batch
/// is decoded once, and the repeats are views of the same child.
static void test_repeated_columns(void** unused) {
  (void)unused;
  const int64_t asked[] = {2, 0, 2, 1, 0};
  for (int mode = 0; mode < 4; ++mode) {  // engine / reader projects; 2 / 3 column parts
    for (int ordered = 0; ordered <= 1; ++ordered) {
      struct fixture f;
      int64_t n_splits = mode < 2 ? 4 : 1, parts = mode == 2 ? 2 : mode == 3 ? 3 : 1;
      if (mode < 2) {
        fixture_init(&f, n_splits, 3, 50, 4);
        f.synth.can_project = mode;
        f.args.threads = 3;
      } else {
        fixture_columns(&f, n_splits, 3, 50, 4);
        f.args.threads = (int)parts;
      }
      f.args.ordered = ordered;
      f.args.columns = asked;
      f.args.n_columns = 5;
      atomic_llong hooked;
      atomic_init(&hooked, 0);
      f.args.on_batch = hook_sees_repeats;
      f.args.on_batch_ctx = &hooked;
      struct sl_scan* scan = NULL;
      assert_int_equal(sl_scan_start(&f.args, &scan, NULL), 0);
      int64_t rows = 0;
      for (;;) {
        struct ArrowArray batch;
        struct sluice_batch_tag tag;
        assert_int_equal(sl_scan_next(scan, &batch, &tag, NULL), 0);
        if (batch.release == NULL) break;
        check_batch(&f.synth, &batch, tag.split, tag.batch, asked, 5, 50);
        assert_ptr_equal(batch.children[0]->buffers[1], batch.children[2]->buffers[1]);
        assert_ptr_equal(batch.children[1]->buffers[1], batch.children[4]->buffers[1]);
        rows += batch.length;
        batch.release(&batch);
      }
      sl_scan_stop(scan);
      assert_int_equal(rows, n_splits * 3 * 50);
      assert_int_equal(atomic_load(&f.synth.repeats_asked), 0);
      assert_int_equal(atomic_load(&f.synth.opens), n_splits * parts);
      assert_int_equal(atomic_load(&f.synth.batches_made), n_splits * 3 * parts);
      assert_int_equal(atomic_load(&hooked), n_splits * 3);
      if (mode >= 2) assert_true(atomic_load(&f.synth.widest_open) <= 2);
      fixture_done(&f);
    }
  }
  // A limit cuts the expanded batches as any other.
  struct fixture f;
  fixture_init(&f, 4, 3, 50, 4);
  f.synth.can_project = 1;
  f.args.columns = asked;
  f.args.n_columns = 5;
  f.args.limit = 120;
  assert_int_equal(scan_and_check(&f, asked, 5, 3, NULL), 120);
  fixture_done(&f);
  // Allocation failures while expanding fail cleanly, whole splits or parts.
  for (int by_columns = 0; by_columns <= 1; ++by_columns) {
    for (long long fail_at = 1; fail_at < 120; ++fail_at) {
      if (by_columns) {
        fixture_columns(&f, 1, 3, 8, 4);
      } else {
        fixture_init(&f, 3, 2, 8, 4);
        f.args.threads = 2;
      }
      f.args.columns = asked;
      f.args.n_columns = 5;
      atomic_store(&f.ta.fail_at, fail_at);
      scan_to_end_or_enomem(&f, 5);
      fixture_done(&f);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ordered_with_slow_first_split),
      cmocka_unit_test(test_unordered_completion_order),
      cmocka_unit_test(test_zero_splits),
      cmocka_unit_test(test_limit),
      cmocka_unit_test(test_limit_stops_decoding),
      cmocka_unit_test(test_projection),
      cmocka_unit_test(test_error_propagates),
      cmocka_unit_test(test_memory_budget),
      cmocka_unit_test(test_memory_budget_tiny_batches),
      cmocka_unit_test(test_budget_smaller_than_a_batch),
      cmocka_unit_test(test_stop_early),
      cmocka_unit_test(test_many_splits),
      cmocka_unit_test(test_on_batch_hook),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_randomized),
      cmocka_unit_test(test_column_parts),
      cmocka_unit_test(test_column_parts_weighted),
      cmocka_unit_test(test_column_parts_limit),
      cmocka_unit_test(test_column_parts_budget),
      cmocka_unit_test(test_column_parts_disagree),
      cmocka_unit_test(test_column_parts_hook_and_stop),
      cmocka_unit_test(test_column_parts_allocation_failures),
      cmocka_unit_test(test_repeated_columns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
