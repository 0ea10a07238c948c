// sluice_writer: the push side of sluice_write, for producers that hand over
// batches one at a time (a C loop, Python's Writer.write) instead of being
// pulled through an ArrowArrayStream. A thread of the writer's own runs
// sluice_write over a stream whose get_next waits for the next pushed batch,
// so every output sluice_write knows (formats, partitions, S3, cql://, the
// batch checks, the atomic commit) works the same. A push returns once the
// batch is consumed (the writing thread asked for the next one, or the
// write ended): every format writer is done reading an input batch before
// it asks for the next, so the producer may then refill the batch's memory
// (as pyarrow's writers let it: a loop refilling one numpy buffer).
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "sluice.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "io/sl_source.h"
#include "sluice_write_partitioned.h"

/// The hand-over between the producer (push) and the writing thread
/// (get_next): one batch at a time.
struct sluice_writer {
  const struct sluice_allocator* alloc;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  struct ArrowSchema schema;
  struct ArrowArray slot;  ///< a pushed batch not yet taken (release != NULL)
  int end;                 ///< no more batches: close
  int cancelled;           ///< abort: get_next fails with ECANCELED
  int done;                ///< the writing thread has returned
  int rc;                  ///< its result
  int64_t pushed;          ///< batches handed over so far
  int64_t taken;           ///< batches get_next took
  int64_t consumed;        ///< batches done with: get_next was called after them
  struct sluice_error error;
  pthread_t thread;
  int synced;  ///< 1: lock made, 2: and changed (what writer_free destroys)
  char* location;
  char shown[4096];  ///< the location in messages (sl_location_shown)
  const struct sluice_write_options* options;
};

static int queue_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct sluice_writer* w = stream->private_data;
  struct sluice_error error;
  return sl_schema_copy(&w->schema, w->alloc, out, &error);
}

static int queue_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct sluice_writer* w = stream->private_data;
  pthread_mutex_lock(&w->lock);
  // Asking for the next batch: the writer is done reading the ones before.
  w->consumed = w->taken;
  pthread_cond_broadcast(&w->changed);
  while (w->slot.release == NULL && !w->end && !w->cancelled) {
    pthread_cond_wait(&w->changed, &w->lock);
  }
  int rc = 0;
  if (w->cancelled) {
    rc = ECANCELED;
  } else if (w->slot.release != NULL) {
    sl_array_move(&w->slot, out);
    w->taken++;
  } else {
    out->release = NULL;  // the end
  }
  pthread_cond_broadcast(&w->changed);  // the slot is free
  pthread_mutex_unlock(&w->lock);
  return rc;
}

static const char* queue_last_error(struct ArrowArrayStream* stream) {
  struct sluice_writer* w = stream->private_data;
  return w->cancelled ? "the write was aborted" : NULL;
}

static void queue_release(struct ArrowArrayStream* stream) { stream->release = NULL; }

