#include "text_rows_parallel.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_cores.h"

#define MAX_PARTS 16
/// Batches smaller than this are spelled by the caller alone: handing them
/// out would cost more than it saves.
#define MIN_ROWS_TO_SHARE 4096
/// Rows each part spells per round (see sl_text_rows_pool_write).
#define ROWS_PER_PART_ROUND 65536
/// The text of batches the caller spells alone gathers in its part up to
/// this many bytes before it goes to the sink: handing the flusher each
/// tiny batch's text (two thread switches) cost more than the batch
/// (100,000 one-row batches: 3.5 s). The sink buffers a MiB anyway.
#define GATHER_BYTES ((size_t)256 << 10)

struct rows_part {
  _Alignas(64) struct sl_text out;  // (a cache line of its own: see csv_cell)
  int64_t begin, end;
  int rc;
  struct sluice_error error;
};

struct sl_text_rows_pool;

struct helper_arg {
  struct sl_text_rows_pool* pool;
  int index;  ///< the part it spells (the caller spells part 0)
};

struct sl_text_rows_pool {
  const struct sluice_allocator* alloc;
  sl_text_spell_rows spell;
  void* ctx;
  int parts;  ///< threads + 1 (the caller)
  pthread_t threads[MAX_PARTS];
  struct helper_arg args[MAX_PARTS];
  int n_threads;
  int sync_ok;  ///< lock and cond were created
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint64_t generation;  ///< a new batch to spell
  int busy;             ///< helpers still spelling the current batch
  int stop;
  const struct sl_text_field* row;
  const struct ArrowArray* batch;
  /// Two sets of part buffers: one batch is spelled into `set[cur]` while
  /// the flusher writes the previous batch's set to the sink.
  struct rows_part part[2][MAX_PARTS];
  int cur;
  /// part[cur][0] holds the text of small batches not yet handed on
  /// (GATHER_BYTES), for `gather_sink`.
  int gathered;
  struct sl_sink* gather_sink;
  // The flusher (a thread when helpers run): writes set `flush_set`'s first
  // `flush_parts` parts to `flush_sink` while `flush_pending`.
  int has_flusher;
  pthread_t flusher;
  int flush_pending;
  int flush_set;
  int flush_parts;
  struct sl_sink* flush_sink;
  int flush_rc;  ///< the first write error (then nothing more is written)
  struct sluice_error flush_error;
};

/// append: after the text gathered in the part (a failed batch's own is
/// dropped).
static void spell_part(struct sl_text_rows_pool* p, int i, int append) {
  struct rows_part* part = &p->part[p->cur][i];
  if (!append) sl_text_clear(&part->out);
  size_t before = part->out.len;
  memset(&part->error, 0, sizeof part->error);
  part->rc = part->begin < part->end
                 ? p->spell(p->ctx, i, p->row, p->batch, part->begin, part->end, &part->out,
                            &part->error)
                 : 0;
  if (part->rc != 0) part->out.len = before;
}

/// Writes one set's parts in order (lock not held). The first error stops it.
static int write_parts(struct rows_part* parts, int n, struct sl_sink* sink,
                       struct sluice_error* error) {
  for (int i = 0; i < n; ++i) {
    SL_RETURN_NOT_OK(sl_sink_write(sink, parts[i].out.data, (int64_t)parts[i].out.len, error));
  }
  return 0;
}

/// The flusher: text goes to the sink (a copy into page cache, the kernel's
/// share of a text writer's time) while the next batch is being spelled.
static void* flusher_main(void* arg) {
  struct sl_text_rows_pool* p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->flush_pending && !p->stop) pthread_cond_wait(&p->cond, &p->lock);
    if (!p->flush_pending) break;  // stopped with nothing to write
    int set = p->flush_set, n = p->flush_parts;
    struct sl_sink* sink = p->flush_sink;
    int failed = p->flush_rc != 0 || p->stop;
    pthread_mutex_unlock(&p->lock);
    struct sluice_error error;
    memset(&error, 0, sizeof error);
    int rc = failed ? 0 : write_parts(p->part[set], n, sink, &error);
    pthread_mutex_lock(&p->lock);
    if (rc != 0 && p->flush_rc == 0) {
      p->flush_rc = rc;
      p->flush_error = error;
    }
    p->flush_pending = 0;
    pthread_cond_broadcast(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/// Waits until the flusher has written what it was given (lock held);
/// returns its first error.
static int wait_flushed_locked(struct sl_text_rows_pool* p, struct sluice_error* error) {
  while (p->flush_pending) pthread_cond_wait(&p->cond, &p->lock);
  if (p->flush_rc != 0) *error = p->flush_error;
  return p->flush_rc;
}

static void* helper_main(void* arg) {
  struct sl_text_rows_pool* p = ((struct helper_arg*)arg)->pool;
  int i = ((struct helper_arg*)arg)->index;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (p->generation == seen && !p->stop) pthread_cond_wait(&p->cond, &p->lock);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->lock);
    spell_part(p, i, 0);
    pthread_mutex_lock(&p->lock);
    if (--p->busy == 0) pthread_cond_broadcast(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

int sl_text_rows_pool_start(const struct sluice_allocator* alloc, int max_parts,
                            sl_text_spell_rows spell, void* ctx,
                            struct sl_text_rows_pool** pool, int* parts,
                            struct sluice_error* error) {
  *pool = NULL;
  *parts = 1;
  struct sl_text_rows_pool* p = sl_calloc(alloc, 1, sizeof *p);
  if (p == NULL) return sl_error_set(error, ENOMEM, "out of memory starting a writer");
  p->alloc = alloc;
  p->spell = spell;
  p->ctx = ctx;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < MAX_PARTS; ++i) sl_text_init(&p->part[k][i].out, alloc);
  }
  int want = sl_cores(MAX_PARTS);
  if (want > max_parts) want = max_parts < 1 ? 1 : max_parts;
  if (want > 1 && pthread_mutex_init(&p->lock, NULL) == 0) {
    if (pthread_cond_init(&p->cond, NULL) == 0) {
      p->sync_ok = 1;
    } else {
      pthread_mutex_destroy(&p->lock);
    }
  }
  for (int k = 0; p->sync_ok && k + 1 < want; ++k) {
    p->args[k].pool = p;
    p->args[k].index = k + 1;
    if (pthread_create(&p->threads[k], NULL, helper_main, &p->args[k]) != 0) break;
    p->n_threads++;
  }
  p->parts = p->n_threads + 1;
  if (p->n_threads > 0 && pthread_create(&p->flusher, NULL, flusher_main, p) == 0) {
    p->has_flusher = 1;
  }
  *parts = p->parts;
  *pool = p;
  return 0;
}

