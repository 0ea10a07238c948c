// The scan engine. Workers take splits in plan order from a shared counter,
// decode them batch by batch under a memory budget, and queue the batches;
// the consumer takes them in plan order (one queue per split, the head split
// first) or as they complete (one completion queue).
//
// Budget accounting: a worker reserves an estimate before decoding a batch
// (its split's est_bytes, else the size of the split's previous batch), then
// swaps the reservation for the batch's real size. Bytes leave the budget when
// sl_scan_next hands the batch to the consumer.
//
// Held units: a reader that decodes more than a batch at once and hands it
// out in slices (split_held_bytes: a Parquet row group cut to batch_rows)
// keeps the rest alive between batches. The worker reserves the whole unit
// before the split_next that decodes it, and counts what the split holds in
// flight until it is handed out (then the queued slices count it) or the
// split closes. A batch cut from what is held costs nothing new: it needs no
// room (waiting for it could wait on the task's own bytes forever).
//
// Deadlock avoidance (ordered mode): the consumer can only take batches of the
// head split, so if later splits filled the budget the head could never run.
// Hence the head may always decode when nothing of it is queued, and other
// splits leave the head's estimate free.
//
// Column parts: when there are fewer splits than threads and the reader can
// decode a split by column subsets (split_by_columns), each split runs as
// n_parts tasks, one per group of columns, and batch b of every part is zipped
// into one batch (sl_scan_zip.c) before it is queued. The first part to
// reach a batch reserves the whole batch and, once decoded, keeps its
// siblings' shares promised in the budget, so a part cannot run ahead of its
// siblings further than the budget allows. Parked halves leave the budget
// only with the missing part's batch, so that part may always decode, and a
// part that is ahead gets no head-of-order exemption. There are never more
// tasks than threads, so every part that parked batches wait for is running.
#include "sl_scan.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_array.h"
#include "../core/sl_error.h"
#include "../core/sl_row_filter.h"
#include "sl_scan_zip.h"
#include "core/sl_cores.h"

#define SL_DEFAULT_BUDGET ((int64_t)256 << 20)
/// More threads than this buys nothing but stacks.
#define SL_MAX_THREADS 256

struct sl_scan_item {
  struct ArrowArray array;
  int64_t split;
  int64_t batch;
  int64_t bytes;
  /// Custom metadata the reader gave the batch (a copy), or NULL.
  char* metadata;
  size_t metadata_size;
  struct sl_scan_item* next;
};

struct sl_split_slot {
  struct sl_scan_item* head;  // ordered mode: this split's queued batches
  struct sl_scan_item* tail;
  int64_t last_bytes;         // size of its latest batch (the next estimate)
  int64_t queued_rows;        // ordered mode: rows of its queued batches
  int finished;               // its worker saw the end of the split (or was cut)
  int parts_left;             // its tasks (column parts) not yet done
  struct sl_zip* zip;         // column parts: batches waiting for their siblings
};

struct sl_scan {
  const struct sluice_allocator* alloc;
  const struct sl_format_reader* format;
  void* reader;
  struct sl_split* splits;
  int64_t n_splits;
  /// A placed scan: where each placed split's rows go (splits[s].place points
  /// here), over copies of the caller's per-column arrays.
  struct sl_split_place* places;
  uint8_t** place_base;
  int32_t* place_width;
  int64_t place_fields;
  struct sl_ref* place_owner;
  /// What readers decode: the projection's distinct columns (NULL = all).
  int64_t* columns;
  int64_t n_columns;
  /// A projection that names a column twice: output column i is child
  /// repeat[i] of the decoded batch, a view of it (NULL = no repeats), so
  /// that no reader decodes a column twice or needs to know.
  int64_t* repeat;
  int64_t n_asked;            // the projection's length (repeat is this long)
  const int64_t* const* paths;  // per asked column: a struct field under it (borrowed; NULL = none)
  /// The struct fields kept of columns asked only for fields (every split's
  /// `fields` when n > 0), over the two arrays below (paths borrowed).
  struct sl_split_fields fields;
  int64_t* fields_column;
  const int64_t** fields_path;
  int64_t columns_cap;        // entries of `columns` allocated
  /// Rows not passing it are dropped from each decoded batch, before the
  /// repeats (which also drop the columns only the filter needed).
  const struct sl_row_filter* filter;
  int64_t* filter_at;         // per condition: its column's child in decoded batches
  struct ArrowSchema schema;  // the distinct columns' schema, for byte accounting (may be released)
  char* tag_metadata;         // metadata of the batch sl_scan_next returned last
  size_t tag_metadata_size;
  int ordered;
  int64_t limit;
  /// A filter value waits for its column's whole input (pending): the
  /// limit (here, -1 = none) only cuts what is delivered, and the rest is
  /// read and dropped, as a widening value may come anywhere in it.
  int64_t deliver_limit;
  int64_t budget;
  int (*on_batch)(void* ctx, const struct ArrowArray* batch, struct sluice_error* error);
  void* on_batch_ctx;
  int64_t slow_split;
  int64_t slow_split_delay_us;

  pthread_mutex_t mutex;
  pthread_cond_t work_cv;   // workers wait here: budget freed, head moved, stop
  pthread_cond_t ready_cv;  // the consumer waits here: batch queued, split done, error
  pthread_t* threads;
  int n_threads;
  /// Tasks: n_parts per split (1 = splits are not divided by columns); task t
  /// is part t % n_parts of split t / n_parts.
  int n_parts;
  int64_t n_tasks;
  struct sl_zip_layout layout;  // when n_parts > 1
  int64_t* part_last_bytes;     // n_splits * n_parts: size of each part's latest batch
  int64_t* part_estimates;      // n_parts, scratch for sl_zip_put's promises

  // Everything below is guarded by `mutex`.
  int64_t next_task;
  int64_t head;  // ordered: lowest split not yet fully delivered
  struct sl_split_slot* slots;
  struct sl_scan_item* done_head;  // unordered: completion queue
  struct sl_scan_item* done_tail;
  int64_t splits_finished;
  int64_t in_flight;
  int64_t peak_in_flight;
  int64_t rows_delivered;
  int64_t queued_rows;  // rows decoded but not yet delivered, all splits
  int limit_covered;    // rows already decoded fill the limit: decode no more
  int stop;   // workers must quit (limit reached, error, sl_scan_stop)
  int ended;  // the consumer has seen (or will see) the end
  int error_code;
  struct sluice_error error;
  // Ordered scans report the error of the earliest failing split, as a
  // sequential reader would: after split k fails, splits past k stop and
  // earlier ones run on (one of them may fail too, earlier in the input);
  // the consumer gets their batches, then the error.
  int64_t error_split;  // the split of `error` (-1: none)
  int64_t stop_after;   // splits past this one stop (INT64_MAX: none)
};

/// Whether work on split `s` must end. Caller holds the mutex.
static int stopped_locked(const struct sl_scan* scan, int64_t s) {
  return scan->stop || s > scan->stop_after;
}

