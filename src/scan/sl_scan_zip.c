// Zipping column parts of a split back into whole batches (see sl_scan_zip.h).
#include "sl_scan_zip.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sl_alloc.h"
#include "../core/sl_array.h"
#include "../core/sl_error.h"

/* ---- layout ----------------------------------------------------------------- */

struct weighted_column {
  int64_t weight;
  int64_t position;
};

static int heavier_first(const void* a, const void* b) {
  const struct weighted_column* x = a;
  const struct weighted_column* y = b;
  if (x->weight != y->weight) return x->weight > y->weight ? -1 : 1;
  return x->position < y->position ? -1 : x->position > y->position;
}

void sl_zip_layout_free(struct sl_zip_layout* layout, const struct sluice_allocator* alloc) {
  size_t n = (size_t)layout->n_columns;
  sl_free(alloc, layout->columns, n * sizeof *layout->columns);
  sl_free(alloc, layout->positions, n * sizeof *layout->positions);
  sl_free(alloc, layout->first, ((size_t)layout->n_parts + 1) * sizeof *layout->first);
  sl_free(alloc, layout->part_weights, (size_t)layout->n_parts * sizeof *layout->part_weights);
  memset(layout, 0, sizeof *layout);
}

int sl_zip_layout_init(struct sl_zip_layout* layout, const struct sluice_allocator* alloc,
                       const int64_t* columns, int64_t n_columns, const int64_t* weights,
                       int n_parts, struct sluice_error* error) {
  memset(layout, 0, sizeof *layout);
  if (n_parts < 1 || n_columns < n_parts)
    return sl_error_set(error, EINVAL, "scan: cannot divide %lld columns into %d parts",
                        (long long)n_columns, n_parts);
  size_t n = (size_t)n_columns, k = (size_t)n_parts;
  layout->n_parts = n_parts;
  layout->n_columns = n_columns;
  layout->columns = sl_alloc(alloc, n * sizeof *layout->columns);
  layout->positions = sl_alloc(alloc, n * sizeof *layout->positions);
  layout->first = sl_calloc(alloc, k + 1, sizeof *layout->first);
  layout->part_weights = sl_calloc(alloc, k, sizeof *layout->part_weights);
  struct weighted_column* order = sl_alloc(alloc, n * sizeof *order);
  int* part_of = sl_alloc(alloc, n * sizeof *part_of);
  int64_t* load = sl_calloc(alloc, k, sizeof *load);
  int rc = 0;
  if (layout->columns == NULL || layout->positions == NULL || layout->first == NULL ||
      layout->part_weights == NULL || order == NULL || part_of == NULL || load == NULL) {
    rc = sl_error_set(error, ENOMEM, "scan: out of memory dividing %lld columns into parts",
                      (long long)n_columns);
    goto done;
  }
  // Greedy balancing: heaviest column first, each to the lightest part (the
  // one with fewer columns on a tie, so that unknown weights divide by count).
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t w = weights != NULL && weights[i] > 0 ? weights[i] : 0;
    if (w > INT64_MAX / 2 / (int64_t)n) w = INT64_MAX / 2 / (int64_t)n;  // sums cannot overflow
    order[i] = (struct weighted_column){w, (int64_t)i};
    total += w;
  }
  qsort(order, n, sizeof *order, heavier_first);
  for (size_t i = 0; i < n; ++i) {
    size_t best = 0;
    for (size_t p = 1; p < k; ++p) {
      if (load[p] < load[best] || (load[p] == load[best] && layout->first[p] < layout->first[best]))
        best = p;
    }
    part_of[order[i].position] = (int)best;
    load[best] += order[i].weight;
    layout->first[best]++;  // a count for now
  }
  for (size_t p = 0; p < k; ++p) layout->part_weights[p] = total > 0 ? load[p] : layout->first[p];
  layout->total_weight = total > 0 ? total : n_columns;
  // Counts -> starts, then each part's columns in projected order.
  int64_t at = 0;
  for (size_t p = 0; p <= k; ++p) {
    int64_t count = p < k ? layout->first[p] : 0;
    layout->first[p] = at;
    at += count;
  }
  int64_t* fill = load;  // reused as each part's next slot
  for (size_t p = 0; p < k; ++p) fill[p] = layout->first[p];
  for (size_t i = 0; i < n; ++i) {
    int64_t slot = fill[part_of[i]]++;
    layout->columns[slot] = columns != NULL ? columns[i] : (int64_t)i;
    layout->positions[slot] = (int64_t)i;
  }
done:
  sl_free(alloc, order, n * sizeof *order);
  sl_free(alloc, part_of, n * sizeof *part_of);
  sl_free(alloc, load, k * sizeof *load);
  if (rc != 0) sl_zip_layout_free(layout, alloc);
  return rc;
}

