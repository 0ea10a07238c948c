#include "core/sl_parallel.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

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
  pthread_cond_t exited_cond;  ///< (with a poll: signalled as threads end)
  int exited;                  ///< started threads that ended
};

/// Runs job i and records how it went.
static void run_job(struct parallel* p, int64_t i) {
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

static void* worker(void* arg) {
  struct parallel* p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mutex);
    int64_t i = p->next++;
    int stop = i >= p->n || i > p->failed_at;
    pthread_mutex_unlock(&p->mutex);
    if (stop) return NULL;
    run_job(p, i);
  }
}

static void* worker_thread(void* arg) {
  struct parallel* p = arg;
  worker(p);
  pthread_mutex_lock(&p->mutex);
  p->exited++;
  pthread_cond_signal(&p->exited_cond);
  pthread_mutex_unlock(&p->mutex);
  return NULL;
}

int sl_parallel_for(int64_t n, int max_threads, sl_parallel_job job, void* ctx,
                    int64_t* succeeded, struct sluice_error* error) {
  return sl_parallel_for_polled(n, max_threads, job, ctx, NULL, NULL, succeeded, error);
}

int sl_parallel_for_polled(int64_t n, int max_threads, sl_parallel_job job, void* ctx,
                           int (*poll)(void* user), void* poll_user, int64_t* succeeded,
                           struct sluice_error* error) {
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
  if (pthread_cond_init(&p.exited_cond, NULL) != 0) {
    pthread_mutex_destroy(&p.mutex);
    return sl_error_set(error, EAGAIN, "cannot create a condition for %lld jobs", (long long)n);
  }
  pthread_t threads[MAX_THREADS];
  int64_t want = n < max_threads ? n : max_threads;
  if (want > MAX_THREADS) want = MAX_THREADS;
  // Job 0 is the calling thread's, whoever starts first: the first object
  // of an open was opened on it, and its source asks the cancel hook only
  // there (sl_source_asks_here). Read on another thread, a FIFO that never
  // sends kept that thread in read() however soon the hook said yes.
  p.next = 1;
  int started = 0;
  for (int64_t t = 1; t < want; ++t) {
    if (pthread_create(&threads[started], NULL, worker_thread, &p) != 0) break;  // fewer do
    ++started;
  }
  run_job(&p, 0);
  worker(&p);
  if (poll != NULL) {
    pthread_mutex_lock(&p.mutex);
    while (p.exited < started) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 50 * 1000000L;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&p.exited_cond, &p.mutex, &until);
      if (p.exited == started) break;
      pthread_mutex_unlock(&p.mutex);
      (void)poll(poll_user);
      pthread_mutex_lock(&p.mutex);
    }
    pthread_mutex_unlock(&p.mutex);
  }
  for (int t = 0; t < started; ++t) pthread_join(threads[t], NULL);
  pthread_cond_destroy(&p.exited_cond);
  pthread_mutex_destroy(&p.mutex);
  if (succeeded != NULL) *succeeded = p.succeeded;
  if (p.rc != 0 && error != NULL) *error = p.error;
  return p.rc;
}