/// Hands the current set's first `parts` parts on to the sink: to the
/// flusher (the next text goes to the other set), or written here.
static int hand_on(struct sl_text_rows_pool* p, int parts, struct sl_sink* sink,
                   struct sluice_error* error) {
  p->gathered = 0;
  if (!p->has_flusher) return write_parts(p->part[p->cur], parts, sink, error);
  // Once the flusher is done with the previous set; the next batch is
  // spelled into the other set meanwhile.
  pthread_mutex_lock(&p->lock);
  int rc = wait_flushed_locked(p, error);
  if (rc == 0) {
    p->flush_set = p->cur;
    p->flush_parts = parts;
    p->flush_sink = sink;
    p->flush_pending = 1;
    pthread_cond_broadcast(&p->cond);
    p->cur ^= 1;
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

/// Spells rows [from, to) of the batch on all parts and hands them on (a
/// small batch's text is gathered first, see GATHER_BYTES).
static int write_rows(struct sl_text_rows_pool* p, const struct sl_text_field* row,
                      const struct ArrowArray* batch, int64_t from, int64_t to,
                      struct sl_sink* sink, struct sluice_error* error) {
  int64_t n = to - from;
  int parts = n >= MIN_ROWS_TO_SHARE ? p->parts : 1;
  if (p->gathered && (parts > 1 || sink != p->gather_sink))
    SL_RETURN_NOT_OK(hand_on(p, 1, p->gather_sink, error));
  int64_t per = (n + parts - 1) / parts;
  for (int i = 0; i < p->parts; ++i) {
    int64_t begin = from + (int64_t)i * per, end = begin + per;
    p->part[p->cur][i].begin = i < parts && begin < to ? begin : to;
    p->part[p->cur][i].end = i < parts && end < to ? end : to;
  }
  p->row = row;
  p->batch = batch;
  if (parts > 1) {
    pthread_mutex_lock(&p->lock);
    p->busy = p->n_threads;
    p->generation++;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
  }
  spell_part(p, 0, p->gathered);
  if (parts > 1) {
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0) pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
  }
  struct rows_part* set = p->part[p->cur];
  for (int i = 0; i < parts; ++i) {
    if (set[i].rc != 0) {
      *error = set[i].error;
      return set[i].rc;
    }
  }
  if (parts == 1 && set[0].out.len < GATHER_BYTES) {
    p->gathered = set[0].out.len > 0;
    p->gather_sink = sink;
    return 0;
  }
  return hand_on(p, parts, sink, error);
}

int sl_text_rows_pool_write(struct sl_text_rows_pool* p, const struct sl_text_field* row,
                            const struct ArrowArray* batch, struct sl_sink* sink,
                            struct sluice_error* error) {
  // A big batch goes in slices, so that the text in memory (two sets of
  // buffers) stays a few MiB per part however large the batches are.
  const int64_t slice = ROWS_PER_PART_ROUND * p->parts;
  for (int64_t from = 0; from < batch->length; from += slice) {
    int64_t to = batch->length - from > slice ? from + slice : batch->length;
    // Ctrl-C stops a big batch between slices (polled here, on the thread
    // that called the writer: Python checks its signals only there).
    SL_RETURN_NOT_OK(sl_sink_cancelled(sink, error));
    SL_RETURN_NOT_OK(write_rows(p, row, batch, from, to, sink, error));
  }
  return 0;
}

int sl_text_rows_pool_finish(struct sl_text_rows_pool* p, int rc, struct sluice_error* error) {
  if (p == NULL) return rc;
  if (rc == 0 && p->gathered) rc = hand_on(p, 1, p->gather_sink, error);
  if (!p->has_flusher) return rc;
  struct sluice_error flush_error;
  pthread_mutex_lock(&p->lock);
  int flushed = wait_flushed_locked(p, &flush_error);
  pthread_mutex_unlock(&p->lock);
  if (rc != 0 || flushed == 0) return rc;
  *error = flush_error;
  return flushed;
}

void sl_text_rows_pool_stop(struct sl_text_rows_pool* p) {
  if (p == NULL) return;
  if (p->n_threads > 0) {
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < p->n_threads; ++k) pthread_join(p->threads[k], NULL);
    if (p->has_flusher) pthread_join(p->flusher, NULL);
  }
  if (p->sync_ok) {
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
  }
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < MAX_PARTS; ++i) sl_text_reset(&p->part[k][i].out);
  }
  sl_free(p->alloc, p, sizeof *p);
}