/* ---- parked batches ----------------------------------------------------------- */

struct zip_entry {
  int64_t batch;
  int n_have;
  /// n_parts; until a part arrives, array.release == NULL and bytes is what
  /// was promised for it.
  struct sl_zip_batch* parts;
  struct zip_entry* next;
};

struct sl_zip {
  const struct sluice_allocator* alloc;
  const struct sl_zip_layout* layout;
  int64_t split;
  int64_t next_batch;       // lowest batch not yet zipped
  struct zip_entry* head;   // batches next_batch, next_batch + 1, ... in order
  struct zip_entry* tail;
  int64_t* deposited;       // per part: batches parked or zipped
  int64_t* ended_at;        // per part: batches at its end, -1 = not ended
};

static void batch_release(const struct sluice_allocator* alloc, struct sl_zip_batch* b) {
  if (b->array.release != NULL) b->array.release(&b->array);
  sl_free(alloc, b->metadata, b->metadata_size);
  b->metadata = NULL;
  b->metadata_size = 0;
}

static void entry_free(struct sl_zip* zip, struct zip_entry* e) {
  int k = zip->layout->n_parts;
  for (int p = 0; p < k; ++p) batch_release(zip->alloc, &e->parts[p]);
  sl_free(zip->alloc, e->parts, (size_t)k * sizeof *e->parts);
  sl_free(zip->alloc, e, sizeof *e);
}

int sl_zip_create(const struct sluice_allocator* alloc, const struct sl_zip_layout* layout,
                  int64_t split, struct sl_zip** out, struct sluice_error* error) {
  *out = NULL;
  size_t k = (size_t)layout->n_parts;
  struct sl_zip* zip = sl_calloc(alloc, 1, sizeof *zip);
  if (zip != NULL) {
    zip->deposited = sl_calloc(alloc, k, sizeof *zip->deposited);
    zip->ended_at = sl_alloc(alloc, k * sizeof *zip->ended_at);
  }
  if (zip == NULL || zip->deposited == NULL || zip->ended_at == NULL) {
    if (zip != NULL) {
      sl_free(alloc, zip->deposited, k * sizeof *zip->deposited);
      sl_free(alloc, zip->ended_at, k * sizeof *zip->ended_at);
      sl_free(alloc, zip, sizeof *zip);
    }
    return sl_error_set(error, ENOMEM, "scan: out of memory splitting split %lld by columns",
                        (long long)split);
  }
  zip->alloc = alloc;
  zip->layout = layout;
  zip->split = split;
  for (size_t p = 0; p < k; ++p) zip->ended_at[p] = -1;
  *out = zip;
  return 0;
}

int64_t sl_zip_drop(struct sl_zip* zip) {
  int64_t bytes = 0;
  for (struct zip_entry *e = zip->head, *next; e != NULL; e = next) {
    next = e->next;
    for (int p = 0; p < zip->layout->n_parts; ++p) bytes += e->parts[p].bytes;
    entry_free(zip, e);
  }
  zip->head = zip->tail = NULL;
  return bytes;
}

void sl_zip_free(struct sl_zip* zip) {
  if (zip == NULL) return;
  sl_zip_drop(zip);
  size_t k = (size_t)zip->layout->n_parts;
  sl_free(zip->alloc, zip->deposited, k * sizeof *zip->deposited);
  sl_free(zip->alloc, zip->ended_at, k * sizeof *zip->ended_at);
  sl_free(zip->alloc, zip, sizeof *zip);
}

int sl_zip_holds_back(const struct sl_zip* zip, int64_t batch) {
  return zip->head != NULL && batch == zip->next_batch;
}

int64_t sl_zip_next_batch(const struct sl_zip* zip) { return zip->next_batch; }

int sl_zip_parked(const struct sl_zip* zip, int64_t batch) {
  return zip->tail != NULL && batch >= zip->next_batch && batch <= zip->tail->batch;
}

static int disagree(const struct sl_zip* zip, int part, int64_t batches, int other,
                    int64_t other_batches, struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "split %lld: its column parts disagree on the number of "
                      "batches (part %d: %lld, part %d: %lld); the reader's batches must not "
                      "depend on the columns decoded", (long long)zip->split, part,
                      (long long)batches, other, (long long)other_batches);
}

int sl_zip_end(struct sl_zip* zip, int part, int64_t n_batches, struct sluice_error* error) {
  zip->ended_at[part] = n_batches;
  for (int q = 0; q < zip->layout->n_parts; ++q) {
    if (zip->deposited[q] > n_batches) {
      return disagree(zip, part, n_batches, q, zip->deposited[q], error);
    }
    if (zip->ended_at[q] >= 0 && zip->ended_at[q] != n_batches)
      return disagree(zip, part, n_batches, q, zip->ended_at[q], error);
  }
  return 0;
}