static void release_item(const struct sluice_allocator* alloc, struct sl_scan_item* item) {
  if (item->array.release != NULL) item->array.release(&item->array);
  sl_free(alloc, item->metadata, item->metadata_size);
  sl_free(alloc, item, sizeof *item);
}

/// Records the first error and stops everyone. Caller holds the mutex.
static void fail_locked(struct sl_scan* scan, int code, const struct sluice_error* error,
                        int64_t split) {
  // After the consumer has its end (limit reached), later splits' errors are
  // about rows nobody asked for.
  if (scan->ended) return;
  if (scan->error_code != 0 && !(scan->ordered && split < scan->error_split)) return;
  scan->error_code = code;
  scan->error_split = split;
  if (error != NULL && error->message[0] != '\0') {
    memcpy(&scan->error, error, sizeof scan->error);
  } else {
    sl_error_set(&scan->error, code, "split %lld failed with error %d", (long long)split, code);
  }
  scan->error.code = code;
  if (scan->ordered) {
    scan->stop_after = split;
  } else {
    scan->stop = 1;
  }
  pthread_cond_broadcast(&scan->work_cv);
  pthread_cond_broadcast(&scan->ready_cv);
}

static void fail(struct sl_scan* scan, int code, const struct sluice_error* error,
                 int64_t split) {
  pthread_mutex_lock(&scan->mutex);
  fail_locked(scan, code, error, split);
  pthread_mutex_unlock(&scan->mutex);
}

static int64_t estimate_locked(const struct sl_scan* scan, int64_t split) {
  int64_t est = scan->splits[split].est_bytes;
  return est > 0 ? est : scan->slots[split].last_bytes;
}

/// The estimate of column part `part`'s share of a batch of `split`.
static int64_t part_share_locked(const struct sl_scan* scan, int64_t split, int part) {
  const int64_t* weight = scan->layout.part_weights;
  int64_t est = scan->splits[split].est_bytes;
  if (est > 0) {
    double share = (double)est * (double)scan->layout.part_weights[part] /
                   (double)scan->layout.total_weight;
    return share >= 1 ? (int64_t)share : 1;
  }
  const int64_t* last = scan->part_last_bytes + split * scan->n_parts;
  if (last[part] > 0) return last[part];
  // Not measured yet: guess from the parts that were, by weight (else a
  // part running ahead promises nothing for its siblings).
  double known_bytes = 0, known_weight = 0;
  for (int q = 0; q < scan->n_parts; ++q) {
    if (last[q] <= 0) continue;
    known_bytes += (double)last[q];
    known_weight += (double)weight[q];
  }
  return known_weight > 0 ? (int64_t)(known_bytes / known_weight * (double)weight[part]) : 0;
}

/// What task `part` of `split` (-1 = the whole split) reserves for its batch
/// `b`: the whole batch when it is the first part there (its siblings'
/// halves will be promised), nothing when a sibling has already promised it.
static int64_t task_estimate_locked(const struct sl_scan* scan, int64_t split, int part,
                                    int64_t b) {
  if (part < 0) return estimate_locked(scan, split);
  if (sl_zip_parked(scan->slots[split].zip, b)) return 0;
  int64_t est = 0;
  for (int q = 0; q < scan->n_parts; ++q) est += part_share_locked(scan, split, q);
  return est;
}

static void note_peak_locked(struct sl_scan* scan) {
  if (scan->in_flight > scan->peak_in_flight) scan->peak_in_flight = scan->in_flight;
}

/// Whether split `s` may reserve `est` bytes for its batch `b` now. Caller
/// holds the mutex.
static int may_reserve_locked(const struct sl_scan* scan, int64_t s, int64_t b, int64_t est) {
  // Nothing in flight: waiting could only wait forever (a batch bigger than
  // the whole budget still has to pass).
  if (scan->in_flight == 0) return 1;
  const struct sl_split_slot* slot = &scan->slots[s];
  // Parked column parts leave the budget only once this part's batch joins
  // them: it must not wait for them.
  if (slot->zip != NULL && sl_zip_holds_back(slot->zip, b)) return 1;
  if (!scan->ordered) return scan->in_flight + est <= scan->budget;
  if (s == scan->head) {
    // A part ahead of its siblings gets no exemption: it could run ahead
    // without bound.
    int behind = slot->zip == NULL || b == sl_zip_next_batch(slot->zip);
    return (slot->head == NULL && behind) || scan->in_flight + est <= scan->budget;
  }
  int64_t head_room = scan->head < scan->n_splits ? estimate_locked(scan, scan->head) : 0;
  return scan->in_flight + est + head_room <= scan->budget;
}

/// Whether rows already decoded are sure to fill the limit before anything
/// split `s` decodes next could be delivered, so that decoding more is waste.
/// Caller holds the mutex.
static int limit_covered_locked(const struct sl_scan* scan, int64_t s) {
  // Not short-cut by limit_covered: covering the limit before split s says
  // nothing about splits before s, whose rows are still needed.
  if (scan->limit < 0) return 0;
  int64_t rows = scan->rows_delivered;
  if (!scan->ordered) return rows + scan->queued_rows >= scan->limit;
  // In plan order, only splits up to `s` come before its next batch.
  for (int64_t j = scan->head; j <= s && rows < scan->limit; ++j) {
    rows += scan->slots[j].queued_rows;
  }
  return rows >= scan->limit;
}

/// One task of split `s` is done (its end, or cut by the limit); the last one
/// finishes the split. Caller holds the mutex.
static void task_done_locked(struct sl_scan* scan, int64_t s) {
  struct sl_split_slot* slot = &scan->slots[s];
  if (--slot->parts_left > 0) return;
  slot->finished = 1;
  scan->splits_finished++;
  // Parts cut short by the limit may leave halves of batches parked.
  if (slot->zip != NULL) scan->in_flight -= sl_zip_drop(slot->zip);
  pthread_cond_broadcast(&scan->work_cv);
  pthread_cond_broadcast(&scan->ready_cv);
}

/// Stops decoding for good once the limit is covered: the tasks nobody took
/// yet count as done, so that the end is still detected. Caller holds the
/// mutex.
static void cover_limit_locked(struct sl_scan* scan) {
  if (scan->limit_covered) return;
  scan->limit_covered = 1;
  for (int64_t t = scan->next_task; t < scan->n_tasks; ++t) {
    task_done_locked(scan, t / scan->n_parts);
  }
  scan->next_task = scan->n_tasks;
  pthread_cond_broadcast(&scan->work_cv);
  pthread_cond_broadcast(&scan->ready_cv);
}

