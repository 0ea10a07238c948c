/// @file memcpy_floor.c
/// The memory-bandwidth floor: how long copying N bytes from one buffer to
/// another takes on this machine, with T threads each copying a contiguous
/// 1/T share. Both buffers are written before timing so page faults are not
/// counted: this is the best case any loader that copies its input once could
/// hope for. Prints one JSON line: bytes, threads, per-repetition seconds,
/// best and median seconds, GB/s (10^9 bytes per second) at the median.
///
/// With --touch it measures the other half of loading into fresh memory: map
/// N fresh anonymous bytes and write them once (first-touch page faults), each
/// repetition on a new mapping; --hugepage asks for transparent huge pages
/// (madvise) first. On VMs the faults can cost more than the copy.
///
/// usage: memcpy_floor [--threads T] [--repeat K] [--touch [--hugepage]]
///                     BYTES|--size-of PATH
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS, MADV_HUGEPAGE beside strict C11
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define MAX_THREADS 256
#define MAX_REPEAT 64

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct copy_job {
  char* dst;
  const char* src;
  size_t n;
};

static void* copy_job_run(void* arg) {
  struct copy_job* job = arg;
  memcpy(job->dst, job->src, job->n);
  return NULL;
}

struct touch_job {
  char* p;
  size_t n;
};

static void* touch_job_run(void* arg) {
  struct touch_job* job = arg;
  memset(job->p, 0x5a, job->n);
  return NULL;
}

/// One repetition of --touch: a fresh mapping, written once by T threads.
static int touch_once(size_t bytes, int threads, int hugepage, double* seconds) {
  double t0 = now_seconds();
  char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return errno;
#ifdef MADV_HUGEPAGE
  if (hugepage) madvise(p, bytes, MADV_HUGEPAGE);
#else
  (void)hugepage;
#endif
  pthread_t tids[MAX_THREADS];
  int spawned[MAX_THREADS] = {0};
  struct touch_job jobs[MAX_THREADS];
  size_t share = (bytes / (size_t)threads + 4095) & ~(size_t)4095;
  for (int t = 0; t < threads; t++) {
    size_t begin = (size_t)t * share;
    if (begin >= bytes) break;
    jobs[t] = (struct touch_job){p + begin, bytes - begin < share ? bytes - begin : share};
    if (t == threads - 1 || pthread_create(&tids[t], NULL, touch_job_run, &jobs[t]) != 0) {
      touch_job_run(&jobs[t]);
    } else {
      spawned[t] = 1;
    }
  }
  for (int t = 0; t < threads; t++) {
    if (spawned[t]) pthread_join(tids[t], NULL);
  }
  *seconds = now_seconds() - t0;
  volatile char sink = p[bytes - 1];
  (void)sink;
  munmap(p, bytes);
  return 0;
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int threads = 1, repeat = 5, touch = 0, hugepage = 0;
  size_t bytes = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--touch") == 0) {
      touch = 1;
    } else if (strcmp(argv[i], "--hugepage") == 0) {
      hugepage = 1;
    } else if (strcmp(argv[i], "--size-of") == 0 && i + 1 < argc) {
      struct stat st;
      if (stat(argv[++i], &st) != 0) {
        fprintf(stderr, "memcpy_floor: %s: %s\n", argv[i], strerror(errno));
        return 1;
      }
      bytes = (size_t)st.st_size;
    } else {
      bytes = (size_t)strtoull(argv[i], NULL, 10);
    }
  }
  if (bytes == 0 || threads < 1 || threads > MAX_THREADS || repeat < 1 || repeat > MAX_REPEAT) {
    fprintf(stderr,
            "usage: memcpy_floor [--threads T] [--repeat K] [--touch [--hugepage]]\n"
            "                    BYTES|--size-of PATH\n");
    return 2;
  }

  if (touch) {
    double seconds[MAX_REPEAT];
    for (int r = 0; r < repeat; r++) {
      int rc = touch_once(bytes, threads, hugepage, &seconds[r]);
      if (rc != 0) {
        fprintf(stderr, "memcpy_floor: mmap %zu bytes: %s\n", bytes, strerror(rc));
        return 1;
      }
    }
    printf("{\"tool\": \"first-touch\", \"bytes\": %zu, \"threads\": %d, \"hugepage\": %d, "
           "\"seconds\": [",
           bytes, threads, hugepage);
    for (int r = 0; r < repeat; r++) printf("%s%.6f", r ? ", " : "", seconds[r]);
    qsort(seconds, (size_t)repeat, sizeof(double), compare_double);
    double median = seconds[repeat / 2];
    printf("], \"best_s\": %.6f, \"median_s\": %.6f, \"gbps\": %.3f}\n", seconds[0], median,
           (double)bytes / median / 1e9);
    return 0;
  }

  // Huge pages where the system allows them (madvise): the copy is the floor
  // being measured, and this keeps pre-faulting 2 x N bytes cheap.
  char* src = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char* dst = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (src == MAP_FAILED || dst == MAP_FAILED) {
    fprintf(stderr, "memcpy_floor: cannot map 2 x %zu bytes\n", bytes);
    return 1;
  }
#ifdef MADV_HUGEPAGE
  madvise(src, bytes, MADV_HUGEPAGE);
  madvise(dst, bytes, MADV_HUGEPAGE);
#endif
  memset(src, 0x5a, bytes);
  memset(dst, 0xa5, bytes);

  pthread_t tids[MAX_THREADS];
  struct copy_job jobs[MAX_THREADS];
  double seconds[MAX_REPEAT];
  size_t share = (bytes / (size_t)threads + 63) & ~(size_t)63;
  for (int r = 0; r < repeat; r++) {
    double t0 = now_seconds();
    int spawned[MAX_THREADS] = {0};
    for (int t = 0; t < threads; t++) {
      size_t begin = (size_t)t * share;
      if (begin >= bytes) break;
      size_t n = bytes - begin < share ? bytes - begin : share;
      jobs[t] = (struct copy_job){dst + begin, src + begin, n};
      if (t == threads - 1 || pthread_create(&tids[t], NULL, copy_job_run, &jobs[t]) != 0) {
        copy_job_run(&jobs[t]);  // the last share (or a failed spawn) runs here
      } else {
        spawned[t] = 1;
      }
    }
    for (int t = 0; t < threads; t++) {
      if (spawned[t]) pthread_join(tids[t], NULL);
    }
    seconds[r] = now_seconds() - t0;
  }
  // Keep the copy observable so it cannot be optimised away.
  unsigned check = (unsigned char)dst[bytes / 2] + (unsigned char)dst[bytes - 1];

  printf("{\"tool\": \"memcpy\", \"bytes\": %zu, \"threads\": %d, \"seconds\": [", bytes, threads);
  for (int r = 0; r < repeat; r++) printf("%s%.6f", r ? ", " : "", seconds[r]);
  qsort(seconds, (size_t)repeat, sizeof(double), compare_double);
  double median = seconds[repeat / 2];
  printf("], \"best_s\": %.6f, \"median_s\": %.6f, \"gbps\": %.3f, \"check\": %u}\n", seconds[0],
         median, (double)bytes / median / 1e9, check);
  munmap(src, bytes);
  munmap(dst, bytes);
  return 0;
}