/// Moves the parts' children into one struct batch in projected order.
static int zip_entry(struct sl_zip* zip, struct zip_entry* e, struct sl_zip_batch* out,
                     struct sluice_error* error) {
  const struct sl_zip_layout* layout = zip->layout;
  int64_t length = e->parts[0].array.length;
  for (int p = 0; p < layout->n_parts; ++p) {
    const struct ArrowArray* a = &e->parts[p].array;
    int64_t want = layout->first[p + 1] - layout->first[p];
    if (a->length != length)
      return sl_error_set(error, EINVAL, "split %lld, batch %lld: its column parts disagree on "
                          "the number of rows (part 0: %lld, part %d: %lld)", (long long)zip->split,
                          (long long)e->batch, (long long)length, p, (long long)a->length);
    if (a->n_children != want)
      return sl_error_set(error, EINVAL, "split %lld, batch %lld: column part %d has %lld "
                          "columns, %lld were asked for", (long long)zip->split,
                          (long long)e->batch, p, (long long)a->n_children, (long long)want);
    if (a->null_count != 0 && a->n_buffers > 0 && a->buffers[0] != NULL)
      return sl_error_set(error, ENOTSUP, "split %lld, batch %lld: a batch with null rows "
                          "cannot be zipped from column parts", (long long)zip->split,
                          (long long)e->batch);
  }
  SL_RETURN_NOT_OK(sl_array_init(&out->array, zip->alloc, 1, layout->n_columns, error));
  out->array.length = length;
  out->bytes = 0;
  for (int p = 0; p < layout->n_parts; ++p) {
    struct sl_zip_batch* part = &e->parts[p];
    for (int64_t j = 0; j < part->array.n_children; ++j) {
      struct ArrowArray* child = part->array.children[j];
      // The parent's offset applies to its children: fold it in, since the
      // zipped parent has none.
      if (part->array.offset != 0) {
        child->offset += part->array.offset;
        child->length -= part->array.offset;
        if (child->null_count != 0) child->null_count = -1;
      }
      sl_array_move(child, out->array.children[layout->positions[layout->first[p] + j]]);
    }
    out->bytes += part->bytes;
    if (out->metadata == NULL && part->metadata != NULL) {
      out->metadata = part->metadata;
      out->metadata_size = part->metadata_size;
      part->metadata = NULL;
      part->metadata_size = 0;
    }
  }
  return 0;
}

int sl_zip_put(struct sl_zip* zip, int part, int64_t batch, struct sl_zip_batch* in,
               const int64_t* estimates, int64_t* added, struct sl_zip_batch* out,
               struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  *added = 0;
  struct sl_zip_batch taken = *in;
  memset(in, 0, sizeof *in);
  int k = zip->layout->n_parts;
  for (int q = 0; q < k; ++q) {
    if (zip->ended_at[q] >= 0 && batch >= zip->ended_at[q]) {
      batch_release(zip->alloc, &taken);
      return disagree(zip, part, batch + 1, q, zip->ended_at[q], error);
    }
  }
  struct zip_entry* e = zip->head;
  while (e != NULL && e->batch != batch) e = e->next;
  if (e == NULL) {
    e = sl_calloc(zip->alloc, 1, sizeof *e);
    if (e != NULL) e->parts = sl_calloc(zip->alloc, (size_t)k, sizeof *e->parts);
    if (e == NULL || e->parts == NULL) {
      if (e != NULL) sl_free(zip->alloc, e, sizeof *e);
      batch_release(zip->alloc, &taken);
      return sl_error_set(error, ENOMEM, "scan: out of memory parking batch %lld of split %lld",
                          (long long)batch, (long long)zip->split);
    }
    e->batch = batch;
    for (int q = 0; q < k; ++q) {
      if (q == part) continue;
      e->parts[q].bytes = estimates[q] > 0 ? estimates[q] : 0;
      *added += e->parts[q].bytes;
    }
    if (zip->tail != NULL) {
      zip->tail->next = e;
    } else {
      zip->head = e;
    }
    zip->tail = e;
  }
  *added += taken.bytes - e->parts[part].bytes;
  e->parts[part] = taken;
  e->n_have++;
  zip->deposited[part] = batch + 1;
  if (e->n_have < k) return 0;
  // Each part parks its batches in order, so the batch completed last is
  // always the lowest one parked.
  int rc = zip_entry(zip, e, out, error);
  zip->head = e->next;
  if (zip->head == NULL) zip->tail = NULL;
  zip->next_batch = batch + 1;
  entry_free(zip, e);
  if (rc != 0) batch_release(zip->alloc, out);
  return rc;
}