static void sleep_us(int64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/// Bytes of a column part's batch: its children measured against their
/// projected columns' schemas.
static int64_t part_byte_size(const struct sl_scan* scan, int part, const struct ArrowArray* a) {
  const struct sl_zip_layout* layout = &scan->layout;
  int64_t n = layout->first[part + 1] - layout->first[part], bytes = 0;
  if (a->n_children < n) n = a->n_children;  // the zip reports the mismatch
  for (int64_t j = 0; j < n; ++j) {
    int64_t pos = layout->positions[layout->first[part] + j];
    int64_t size = sl_array_held_bytes(scan->schema.children[pos], a->children[j]);
    if (size > 0) bytes += size;
  }
  return bytes;
}

/// The batch of distinct columns becomes the projection asked for.
static int expand_repeats(const struct sl_scan* scan, struct ArrowArray* array,
                          struct sluice_error* error) {
  if (scan->repeat == NULL) return 0;
  struct ArrowArray distinct;
  sl_array_move(array, &distinct);
  return sl_array_project(&distinct, scan->repeat, scan->n_asked, scan->alloc, array, error);
}

/// The asked columns that are struct fields ("st.x") become those fields.
static int take_fields(const struct sl_scan* scan, struct ArrowArray* array,
                       struct sluice_error* error) {
  for (int64_t i = 0; scan->paths != NULL && i < scan->n_asked && i < array->n_children; ++i) {
    const int64_t* path = scan->paths[i];
    if (path == NULL) continue;
    struct ArrowArray column;
    sl_array_move(array->children[i], &column);
    SL_RETURN_NOT_OK(
        sl_array_struct_field(&column, path + 1, path[0], scan->alloc, array->children[i], error));
  }
  return 0;
}

/// Whether the `selected` set bits of selection[0, rows) are consecutive;
/// *first = the first one's row.
static int one_run(const uint8_t* selection, int64_t rows, int64_t selected, int64_t* first) {
  int64_t r = 0;
  while (r < rows && selection[r >> 3] == 0) r += 8;
  while (r < rows && !((selection[r >> 3] >> (r & 7)) & 1)) ++r;
  *first = r;
  if (r + selected > rows) return 0;
  for (int64_t k = r; k < r + selected; ++k) {
    if (!((selection[k >> 3] >> (k & 7)) & 1)) return 0;
  }
  return 1;
}

/// Drops the rows of `array` (decoded columns) that fail the scan's filter;
/// *rows = the rows left.
static int filter_rows(const struct sl_scan* scan, struct ArrowArray* array, int64_t* rows,
                       struct sluice_error* error) {
  *rows = array->length;
  if (scan->filter == NULL || array->length == 0) return 0;
  size_t bytes = (size_t)((array->length + 7) / 8);
  uint8_t* selection = sl_alloc(scan->alloc, bytes);
  if (selection == NULL) return sl_error_set(error, ENOMEM, "scan: out of memory filtering");
  int64_t selected = 0;
  int rc = sl_row_filter_select(scan->filter, array, scan->filter_at, selection, &selected, error);
  int64_t first = 0;
  if (rc == 0 && selected > 0 && selected < array->length && 2 * selected >= array->length &&
      one_run(selection, array->length, selected, &first) && array->offset == 0) {
    // Sorted data cut by a range (id < k, day >= d) keeps one run of rows:
    // a window of the same buffers, not a copy (the batch is the scan's own).
    // Only when it keeps half the rows or more, so that a window never holds
    // more than twice its rows' memory; a shorter run is copied.
    for (int64_t c = 0; c < array->n_children; ++c) {
      struct ArrowArray* child = array->children[c];
      child->offset += first;
      child->length = selected;
      if (child->null_count != 0) child->null_count = -1;
    }
    array->length = selected;
    if (array->null_count != 0) array->null_count = -1;
    *rows = selected;
  } else if (rc == 0 && selected == 0) {
    *rows = 0;  // the caller drops the batch
  } else if (rc == 0 && selected < array->length) {
    struct ArrowArray kept;
    rc = sl_array_filter(&scan->schema, array, selection, selected, scan->alloc, &kept, error);
    if (rc == 0) {
      array->release(array);
      sl_array_move(&kept, array);
      *rows = selected;
    }
  }
  sl_free(scan->alloc, selection, bytes);
  return rc;
}

/// Decodes one batch (already reserved): reads, projects, filters, measures,
/// runs the hook (but for column parts, whose hook runs once they are
/// zipped). On success `*item` holds the batch; at the end of the split 0
/// with *item == NULL. Batches the filter empties are skipped.
static int decode_batch(struct sl_scan* scan, void* state, int projected, int64_t s, int64_t b,
                        int part, struct sl_scan_item** item, struct sluice_error* error) {
  *item = NULL;
  struct ArrowArray raw;
  struct sl_scan_item* it = NULL;
  int64_t rows = 0;
  int rc = 0;
  do {
    memset(&raw, 0, sizeof raw);
    rc = scan->format->split_next(state, &raw, error);
    if (rc != 0) {
      if (raw.release != NULL) raw.release(&raw);
      if (it != NULL) sl_free(scan->alloc, it, sizeof *it);
      return rc;
    }
    if (raw.release == NULL) {
      if (it != NULL) sl_free(scan->alloc, it, sizeof *it);
      return 0;
    }
    if (it == NULL) it = sl_alloc(scan->alloc, sizeof *it);
    if (it == NULL) {
      raw.release(&raw);
      return sl_error_set(error, ENOMEM, "scan: out of memory queueing batch %lld of split %lld",
                          (long long)b, (long long)s);
    }
    memset(it, 0, sizeof *it);
    if (!projected && scan->columns != NULL) {
      rc = sl_array_project(&raw, scan->columns, scan->n_columns, scan->alloc, &it->array, error);
      if (rc != 0) {
        if (raw.release != NULL) raw.release(&raw);
        sl_free(scan->alloc, it, sizeof *it);
        return rc;
      }
    } else {
      sl_array_move(&raw, &it->array);
    }
    // Column parts are filtered once zipped into whole rows (run_task).
    rows = it->array.length;
    if (part < 0) rc = filter_rows(scan, &it->array, &rows, error);
    if (rc != 0 || (rows == 0 && scan->filter != NULL && part < 0)) it->array.release(&it->array);
    if (rc != 0) {
      sl_free(scan->alloc, it, sizeof *it);
      return rc;
    }
  } while (rows == 0 && scan->filter != NULL && part < 0);
  it->split = s;
  it->batch = b;
  const char* metadata =
      scan->format->split_batch_metadata != NULL ? scan->format->split_batch_metadata(state) : NULL;
  if (metadata != NULL) {
    it->metadata_size = (size_t)sl_metadata_size(metadata);
    it->metadata = sl_alloc(scan->alloc, it->metadata_size);
    if (it->metadata == NULL) {
      it->metadata_size = 0;
      release_item(scan->alloc, it);
      return sl_error_set(error, ENOMEM, "scan: out of memory copying the metadata of batch %lld "
                          "of split %lld", (long long)b, (long long)s);
    }
    memcpy(it->metadata, metadata, it->metadata_size);
  }
  if (part >= 0) {
    it->bytes = part_byte_size(scan, part, &it->array);
    *item = it;
    return 0;
  }
  // Measured before the repeats, which are views costing no more memory.
  it->bytes = scan->schema.release != NULL ? sl_array_held_bytes(&scan->schema, &it->array) : 0;
  if (it->bytes < 0) it->bytes = 0;
  rc = expand_repeats(scan, &it->array, error);
  if (rc == 0) rc = take_fields(scan, &it->array, error);
  if (rc == 0 && scan->on_batch != NULL) rc = scan->on_batch(scan->on_batch_ctx, &it->array, error);
  if (rc != 0) {
    release_item(scan->alloc, it);
    return rc;
  }
  *item = it;
  return 0;
}

/// Parks a column part's batch and counts it (and the promises it makes for
/// its siblings) in flight. When it completes its batch, `*item` becomes the
/// zipped batch, else *item is freed and NULL. Caller holds the mutex.
static int zip_part_locked(struct sl_scan* scan, int64_t s, int part, struct sl_scan_item** item,
                           struct sluice_error* error) {
  struct sl_scan_item* it = *item;
  struct sl_zip_batch in = {.bytes = it->bytes, .metadata = it->metadata,
                            .metadata_size = it->metadata_size};
  sl_array_move(&it->array, &in.array);
  it->metadata = NULL;
  it->metadata_size = 0;
  scan->part_last_bytes[s * scan->n_parts + part] = it->bytes;
  for (int q = 0; q < scan->n_parts; ++q) scan->part_estimates[q] = part_share_locked(scan, s, q);
  struct sl_zip_batch out;
  int64_t added = 0;
  int rc = sl_zip_put(scan->slots[s].zip, part, it->batch, &in, scan->part_estimates, &added,
                      &out, error);
  // On error the parked halves stay counted until the scan is freed: it has
  // failed, the budget no longer matters.
  scan->in_flight += added;
  note_peak_locked(scan);
  if (rc != 0 || out.array.release == NULL) {
    sl_free(scan->alloc, it, sizeof *it);
    *item = NULL;
    return rc;
  }
  sl_array_move(&out.array, &it->array);
  it->bytes = out.bytes;
  it->metadata = out.metadata;
  it->metadata_size = out.metadata_size;
  return 0;
}

/// Runs one task: a whole split (part -1) or one column part of it.
static void run_task(struct sl_scan* scan, int64_t task) {
  int64_t s = task / scan->n_parts;
  int part = scan->n_parts > 1 ? (int)(task % scan->n_parts) : -1;
  const int64_t* columns = scan->columns;
  int64_t n_columns = scan->n_columns;
  if (part >= 0) {
    columns = scan->layout.columns + scan->layout.first[part];
    n_columns = scan->layout.first[part + 1] - scan->layout.first[part];
  }
  struct sluice_error error;
  sl_error_clear(&error);
  if (s == scan->slow_split && scan->slow_split_delay_us > 0) sleep_us(scan->slow_split_delay_us);
  void* state = NULL;
  int projected = 0;
  int rc = scan->format->split_open(scan->reader, &scan->splits[s], columns, n_columns, &state,
                                    &projected, &error);
  if (rc == 0 && part >= 0 && !projected) {
    scan->format->split_close(state);
    rc = sl_error_set(&error, EINVAL, "scan: reader %s splits by columns but did not project "
                      "split %lld", scan->format->name != NULL ? scan->format->name : "?",
                      (long long)s);
  }
  if (rc != 0) {
    fail(scan, rc, &error, s);
    return;
  }
  struct sl_split_slot* slot = &scan->slots[s];
  // Held units (see the top): what the split holds, counted in flight, and
  // what its next split_next will decode at once.
  void (*held_bytes)(void*, int64_t*, int64_t*) = scan->format->split_held_bytes;
  int64_t held = 0, unit = 0;
  if (held_bytes != NULL) {
    int64_t ignored = 0;
    held_bytes(state, &ignored, &unit);
  }
  for (int64_t b = 0;; ++b) {
    pthread_mutex_lock(&scan->mutex);
    int64_t est = held > 0 ? 0 : task_estimate_locked(scan, s, part, b);
    if (est < unit) est = unit;
    int covered = 0;
    while (!stopped_locked(scan, s) && !(covered = limit_covered_locked(scan, s)) &&
           held == 0 && !may_reserve_locked(scan, s, b, est)) {
      pthread_cond_wait(&scan->work_cv, &scan->mutex);
      est = task_estimate_locked(scan, s, part, b);
      if (est < unit) est = unit;
    }
    if (covered && !stopped_locked(scan, s)) {
      // The rest of this split (and every later one) would be cut anyway.
      task_done_locked(scan, s);
      cover_limit_locked(scan);
    }
    if (stopped_locked(scan, s) || covered) {
      pthread_mutex_unlock(&scan->mutex);
      break;
    }
    scan->in_flight += est;
    note_peak_locked(scan);
    pthread_mutex_unlock(&scan->mutex);

    struct sl_scan_item* item = NULL;
    rc = decode_batch(scan, state, projected, s, b, part, &item, &error);
    int64_t now_held = 0;
    unit = 0;
    if (held_bytes != NULL) held_bytes(state, &now_held, &unit);

    pthread_mutex_lock(&scan->mutex);
    scan->in_flight -= est;
    scan->in_flight += now_held - held;
    note_peak_locked(scan);
    // Whatever comes next (a batch of another size, the end of the split), the
    // reservation is gone: workers waiting for room must look again.
    if (est > 0 || now_held < held) pthread_cond_broadcast(&scan->work_cv);
    held = now_held;
    if (rc == 0 && item == NULL && part >= 0) rc = sl_zip_end(slot->zip, part, b, &error);
    if (rc != 0) {
      fail_locked(scan, rc, &error, s);
      pthread_mutex_unlock(&scan->mutex);
      if (item != NULL) release_item(scan->alloc, item);
      break;
    }
    if (item == NULL) {
      task_done_locked(scan, s);
      pthread_mutex_unlock(&scan->mutex);
      break;
    }
    if (stopped_locked(scan, s)) {
      pthread_mutex_unlock(&scan->mutex);
      release_item(scan->alloc, item);
      break;
    }
    if (part >= 0) {
      rc = zip_part_locked(scan, s, part, &item, &error);
      if (rc == 0 && item != NULL &&
          (scan->on_batch != NULL || scan->repeat != NULL || scan->filter != NULL ||
           scan->paths != NULL)) {
        // The filter, repeats and the hook see whole batches, outside the lock.
        // The sibling parts cannot complete a later batch meanwhile: this part
        // has not parked it.
        pthread_mutex_unlock(&scan->mutex);
        int64_t rows = 0;
        rc = filter_rows(scan, &item->array, &rows, &error);
        int empty = rc == 0 && rows == 0;
        if (rc == 0 && !empty) rc = expand_repeats(scan, &item->array, &error);
        if (rc == 0 && !empty) rc = take_fields(scan, &item->array, &error);
        if (rc == 0 && !empty && scan->on_batch != NULL)
          rc = scan->on_batch(scan->on_batch_ctx, &item->array, &error);
        pthread_mutex_lock(&scan->mutex);
        if (empty && rc == 0 && !stopped_locked(scan, s)) {  // no row passed: nothing to queue
          scan->in_flight -= item->bytes;
          pthread_cond_broadcast(&scan->work_cv);
          release_item(scan->alloc, item);
          pthread_mutex_unlock(&scan->mutex);
          continue;
        }
        if (rc != 0 || stopped_locked(scan, s)) {
          scan->in_flight -= item->bytes;
          release_item(scan->alloc, item);
          item = NULL;
          if (rc == 0) {  // stopped meanwhile
            pthread_mutex_unlock(&scan->mutex);
            break;
          }
        }
      }
      if (rc != 0) {
        fail_locked(scan, rc, &error, s);
        pthread_mutex_unlock(&scan->mutex);
        break;
      }
      if (item == NULL) {  // parked: its siblings complete it
        pthread_mutex_unlock(&scan->mutex);
        continue;
      }
    } else {
      scan->in_flight += item->bytes;
      note_peak_locked(scan);
    }
    slot->last_bytes = item->bytes;
    slot->queued_rows += item->array.length;
    scan->queued_rows += item->array.length;
    struct sl_scan_item** head = scan->ordered ? &slot->head : &scan->done_head;
    struct sl_scan_item** tail = scan->ordered ? &slot->tail : &scan->done_tail;
    if (*tail != NULL) {
      (*tail)->next = item;
    } else {
      *head = item;
    }
    *tail = item;
    pthread_cond_broadcast(&scan->ready_cv);
    pthread_mutex_unlock(&scan->mutex);
  }
  scan->format->split_close(state);
  if (held != 0) {  // the rest of a unit, cut short (error, stop, limit)
    pthread_mutex_lock(&scan->mutex);
    scan->in_flight -= held;
    pthread_cond_broadcast(&scan->work_cv);
    pthread_mutex_unlock(&scan->mutex);
  }
}

static void* worker_main(void* arg) {
  struct sl_scan* scan = arg;
  pthread_mutex_lock(&scan->mutex);
  while (!scan->stop && scan->next_task < scan->n_tasks &&
         scan->next_task / scan->n_parts <= scan->stop_after) {
    int64_t t = scan->next_task++;
    pthread_mutex_unlock(&scan->mutex);
    run_task(scan, t);
    pthread_mutex_lock(&scan->mutex);
  }
  pthread_mutex_unlock(&scan->mutex);
  return NULL;
}

static void scan_free(struct sl_scan* scan) {
  sl_free(scan->alloc, scan->tag_metadata, scan->tag_metadata_size);
  const struct sluice_allocator* alloc = scan->alloc;
  if (scan->slots != NULL) {
    for (int64_t s = 0; s < scan->n_splits; ++s) {
      for (struct sl_scan_item *it = scan->slots[s].head, *next; it != NULL; it = next) {
        next = it->next;
        release_item(alloc, it);
      }
      sl_zip_free(scan->slots[s].zip);
    }
  }
  for (struct sl_scan_item *it = scan->done_head, *next; it != NULL; it = next) {
    next = it->next;
    release_item(alloc, it);
  }
  if (scan->schema.release != NULL) scan->schema.release(&scan->schema);
  if (scan->part_last_bytes != NULL) {
    sl_free(alloc, scan->part_last_bytes,
            (size_t)scan->n_splits * (size_t)scan->layout.n_parts * sizeof *scan->part_last_bytes);
  }
  if (scan->part_estimates != NULL) {
    sl_free(alloc, scan->part_estimates,
            (size_t)scan->layout.n_parts * sizeof *scan->part_estimates);
  }
  sl_zip_layout_free(&scan->layout, alloc);
  sl_free(alloc, scan->slots, (size_t)scan->n_splits * sizeof *scan->slots);
  sl_free(alloc, scan->splits, (size_t)scan->n_splits * sizeof *scan->splits);
  sl_free(alloc, scan->places, (size_t)scan->n_splits * sizeof *scan->places);
  sl_free(alloc, scan->place_base, (size_t)scan->place_fields * sizeof *scan->place_base);
  sl_free(alloc, scan->place_width, (size_t)scan->place_fields * sizeof *scan->place_width);
  sl_ref_release(scan->place_owner);
  sl_free(alloc, scan->columns, (size_t)scan->columns_cap * sizeof *scan->columns);
  if (scan->filter != NULL) {
    sl_free(alloc, scan->filter_at, (size_t)scan->filter->n_conditions * sizeof *scan->filter_at);
  }
  sl_free(alloc, scan->repeat, (size_t)scan->n_asked * sizeof *scan->repeat);
  sl_free(alloc, scan->fields_column, (size_t)scan->n_asked * sizeof *scan->fields_column);
  sl_free(alloc, scan->fields_path, (size_t)scan->n_asked * sizeof *scan->fields_path);
  sl_free(alloc, scan->threads, (size_t)SL_MAX_THREADS * sizeof *scan->threads);
  pthread_cond_destroy(&scan->ready_cv);
  pthread_cond_destroy(&scan->work_cv);
  pthread_mutex_destroy(&scan->mutex);
  sl_free(alloc, scan, sizeof *scan);
}

static int thread_count(int wanted) {
  if (wanted <= 0) return sl_cores(SL_MAX_THREADS);
  return wanted > SL_MAX_THREADS ? SL_MAX_THREADS : wanted;
}

/// Fewer splits than threads, and a reader that can decode a split by
/// columns: each split runs as threads / n_splits column parts (never more
/// parts than columns, never more tasks than threads).
static int column_parts(const struct sl_scan_args* args, int64_t n_columns, int threads) {
  if (!args->format->split_by_columns || args->schema == NULL || args->n_splits <= 0 ||
      args->n_splits >= threads) {
    return 1;
  }
  int64_t k = threads / args->n_splits;
  if (k > n_columns) k = n_columns;
  return k > 1 ? (int)k : 1;
}

/// Sets up column parts: the layout, a zip per split, per-part estimates.
static int setup_parts(struct sl_scan* scan, int n_parts, struct sluice_error* error) {
  for (int64_t s = 0; s < scan->n_splits; ++s) scan->slots[s].parts_left = 1;
  scan->n_parts = 1;
  scan->n_tasks = scan->n_splits;
  if (n_parts <= 1) return 0;
  int64_t n_columns = scan->columns != NULL ? scan->n_columns : scan->schema.n_children;
  // Parts balanced by the columns' sizes when the reader knows them.
  int64_t* weights = NULL;
  if (scan->format->column_bytes != NULL) {
    weights = sl_alloc(scan->alloc, (size_t)n_columns * sizeof *weights);
    for (int64_t i = 0; weights != NULL && i < n_columns; ++i) {
      int64_t column = scan->columns != NULL ? scan->columns[i] : i;
      weights[i] = scan->format->column_bytes(scan->reader, column);
    }
  }
  int rc = sl_zip_layout_init(&scan->layout, scan->alloc, scan->columns, n_columns, weights,
                              n_parts, error);
  sl_free(scan->alloc, weights, (size_t)n_columns * sizeof *weights);
  if (rc != 0) return rc;
  scan->part_last_bytes = sl_calloc(scan->alloc, (size_t)scan->n_splits * (size_t)n_parts,
                                    sizeof *scan->part_last_bytes);
  scan->part_estimates = sl_calloc(scan->alloc, (size_t)n_parts, sizeof *scan->part_estimates);
  if (scan->part_last_bytes == NULL || scan->part_estimates == NULL)
    return sl_error_set(error, ENOMEM, "scan: out of memory planning column parts");
  for (int64_t s = 0; s < scan->n_splits; ++s) {
    SL_RETURN_NOT_OK(sl_zip_create(scan->alloc, &scan->layout, s, &scan->slots[s].zip, error));
    scan->slots[s].parts_left = n_parts;
  }
  scan->n_parts = n_parts;
  scan->n_tasks = scan->n_splits * n_parts;
  return 0;
}

/// Back to whole splits (before any worker took a task). Caller holds the
/// mutex.
static void drop_parts_locked(struct sl_scan* scan) {
  for (int64_t s = 0; s < scan->n_splits; ++s) {
    sl_zip_free(scan->slots[s].zip);
    scan->slots[s].zip = NULL;
    scan->slots[s].parts_left = 1;
  }
  scan->n_parts = 1;
  scan->n_tasks = scan->n_splits;
}

/// Starts the workers with every signal blocked, so that signals (SIGINT,
/// SIGPIPE) keep going to the application's own threads.
static int start_threads(struct sl_scan* scan, int n, struct sluice_error* error) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  for (int i = 0; i < n; ++i) {
    rc = pthread_create(&scan->threads[i], NULL, worker_main, scan);
    if (rc != 0) break;
    scan->n_threads++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0 && scan->n_threads == 0) {
    return sl_error_set(error, rc == EAGAIN ? EAGAIN : ENOMEM,
                        "scan: cannot start a worker thread (error %d)", rc);
  }
  // Fewer threads than asked still scan everything.
  return 0;
}

