// Remote sources with ranged reads (HTTP, S3): byte-range splits as for a
// local file, on all cores, each split fetching its own range (one request)
// plus the row that crosses its end into a window, where a local file would
// view its mapping. A split's first row depends on the quote state at its
// start, which needs every earlier chunk's quote count: a split counts its
// own chunk as soon as its bytes arrive and publishes it; a split that needs
// a chunk nobody is counting fetches and counts that chunk itself (a range
// scanned alone, e.g. one Dask partition, never waits for others).
// Line feeds are counted with the quotes, so errors name the true line.
#include <string.h>

#include "csv_reader_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"

/// Bytes a split fetches past its end, for the row that crosses it (a
/// longer row is read on by further GETs): 1 MiB fetched 3% more than the
/// object (W1's w1.csv in 85 splits), 64 KiB 0.2%.
#define CSV_RANGED_TAIL ((int64_t)64 << 10)

/// Stores chunk j's value (quote count, or comment transitions) and line
/// feeds from its n bytes. Two splits may both count a chunk: same numbers.
static void publish(struct csv_reader* r, int64_t j, const uint8_t* bytes, int64_t n) {
  long long value = csv_chunk_value(&r->layout.dialect, bytes, n);
  long long lines = (long long)sl_csv_count_byte(bytes, n, '\n');
  pthread_mutex_lock(&r->chunk_lock);
  atomic_store(&r->plan_lines[j], lines);
  atomic_store(&r->plan_quotes[j], value);
  pthread_cond_broadcast(&r->chunk_done);
  pthread_mutex_unlock(&r->chunk_lock);
}

/// Marks chunk j as being counted (its value -2) unless it is counted or
/// claimed already: 1 when this caller claimed it, and must publish it or
/// give it up (unclaim).
static int claim(struct csv_reader* r, int64_t j) {
  pthread_mutex_lock(&r->chunk_lock);
  int claimed = atomic_load(&r->plan_quotes[j]) == -1;
  if (claimed) atomic_store(&r->plan_quotes[j], -2);
  pthread_mutex_unlock(&r->chunk_lock);
  return claimed;
}

/// Gives up a claim whose fetch failed: another split may try again.
static void unclaim(struct csv_reader* r, int64_t j) {
  pthread_mutex_lock(&r->chunk_lock);
  atomic_store(&r->plan_quotes[j], -1);
  pthread_cond_broadcast(&r->chunk_done);
  pthread_mutex_unlock(&r->chunk_lock);
}

/// Chunk j's value and line feeds: waits while another split counts it,
/// fetches and counts it when nobody does.
static int chunk_counts(struct csv_reader* r, int64_t j, long long* value, long long* lines,
                        struct sluice_error* error) {
  for (;;) {
    pthread_mutex_lock(&r->chunk_lock);
    long long c;
    while ((c = atomic_load(&r->plan_quotes[j])) == -2)
      pthread_cond_wait(&r->chunk_done, &r->chunk_lock);
    if (c >= 0) {
      *value = c;
      *lines = atomic_load(&r->plan_lines[j]);
      pthread_mutex_unlock(&r->chunk_lock);
      return 0;
    }
    atomic_store(&r->plan_quotes[j], -2);  // ours to count
    pthread_mutex_unlock(&r->chunk_lock);
    int64_t from = csv_chunk_from(r, j), to = csv_chunk_to(r, j);
    struct sl_view v;
    int rc = sl_source_read_at(r->source, from, to - from, &v, error);
    if (rc != 0) {
      unclaim(r, j);
      return rc;
    }
    publish(r, j, v.data, to - from);
    sl_view_release(&v);
  }
}

