// A scan driven from its own thread, so that Python can wait for the next
// batch in short slices and notice Ctrl-C even while a split takes long to
// decode (sluice_scanner_next has no timeout). The thread calls
// sluice_scanner_next only when the consumer asks for a batch, so nothing is
// decoded ahead beyond what the scan engine itself does. Cancelling never
// waits for a batch being made: the thread then closes the scanner (stopping
// the workers and freeing what is in flight) as soon as its current call
// returns. sp_pump_close, when the thread is idle, closes the scanner itself,
// so that close() returns with the sources (mappings, descriptors) let go.
// No Python objects here: the thread runs without the GIL.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "_sluice.h"

struct sp_pump {
  pthread_mutex_t mutex;
  pthread_cond_t cv;          // signalled on every state change
  struct sp_scan_source source;
  int refs;                   // consumer + thread
  int wanted;                 // the consumer asked for a batch
  int ready;                  // a result is waiting in the fields below
  int cancelled;
  int finished;               // the thread delivered the end or an error
  int busy;                   // the thread is inside source.next
  int source_closed;          // source.close was called (or is being called)
  int rc;
  struct ArrowArray array;
  struct sluice_batch_tag tag;
  struct sluice_error error;
};

static void pump_unref_locked(struct sp_pump* pump, int* free_it) {
  *free_it = --pump->refs == 0;
}

static void pump_free(struct sp_pump* pump) {
  if (pump->ready && pump->array.release != NULL) pump->array.release(&pump->array);
  pthread_cond_destroy(&pump->cv);
  pthread_mutex_destroy(&pump->mutex);
  PyMem_RawFree(pump);
}

static void* pump_main(void* arg) {
  struct sp_pump* pump = arg;
  int closed = 0;
  pthread_mutex_lock(&pump->mutex);
  for (;;) {
    while (!pump->wanted && !pump->cancelled) pthread_cond_wait(&pump->cv, &pump->mutex);
    if (pump->cancelled) break;
    pump->busy = 1;
    pthread_mutex_unlock(&pump->mutex);
    struct ArrowArray array;
    struct sluice_batch_tag tag;
    struct sluice_error error;
    memset(&array, 0, sizeof array);
    memset(&tag, 0, sizeof tag);
    memset(&error, 0, sizeof error);
    int rc = pump->source.next(pump->source.handle, &array, &tag, &error);
    if (rc != 0 || array.release == NULL) {
      // Closed before the consumer hears of the end: it may then act on the
      // dataset as one no scan holds (sluice_dataset_refine after an error).
      pump->source.close(pump->source.handle);
      closed = 1;
    }
    pthread_mutex_lock(&pump->mutex);
    pump->busy = 0;
    if (closed) pump->source_closed = 1;
    if (pump->cancelled) {
      if (rc == 0 && array.release != NULL) array.release(&array);
      break;
    }
    pump->array = array;
    pump->tag = tag;
    pump->error = error;
    pump->rc = rc;
    pump->ready = 1;
    pump->wanted = 0;
    pthread_cond_broadcast(&pump->cv);
    if (rc != 0 || array.release == NULL) {
      pump->finished = 1;
      break;
    }
  }
  int close_it = !pump->source_closed;  // (else closed by a canceller)
  pump->source_closed = 1;
  pthread_mutex_unlock(&pump->mutex);
  if (close_it) pump->source.close(pump->source.handle);
  pthread_mutex_lock(&pump->mutex);
  int free_it;
  pump_unref_locked(pump, &free_it);
  pthread_mutex_unlock(&pump->mutex);
  if (free_it) pump_free(pump);
  return NULL;
}

int sp_pump_start(const struct sp_scan_source* source, struct sp_pump** out) {
  *out = NULL;
  struct sp_pump* pump = PyMem_RawCalloc(1, sizeof *pump);
  if (pump == NULL) return ENOMEM;
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc == 0) {
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0) rc = pthread_cond_init(&pump->cv, &attr);
    pthread_condattr_destroy(&attr);
  }
  if (rc != 0) {
    PyMem_RawFree(pump);
    return rc;
  }
  rc = pthread_mutex_init(&pump->mutex, NULL);
  if (rc != 0) {
    pthread_cond_destroy(&pump->cv);
    PyMem_RawFree(pump);
    return rc;
  }
  pump->source = *source;
  pump->refs = 2;
  pthread_attr_t thread_attr;
  pthread_t thread;
  rc = pthread_attr_init(&thread_attr);
  if (rc == 0) {
    pthread_attr_setdetachstate(&thread_attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&thread, &thread_attr, pump_main, pump);
    pthread_attr_destroy(&thread_attr);
  }
  if (rc != 0) {
    pthread_mutex_destroy(&pump->mutex);
    pthread_cond_destroy(&pump->cv);
    PyMem_RawFree(pump);
    return rc;
  }
  *out = pump;
  return 0;
}