/// A placed scan: the caller's columns by file column (readers may be
/// opened on a subset), and each split whose rows are planned gets its
/// place, from the rows planned before it. After a split of unknown rows,
/// nothing is placed (the offsets after it are unknown). ENOMEM.
static int set_places(struct sl_scan* scan, const struct sl_scan_args* args) {
  const struct sluice_allocator* alloc = scan->alloc;
  const struct sluice_placement* p = args->placement->user;
  int64_t fields = args->schema != NULL ? args->schema->n_children : 0;
  scan->place_fields = fields > 0 ? fields : 1;
  scan->places = sl_calloc(alloc, (size_t)(scan->n_splits > 0 ? scan->n_splits : 1),
                           sizeof *scan->places);
  scan->place_base = sl_calloc(alloc, (size_t)scan->place_fields, sizeof *scan->place_base);
  scan->place_width = sl_calloc(alloc, (size_t)scan->place_fields, sizeof *scan->place_width);
  if (scan->places == NULL || scan->place_base == NULL || scan->place_width == NULL) return ENOMEM;
  for (int64_t k = 0; k < p->n_columns; ++k) {
    int64_t c = args->columns != NULL ? args->columns[k] : k;
    if (c < 0 || c >= fields || p->values[k] == NULL || p->widths[k] <= 0) continue;
    if (args->paths != NULL && args->paths[k] != NULL) continue;  // a field of c: gathered by copy
    scan->place_base[c] = p->values[k];
    scan->place_width[c] = p->widths[k];
  }
  scan->place_owner = sl_ref_retain(args->placement->owner);
  int64_t first_row = 0;
  for (int64_t s = 0; s < scan->n_splits; ++s) {
    int64_t rows = p->split_rows[s];
    if (rows < 0 || first_row > INT64_MAX - rows) break;
    scan->places[s] = (struct sl_split_place){scan->place_base, scan->place_width, first_row,
                                              rows, scan->place_owner};
    scan->splits[s].place = &scan->places[s];
    first_row += rows;
  }
  return 0;
}