static void* write_thread(void* arg) {
  struct sluice_writer* w = arg;
  struct ArrowArrayStream stream = {.get_schema = queue_get_schema,
                                    .get_next = queue_get_next,
                                    .get_last_error = queue_last_error,
                                    .release = queue_release,
                                    .private_data = w};
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc = sluice_write(&stream, w->location, w->options, &error);
  pthread_mutex_lock(&w->lock);
  w->rc = rc;
  w->error = error;
  w->done = 1;
  if (w->slot.release != NULL) w->slot.release(&w->slot);  // pushed after a failure
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static void writer_free(struct sluice_writer* w) {
  if (w->slot.release != NULL) w->slot.release(&w->slot);
  if (w->schema.release != NULL) w->schema.release(&w->schema);
  if (w->synced > 1) pthread_cond_destroy(&w->changed);
  if (w->synced > 0) pthread_mutex_destroy(&w->lock);
  if (w->location != NULL) sl_free(w->alloc, w->location, strlen(w->location) + 1);
  sl_free(w->alloc, w, sizeof *w);
}

int sluice_writer_open(const char* location, const struct ArrowSchema* schema,
                       const struct sluice_write_options* options, struct sluice_writer** out,
                       struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (out != NULL) *out = NULL;
  if (location == NULL || schema == NULL || schema->release == NULL || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_writer_open: NULL location, schema or out");
  }
  // Options no write can take fail here, not later on the writer's thread.
  if (options != NULL) SL_RETURN_NOT_OK(sl_write_options_check(location, options, error));
  const struct sluice_allocator* alloc = options != NULL ? options->allocator : NULL;
  struct sluice_writer* w = sl_calloc(alloc, 1, sizeof *w);
  if (w == NULL) return sl_error_set(error, ENOMEM, "sluice_writer_open: out of memory");
  w->alloc = alloc;
  w->options = options;
  sl_location_shown(location, w->shown, sizeof w->shown);
  int rc = (w->location = sl_strdup(alloc, location)) == NULL
               ? sl_error_set(error, ENOMEM, "%s: out of memory", w->shown)
               : 0;
  if (rc == 0 && pthread_mutex_init(&w->lock, NULL) == 0) w->synced = 1;
  if (w->synced == 1 && pthread_cond_init(&w->changed, NULL) == 0) w->synced = 2;
  if (rc == 0 && w->synced < 2) {
    rc = sl_error_set(error, EAGAIN, "%s: cannot create a mutex or condition variable",
                      w->shown);
  }
  if (rc == 0) rc = sl_schema_copy(schema, alloc, &w->schema, error);
  if (rc == 0 && pthread_create(&w->thread, NULL, write_thread, w) != 0) {
    rc = sl_error_set(error, EAGAIN, "%s: cannot start the writing thread", w->shown);
  }
  if (rc != 0) {
    writer_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

int sluice_writer_write(struct sluice_writer* w, struct ArrowArray* batch,
                        struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (w == NULL || batch == NULL || batch->release == NULL) {
    if (batch != NULL && batch->release != NULL) batch->release(batch);
    return sl_error_set(error, EINVAL, "sluice_writer_write: NULL writer or released batch");
  }
  pthread_mutex_lock(&w->lock);
  while (w->slot.release != NULL && !w->done) pthread_cond_wait(&w->changed, &w->lock);
  int rc = 0;
  if (w->done || w->end || w->cancelled) {
    // The write failed (its error, also from close), or the writer is over.
    rc = w->done && w->rc != 0 ? w->rc : EINVAL;
    if (w->done && w->rc != 0) {
      if (error != NULL) *error = w->error;
    } else {
      sl_error_set(error, rc, "%s: the writer is closed", w->shown);
    }
    batch->release(batch);
  } else {
    sl_array_move(batch, &w->slot);
    int64_t seq = ++w->pushed;
    pthread_cond_broadcast(&w->changed);
    // Back once the writer is done reading it (a failed write reads no more).
    while (w->consumed < seq && !w->done) pthread_cond_wait(&w->changed, &w->lock);
    if (w->done && w->rc != 0) {  // it failed meanwhile: said now, not at the next write
      rc = w->rc;
      if (error != NULL) *error = w->error;
    }
  }
  pthread_mutex_unlock(&w->lock);
  return rc;
}

/// Ends the hand-over (cancelled or not), waits for the writing thread and
/// frees the writer; the thread's result.
static int finish(struct sluice_writer* w, int cancel, struct sluice_error* error) {
  pthread_mutex_lock(&w->lock);
  if (cancel) w->cancelled = 1;
  w->end = 1;
  pthread_cond_broadcast(&w->changed);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  int rc = w->rc;
  if (rc != 0 && error != NULL) *error = w->error;
  writer_free(w);
  return rc;
}

int sluice_writer_close(struct sluice_writer* w, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (w == NULL) return sl_error_set(error, EINVAL, "sluice_writer_close: NULL writer");
  return finish(w, 0, error);
}

void sluice_writer_abort(struct sluice_writer* w) {
  if (w != NULL) (void)finish(w, 1, NULL);
}