int sp_pump_next(struct sp_pump* pump, struct ArrowArray* out, struct sluice_batch_tag* tag,
                 struct sluice_error* error, int timeout_ms) {
  out->release = NULL;
  pthread_mutex_lock(&pump->mutex);
  // The call holds a reference: another Python thread may cancel the pump
  // while this one waits with the GIL released.
  pump->refs++;
  int rc = 0;
  if (!pump->ready && !pump->finished && !pump->cancelled) {
    if (!pump->wanted) {
      pump->wanted = 1;
      pthread_cond_broadcast(&pump->cv);
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1000000000L;
    }
    while (!pump->ready && !pump->cancelled) {
      if (pthread_cond_timedwait(&pump->cv, &pump->mutex, &deadline) == ETIMEDOUT) break;
    }
    if (!pump->ready && !pump->cancelled) rc = ETIMEDOUT;
  }
  if (pump->cancelled) {
    rc = ECANCELED;
  } else if (pump->ready) {
    rc = pump->rc;
    *out = pump->array;
    *tag = pump->tag;
    *error = pump->error;
    pump->array.release = NULL;
    pump->ready = 0;
  }
  // else: finished and already delivered (rc 0, out->release NULL: the end)
  int free_it;
  pump_unref_locked(pump, &free_it);
  pthread_mutex_unlock(&pump->mutex);
  if (free_it) pump_free(pump);
  return rc;
}

static void pump_cancel(struct sp_pump* pump, int close_idle) {
  if (pump == NULL) return;
  pthread_mutex_lock(&pump->mutex);
  pump->cancelled = 1;
  pthread_cond_broadcast(&pump->cv);
  // An idle thread has nothing to finish: close here, before returning.
  int close_it = close_idle && !pump->busy && !pump->source_closed;
  if (close_it) pump->source_closed = 1;
  int free_it;
  pump_unref_locked(pump, &free_it);
  pthread_mutex_unlock(&pump->mutex);
  if (close_it) pump->source.close(pump->source.handle);
  if (free_it) pump_free(pump);
}

void sp_pump_cancel(struct sp_pump* pump) { pump_cancel(pump, 0); }

void sp_pump_close(struct sp_pump* pump) { pump_cancel(pump, 1); }

/* ---- The pump as an ArrowArrayStream ---------------------------------------- */

// What a consumer of Scanner.__arrow_c_stream__ (pyarrow, polars, DuckDB)
// pulls from. It may call from any thread, with or without the GIL: nothing
// here touches a Python object.
struct pump_stream {
  struct sp_pump* pump;
  struct ArrowSchema schema;
  char message[1024];
};

static int pump_stream_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct pump_stream* s = stream->private_data;
  return sp_schema_copy(&s->schema, out) != 0 ? ENOMEM : 0;
}

static int pump_stream_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct pump_stream* s = stream->private_data;
  out->release = NULL;
  if (s->pump == NULL) return 0;  // ended (or failed) before: the end again
  struct sluice_batch_tag tag;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc;
  do {
    rc = sp_pump_next(s->pump, out, &tag, &error, 1000);
  } while (rc == ETIMEDOUT);
  if (rc != 0 || out->release == NULL) {
    if (rc != 0) {
      snprintf(s->message, sizeof s->message, "%s",
               error.message[0] != '\0' ? error.message : strerror(rc));
      if (error.code != 0) rc = error.code;
    }
    sp_pump_cancel(s->pump);
    s->pump = NULL;
  }
  return rc;
}

static const char* pump_stream_last_error(struct ArrowArrayStream* stream) {
  struct pump_stream* s = stream->private_data;
  return s->message[0] != '\0' ? s->message : NULL;
}

static void pump_stream_release(struct ArrowArrayStream* stream) {
  struct pump_stream* s = stream->private_data;
  sp_pump_cancel(s->pump);
  if (s->schema.release != NULL) s->schema.release(&s->schema);
  PyMem_RawFree(s);
  stream->release = NULL;
}

int sp_pump_stream(struct sp_pump* pump, const struct ArrowSchema* schema,
                   struct ArrowArrayStream* out) {
  struct pump_stream* s = PyMem_RawCalloc(1, sizeof *s);
  if (s == NULL) return ENOMEM;
  if (sp_schema_copy(schema, &s->schema) != 0) {
    PyMem_RawFree(s);
    return ENOMEM;
  }
  s->pump = pump;
  out->get_schema = pump_stream_schema;
  out->get_next = pump_stream_next;
  out->get_last_error = pump_stream_last_error;
  out->release = pump_stream_release;
  out->private_data = s;
  return 0;
}