/// The columns asked only as struct fields, never whole nor by the filter
/// (whose conditions see the decoded column), with the fields kept: what
/// readers may leave undecoded (sl_split_fields). ENOMEM.
static int set_fields(struct sl_scan* scan, const struct sl_scan_args* args) {
  const struct sluice_allocator* alloc = scan->alloc;
  if (scan->paths == NULL || scan->n_asked == 0 || !scan->format->prunes_fields) return 0;
  scan->fields_column = sl_alloc(alloc, (size_t)scan->n_asked * sizeof *scan->fields_column);
  scan->fields_path = sl_alloc(alloc, (size_t)scan->n_asked * sizeof *scan->fields_path);
  if (scan->fields_column == NULL || scan->fields_path == NULL) return ENOMEM;
  int64_t n = 0;
  for (int64_t i = 0; i < scan->n_asked; ++i) {
    int64_t c = args->columns[i];
    int whole = scan->paths[i] == NULL;
    for (int64_t j = 0; !whole && j < scan->n_asked; ++j)
      whole = args->columns[j] == c && scan->paths[j] == NULL;
    for (int k = 0; !whole && scan->filter != NULL && k < scan->filter->n_conditions; ++k)
      whole = scan->filter->conditions[k].column == c;
    if (whole) continue;
    scan->fields_column[n] = c;
    scan->fields_path[n++] = scan->paths[i];
  }
  scan->fields = (struct sl_split_fields){n, scan->fields_column, scan->fields_path};
  for (int64_t s = 0; n > 0 && s < scan->n_splits; ++s) scan->splits[s].fields = &scan->fields;
  return 0;
}

