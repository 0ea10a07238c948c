#include "core/sl_parallel.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core/sl_error.h"

#define MAX_THREADS 64

struct parallel {
  sl_parallel_job job;
  void* ctx;
  int64_t n;
  pthread_mutex_t mutex;
  int64_t next;
  int64_t failed_at;  ///< the lowest index that failed (n = none)
  int64_t succeeded;
  int rc;
  struct sluice_error error;  ///< that index's error
};

static void* worker(void* arg) {
  struct parallel* p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mutex);
    int64_t i = p->next++;
    int stop = i >= p->n || i > p->failed_at;
    pthread_mutex_unlock(&p->mutex);
    if (stop) return NULL;
    struct sluice_error error;
    memset(&error, 0, sizeof error);
    int rc = p->job(p->ctx, i, &error);
    pthread_mutex_lock(&p->mutex);
    if (rc == 0) {
      p->succeeded++;
    } else if (i < p->failed_at) {
      p->failed_at = i;
      p->rc = rc;
      p->error = error;
    }
    pthread_mutex_unlock(&p->mutex);
  }
}

int sl_parallel_for(int64_t n, int max_threads, sl_parallel_job job, void* ctx,
                    int64_t* succeeded, struct sluice_error* error) {
  if (succeeded != NULL) *succeeded = 0;
  if (n <= 0) return 0;
  struct parallel p;
  memset(&p, 0, sizeof p);
  p.job = job;
  p.ctx = ctx;
  p.n = n;
  p.failed_at = n;
  if (pthread_mutex_init(&p.mutex, NULL) != 0) {
    return sl_error_set(error, EAGAIN, "cannot create a mutex for %lld jobs", (long long)n);
  }
  pthread_t threads[MAX_THREADS];
  int64_t want = n < max_threads ? n : max_threads;
  if (want > MAX_THREADS) want = MAX_THREADS;
  int started = 0;
  for (int64_t t = 1; t < want; ++t) {
    if (pthread_create(&threads[started], NULL, worker, &p) != 0) break;  // fewer do
    ++started;
  }
  worker(&p);
  for (int t = 0; t < started; ++t) pthread_join(threads[t], NULL);
  pthread_mutex_destroy(&p.mutex);
  if (succeeded != NULL) *succeeded = p.succeeded;
  if (p.rc != 0 && error != NULL) *error = p.error;
  return p.rc;
}