int sl_csv_ranged_read(struct csv_split_state* s, struct sluice_error* error) {
  struct csv_reader* r = s->r;
  int64_t at = s->base + s->win_len;
  int64_t n = s->win_cap - s->win_len;
  if (n > r->size - at) n = r->size - at;
  if (n > 0) {
    struct sl_view v;
    SL_RETURN_NOT_OK(sl_source_read_at(r->source, at, n, &v, error));
    memcpy(s->window + s->win_len, v.data, (size_t)n);
    sl_view_release(&v);
    s->win_len += n;
  }
  s->eof = s->base + s->win_len >= r->size;
  return 0;
}

int sl_csv_ranged_window(struct csv_split_state* s, int64_t keep, struct sluice_error* error) {
  struct csv_reader* r = s->r;
  int64_t left = s->win_len - keep;
  int64_t cap = 2 * left > CSV_RANGED_TAIL ? 2 * left : CSV_RANGED_TAIL;
  // No more than max_row_bytes: a row that fills that is too long
  // (sl_csv_stream_fill says so before anything grows).
  const int64_t most = r->opts.max_row_bytes;
  if (cap > most) cap = left > most ? left : most;
  uint8_t* w = sl_alloc_buffer(r->alloc, (size_t)cap);
  if (w == NULL) {
    // The caller counted the lines before `keep` already.
    return sl_error_set(error, ENOMEM, "%s: line %lld (byte %lld): out of memory (%lld bytes) "
                        "for a row of %lld bytes or more", r->name, (long long)(s->lines_before + 1),
                        (long long)(s->base + keep), (long long)cap, (long long)left);
  }
  if (left > 0) memcpy(w, s->data + keep, (size_t)left);
  sl_view_release(&s->range);
  s->window = w;
  s->win_cap = cap;
  s->data = w;
  return 0;
}

int sl_csv_ranged_start(struct csv_split_state* s, int64_t i, struct sluice_error* error) {
  struct csv_reader* r = s->r;
  int64_t lo = csv_chunk_from(r, i);
  int64_t stop = i + 1 == r->n_plan ? r->size : r->plan_start[i + 1];
  int64_t hi = stop > r->size - CSV_RANGED_TAIL ? r->size : stop + CSV_RANGED_TAIL;
  // The split's range and the row that crosses its end, in one request,
  // decoded where it lands (a window only if that row is longer still).
  // Its chunk is claimed first: a split after it that needs the chunk's
  // counts waits for them instead of fetching the chunk a second time.
  s->base = lo;
  int claimed = claim(r, i);
  if (hi > lo) {
    int rc = sl_source_read_at(r->source, lo, hi - lo, &s->range, error);
    if (rc != 0) {
      if (claimed) unclaim(r, i);
      return rc;
    }
  }
  s->window = NULL;
  s->win_len = s->win_cap = hi > lo ? hi - lo : 0;
  s->eof = hi >= r->size;
  const uint8_t* bytes = s->range.data;
  // The range holds the whole chunk: count it for the splits after this one.
  if (claimed || atomic_load(&r->plan_quotes[i]) < 0) {
    int64_t to = csv_chunk_to(r, i) - lo;
    publish(r, i, bytes, to < s->win_len ? to : s->win_len);
  }
  int state = CSV_ST_LINE;  // data_start is a row start
  long long lines = r->header_lines;
  for (int64_t j = 0; j < i; ++j) {
    long long value, lf;
    SL_RETURN_NOT_OK(chunk_counts(r, j, &value, &lf, error));
    state = csv_state_after(&r->layout.dialect, state, value);
    lines += lf;
  }
  s->lines_before = lines;
  // Positions are window-relative from here on (sl_csv_stream_fill shifts them).
  int64_t end = stop - lo < s->win_len ? stop - lo : s->win_len;
  s->stop = i + 1 == r->n_plan ? INT64_MAX : stop - lo;
  s->pos = i == 0 ? 0 : sl_csv_next_row_start(&r->layout.dialect, bytes, 1, end, state);
  int64_t limit = s->win_len;
  if (!s->eof) {
    while (limit > s->pos && bytes[limit - 1] != '\n') --limit;
  }
  s->data = bytes;
  s->limit = limit;
  return 0;
}