/// The fields of struct `node` (depth `depth` of the paths[0..n) under
/// its column) that no path keeps or passes through become type null, as
/// a reader that prunes gives them (sl_format_reader.prunes_fields).
static int prune_node(struct ArrowSchema* node, const int64_t* const* paths, int64_t n,
                      int64_t depth, const struct sluice_allocator* alloc,
                      struct sluice_error* error) {
  if (strcmp(node->format, "+s") != 0 || depth > 64) return 0;
  for (int64_t i = 0; i < node->n_children; ++i) {
    int kept = 0, through = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (paths[k][0] < depth || paths[k][depth] != i) continue;
      if (paths[k][0] == depth) kept = 1;
      else through = 1;
    }
    struct ArrowSchema* child = node->children[i];
    if (kept) continue;
    if (through) {  // on with the paths that go through child i
      const int64_t** under = sl_alloc(alloc, (size_t)n * sizeof *under);
      if (under == NULL) return sl_error_set(error, ENOMEM, "scan: out of memory");
      int64_t m = 0;
      for (int64_t k = 0; k < n; ++k)
        if (paths[k][0] > depth && paths[k][depth] == i) under[m++] = paths[k];
      int rc = prune_node(child, under, m, depth + 1, alloc, error);
      sl_free(alloc, under, (size_t)n * sizeof *under);
      SL_RETURN_NOT_OK(rc);
      continue;
    }
    char* name = sl_strdup(alloc, child->name != NULL ? child->name : "");
    if (name == NULL) return sl_error_set(error, ENOMEM, "scan: out of memory");
    child->release(child);
    int rc = sl_schema_init(child, alloc, "n", name, ARROW_FLAG_NULLABLE, 0, error);
    sl_free(alloc, name, strlen(name) + 1);
    SL_RETURN_NOT_OK(rc);
  }
  return 0;
}

/// The scan's schema (what batches are measured and filtered by) as a
/// reader that prunes gives its columns: see prune_node.
static int prune_schema(struct sl_scan* scan, struct sluice_error* error) {
  if (scan->fields.n == 0 || scan->schema.release == NULL) return 0;
  const int64_t** mine = sl_alloc(scan->alloc, (size_t)scan->fields.n * sizeof *mine);
  if (mine == NULL) return sl_error_set(error, ENOMEM, "scan: out of memory");
  int rc = 0;
  for (int64_t k = 0; rc == 0 && k < scan->n_columns && k < scan->schema.n_children; ++k) {
    int64_t n = 0;
    for (int64_t j = 0; j < scan->fields.n; ++j)
      if (scan->fields.column[j] == scan->columns[k]) mine[n++] = scan->fields.path[j];
    if (n > 0) rc = prune_node(scan->schema.children[k], mine, n, 1, scan->alloc, error);
  }
  sl_free(scan->alloc, mine, (size_t)scan->fields.n * sizeof *mine);
  return rc;
}

int sl_scan_start(const struct sl_scan_args* args, struct sl_scan** out,
                  struct sluice_error* error) {
  *out = NULL;
  const struct sluice_allocator* alloc = args->alloc;
  if (args->format == NULL || args->n_splits < 0 || args->n_columns < 0 ||
      (args->n_splits > 0 && args->splits == NULL)) {
    return sl_error_set(error, EINVAL, "scan: invalid arguments");
  }
  struct sl_scan* scan = sl_calloc(alloc, 1, sizeof *scan);
  if (scan == NULL) return sl_error_set(error, ENOMEM, "scan: out of memory");
  scan->alloc = alloc;
  scan->format = args->format;
  scan->reader = args->reader;
  scan->n_splits = args->n_splits;
  scan->ordered = args->ordered;
  scan->error_split = -1;
  scan->stop_after = INT64_MAX;
  scan->limit = args->limit;
  scan->deliver_limit = -1;
  if (args->filter != NULL && args->filter->pending.code != 0 && args->limit >= 0) {
    scan->deliver_limit = args->limit;
    scan->limit = -1;
  }
  scan->budget = args->memory_budget > 0 ? args->memory_budget : SL_DEFAULT_BUDGET;
  scan->on_batch = args->on_batch;
  scan->paths = args->columns != NULL ? args->paths : NULL;
  scan->on_batch_ctx = args->on_batch_ctx;
  scan->slow_split = args->slow_split;
  scan->slow_split_delay_us = args->slow_split_delay_us;
  if (pthread_mutex_init(&scan->mutex, NULL) != 0) {
    sl_free(alloc, scan, sizeof *scan);
    return sl_error_set(error, ENOMEM, "scan: cannot create a mutex");
  }
  if (pthread_cond_init(&scan->work_cv, NULL) != 0) {
    pthread_mutex_destroy(&scan->mutex);
    sl_free(alloc, scan, sizeof *scan);
    return sl_error_set(error, ENOMEM, "scan: cannot create a condition variable");
  }
  if (pthread_cond_init(&scan->ready_cv, NULL) != 0) {
    pthread_cond_destroy(&scan->work_cv);
    pthread_mutex_destroy(&scan->mutex);
    sl_free(alloc, scan, sizeof *scan);
    return sl_error_set(error, ENOMEM, "scan: cannot create a condition variable");
  }

  size_t n = (size_t)args->n_splits;
  scan->splits = sl_alloc(alloc, n * sizeof *scan->splits);
  scan->slots = sl_calloc(alloc, n, sizeof *scan->slots);
  scan->threads = sl_alloc(alloc, (size_t)SL_MAX_THREADS * sizeof *scan->threads);
  int n_conditions = args->filter != NULL ? args->filter->n_conditions : 0;
  if (args->filter != NULL) {
    scan->filter = args->filter;
    scan->filter_at = sl_alloc(alloc, (size_t)n_conditions * sizeof *scan->filter_at);
  }
  // A filter on a projection: the repeats step also drops the filter's own columns.
  int repeats = args->columns != NULL &&
                (n_conditions > 0 || sl_columns_repeat(args->columns, args->n_columns));
  if (args->columns != NULL) {
    scan->n_asked = scan->n_columns = args->n_columns;
    scan->columns_cap = args->n_columns + n_conditions;
    scan->columns = sl_alloc(alloc, (size_t)scan->columns_cap * sizeof *scan->columns);
    if (repeats) scan->repeat = sl_alloc(alloc, (size_t)args->n_columns * sizeof *scan->repeat);
  }
  if (scan->splits == NULL || scan->slots == NULL || scan->threads == NULL ||
      (args->columns != NULL && scan->columns == NULL) || (repeats && scan->repeat == NULL) ||
      (n_conditions > 0 && scan->filter_at == NULL)) {
    scan_free(scan);
    return sl_error_set(error, ENOMEM, "scan: out of memory planning %lld splits",
                        (long long)args->n_splits);
  }
  if (args->filter != NULL && (args->schema == NULL || args->placement != NULL)) {
    scan_free(scan);
    return sl_error_set(error, EINVAL, "scan: a filter needs the schema and no placement");
  }
  for (int c = 0; args->columns == NULL && c < n_conditions; ++c) {
    scan->filter_at[c] = args->filter->conditions[c].column;
  }
  if (n > 0) memcpy(scan->splits, args->splits, n * sizeof *scan->splits);
  for (size_t s = 0; s < n; ++s) {
    scan->splits[s].place = NULL;
    scan->splits[s].fields = NULL;
  }
  if (set_fields(scan, args) != 0) {
    scan_free(scan);
    return sl_error_set(error, ENOMEM, "scan: out of memory");
  }
  if (args->placement != NULL && set_places(scan, args) != 0) {
    scan_free(scan);
    return sl_error_set(error, ENOMEM, "scan: out of memory placing %lld splits",
                        (long long)args->n_splits);
  }
  if (repeats) {
    // Readers get each column once, in order of first mention.
    scan->n_columns = 0;
    for (int64_t i = 0; i < args->n_columns; ++i) {
      int64_t k = 0;
      while (k < scan->n_columns && scan->columns[k] != args->columns[i]) ++k;
      if (k == scan->n_columns) scan->columns[scan->n_columns++] = args->columns[i];
      scan->repeat[i] = k;
    }
    for (int c = 0; c < n_conditions; ++c) {
      int64_t column = args->filter->conditions[c].column, k = 0;
      while (k < scan->n_columns && scan->columns[k] != column) ++k;
      if (k == scan->n_columns) scan->columns[scan->n_columns++] = column;
      scan->filter_at[c] = k;
    }
  } else if (scan->columns != NULL && scan->n_columns > 0) {
    memcpy(scan->columns, args->columns, (size_t)scan->n_columns * sizeof *scan->columns);
  }
  if (args->schema != NULL) {
    int rc = args->columns != NULL
                 ? sl_schema_project(args->schema, scan->columns, scan->n_columns, alloc,
                                     &scan->schema, error)
                 : sl_schema_copy(args->schema, alloc, &scan->schema, error);
    if (rc == 0) rc = prune_schema(scan, error);
    if (rc != 0) {
      scan_free(scan);
      return rc;
    }
  }

  int threads = thread_count(args->threads);
  int64_t n_columns = args->columns != NULL ? scan->n_columns
                     : args->schema != NULL ? args->schema->n_children : 0;
  int rc = setup_parts(scan, column_parts(args, n_columns, threads), error);
  if (rc != 0) {
    scan_free(scan);
    return rc;
  }
  if (scan->n_splits == 0 || scan->limit == 0) {
    scan->ended = 1;
    *out = scan;
    return 0;
  }
  // The workers wait on the mutex until it is known how many started.
  pthread_mutex_lock(&scan->mutex);
  rc = start_threads(scan, scan->n_tasks < threads ? (int)scan->n_tasks : threads, error);
  // Parked column parts need all their siblings running.
  if (rc == 0 && scan->n_threads < scan->n_tasks && scan->n_parts > 1) drop_parts_locked(scan);
  pthread_mutex_unlock(&scan->mutex);
  if (rc != 0) {
    scan_free(scan);
    return rc;
  }
  *out = scan;
  return 0;
}

/// Takes the next deliverable item, or NULL at the end / on error. Caller
/// holds the mutex; may wait on ready_cv.
static struct sl_scan_item* take_locked(struct sl_scan* scan) {
  for (;;) {
    if (scan->ended) return NULL;
    // Ordered: the batches of the splits before the failed one come first.
    if (scan->error_code != 0 && (!scan->ordered || scan->head >= scan->error_split)) return NULL;
    struct sl_scan_item* item = NULL;
    if (scan->ordered) {
      if (scan->head >= scan->n_splits) {
        scan->ended = 1;
        continue;
      }
      struct sl_split_slot* slot = &scan->slots[scan->head];
      if (slot->head != NULL) {
        item = slot->head;
        slot->head = item->next;
        if (slot->head == NULL) slot->tail = NULL;
      } else if (slot->finished) {
        scan->head++;
        // A new head may decode past the budget: let it know.
        pthread_cond_broadcast(&scan->work_cv);
        continue;
      }
    } else if (scan->done_head != NULL) {
      item = scan->done_head;
      scan->done_head = item->next;
      if (scan->done_head == NULL) scan->done_tail = NULL;
    } else if (scan->splits_finished == scan->n_splits) {
      scan->ended = 1;
      continue;
    }
    if (item != NULL) return item;
    pthread_cond_wait(&scan->ready_cv, &scan->mutex);
  }
}

int sl_scan_next(struct sl_scan* scan, struct ArrowArray* out, struct sluice_batch_tag* tag,
                 struct sluice_error* error) {
  out->release = NULL;
  pthread_mutex_lock(&scan->mutex);
  struct sl_scan_item* item;
  while ((item = take_locked(scan)) != NULL) {
    scan->in_flight -= item->bytes;
    scan->slots[item->split].queued_rows -= item->array.length;
    scan->queued_rows -= item->array.length;
    pthread_cond_broadcast(&scan->work_cv);
    if (scan->deliver_limit < 0 || scan->rows_delivered < scan->deliver_limit) break;
    // Past the limit of a scan whose filter waits (deliver_limit): dropped.
    pthread_mutex_unlock(&scan->mutex);
    release_item(scan->alloc, item);
    pthread_mutex_lock(&scan->mutex);
  }
  if (item == NULL) {
    int code = scan->ended ? 0 : scan->error_code;
    if (code != 0 && error != NULL) memcpy(error, &scan->error, sizeof *error);
    pthread_mutex_unlock(&scan->mutex);
    // The end, and a filter value still does not fit its column's type
    // (inferred, and no value on the way widened it): the value's error.
    if (code == 0 && scan->filter != NULL && scan->filter->pending.code != 0) {
      code = scan->filter->pending.code;
      if (error != NULL) *error = scan->filter->pending;
    }
    return code;
  }
  int64_t limit = scan->limit >= 0 ? scan->limit : scan->deliver_limit;
  if (limit >= 0) {
    int64_t remaining = limit - scan->rows_delivered;
    if (item->array.length >= remaining) {
      // Cut without touching a buffer. A struct array may be shorter than
      // its children, but a stream's consumer takes a record batch's
      // children as its columns (pyarrow's importer does): cut them too.
      if (item->array.length > remaining) {
        struct ArrowArray* top = &item->array;
        for (int64_t c = 0; top->offset == 0 && c < top->n_children; ++c) {
          struct ArrowArray* child = top->children[c];
          if (child->length > remaining) {
            child->length = remaining;
            if (child->null_count != 0) child->null_count = -1;
          }
        }
        top->length = remaining;
        if (top->null_count != 0) top->null_count = -1;
      }
      if (scan->limit >= 0) {
        scan->ended = 1;
        scan->stop = 1;
      }
    }
  }
  scan->rows_delivered += item->array.length;
  pthread_mutex_unlock(&scan->mutex);
  sl_array_move(&item->array, out);
  // The tag's metadata stays valid until the next call: the scan keeps it.
  sl_free(scan->alloc, scan->tag_metadata, scan->tag_metadata_size);
  scan->tag_metadata = item->metadata;
  scan->tag_metadata_size = item->metadata_size;
  if (tag != NULL) {
    tag->split = item->split;
    tag->batch = item->batch;
    tag->metadata = item->metadata;
  }
  sl_free(scan->alloc, item, sizeof *item);
  return 0;
}

void sl_scan_stop(struct sl_scan* scan) {
  if (scan == NULL) return;
  pthread_mutex_lock(&scan->mutex);
  scan->stop = 1;
  pthread_cond_broadcast(&scan->work_cv);
  pthread_cond_broadcast(&scan->ready_cv);
  pthread_mutex_unlock(&scan->mutex);
  for (int i = 0; i < scan->n_threads; ++i) pthread_join(scan->threads[i], NULL);
  scan_free(scan);
}

int64_t sl_scan_peak_in_flight(const struct sl_scan* scan) {
  // The mutex is not const, but locking it does not change the scan's value.
  struct sl_scan* s = (struct sl_scan*)scan;
  pthread_mutex_lock(&s->mutex);
  int64_t peak = s->peak_in_flight;
  pthread_mutex_unlock(&s->mutex);
  return peak;
}
