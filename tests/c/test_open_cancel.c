// sluice_open_options.cancelled: an open that waits on a FIFO that never
// sends, or on an http:// server that never answers, is stopped by the hook
// with ECANCELED, for one object and for several (a list, a glob, Hive
// partitions), leaving nothing allocated and no descriptor open; the hook is
// asked while a directory or glob is listed and between objects, and not
// after the open returns.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"

/// A cancel hook that says yes from its `after`-th call on (0 = never).
/// With `opener_only`, only calls on the opening thread count and decide,
/// and the others read what it decided, as the Python package's hook does
/// (only the main thread runs signal handlers).
struct hook {
  atomic_llong calls;
  long long after;
  int opener_only;
  pthread_t opener;
  atomic_int said_yes;
};

static int hook_cancelled(void* user) {
  struct hook* h = user;
  if (h->opener_only && !pthread_equal(pthread_self(), h->opener)) {
    return atomic_load(&h->said_yes);
  }
  long long n = atomic_fetch_add(&h->calls, 1) + 1;
  if (h->after > 0 && n >= h->after) atomic_store(&h->said_yes, 1);
  return atomic_load(&h->said_yes);
}

/// FIFOs that never send: their write ends are held open (so that opening
/// them for reading does not block) until `release` or a safety timeout
/// closes them, so that an open the hook failed to stop ends (at EOF) and
/// the test fails instead of hanging.
#define MAX_FIFOS 4
struct fifos {
  char paths[MAX_FIFOS][512];
  int fds[MAX_FIFOS];
  int n;
  pthread_t closer;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int released;
};

static void* close_later(void* arg) {
  struct fifos* f = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 20;
  pthread_mutex_lock(&f->lock);
  while (!f->released) {
    if (pthread_cond_timedwait(&f->cond, &f->lock, &until) == ETIMEDOUT) break;
  }
  for (int i = 0; i < f->n; ++i) {
    if (f->fds[i] >= 0) close(f->fds[i]);
    f->fds[i] = -1;
  }
  pthread_mutex_unlock(&f->lock);
  return NULL;
}

static void fifos_make(struct fifos* f, const char* const* paths, int n) {
  memset(f, 0, sizeof *f);
  assert_true(n <= MAX_FIFOS);
  f->n = n;
  for (int i = 0; i < n; ++i) {
    snprintf(f->paths[i], sizeof f->paths[i], "%s", paths[i]);
    unlink(paths[i]);
    assert_int_equal(mkfifo(paths[i], 0600), 0);
    f->fds[i] = open(paths[i], O_RDWR);  // (Linux: a FIFO's writer, without waiting for a reader)
    assert_true(f->fds[i] >= 0);
  }
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  assert_int_equal(pthread_create(&f->closer, NULL, close_later, f), 0);
}

static void fifos_release(struct fifos* f) {
  pthread_mutex_lock(&f->lock);
  f->released = 1;
  pthread_cond_signal(&f->cond);
  pthread_mutex_unlock(&f->lock);
  pthread_join(f->closer, NULL);
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->lock);
  for (int i = 0; i < f->n; ++i) unlink(f->paths[i]);
}

static void write_csv(const char* path) {
  static const char text[] = "a,b\n1,x\n2,y\n";
  assert_int_equal(test_write_file(path, text, sizeof text - 1), 0);
}

static int open_fds(void) { return test_dir_entries("/proc/self/fd"); }

/// Opens `locations` (one: as a location, a glob or a directory; several:
/// as a list) with the hook and a counting allocator, and checks that the
/// open is cancelled cleanly: ECANCELED, "interrupted" naming an object,
/// no bytes left allocated, no descriptor left open.
/// Returns the error, whose message the caller may check further.
static struct sluice_error expect_cancelled_as(const char* const* locations, size_t n,
                                               const char* format, struct hook* h) {
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = &ta.base;
  options.format = format;
  // A stalled server not stopped by the hook is given up on after this
  // (and it may be waited for again, by another request).
  options.timeout_s = 20;
  options.cancelled = hook_cancelled;
  options.cancelled_user = h;
  h->opener = pthread_self();
  int fds = open_fds();
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  int rc = n == 1 ? sluice_dataset_open(locations[0], &options, &ds, &error)
                  : sluice_dataset_open_many(locations, n, &options, &ds, &error);
  clock_gettime(CLOCK_MONOTONIC, &end);
  if (rc == 0) sluice_dataset_close(ds);
  assert_int_equal(rc, ECANCELED);
  assert_null(ds);
  assert_non_null(strstr(error.message, "interrupted"));
  assert_true(atomic_load(&h->calls) >= 1);
  // Stopped by the hook, not after the timeout (a bound, not a speed test).
  assert_true(end.tv_sec - start.tv_sec < (time_t)(options.timeout_s / 2));
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  assert_int_equal(open_fds(), fds);
  return error;
}

static void expect_cancelled(const char* const* locations, size_t n, struct hook* h) {
  expect_cancelled_as(locations, n, "csv", h);
}

static void test_one_fifo(void** state) {
  (void)state;
  char fifo[512];
  test_temp_path("one.csv", fifo, sizeof fifo);
  const char* paths[] = {fifo};
  struct fifos f;
  fifos_make(&f, paths, 1);
  struct hook h = {.after = 5};
  expect_cancelled(paths, 1, &h);
  fifos_release(&f);
}

static void test_list_with_a_fifo(void** state) {
  // A file, then a FIFO that never sends: the FIFO's reads ask the hook
  // (before, only a single object's open did, and this one waited for ever).
  (void)state;
  char file[512], fifo[512];
  test_temp_path("first.csv", file, sizeof file);
  test_temp_path("second.csv", fifo, sizeof fifo);
  write_csv(file);
  const char* fifo_paths[] = {fifo};
  struct fifos f;
  fifos_make(&f, fifo_paths, 1);
  const char* list[] = {file, fifo};
  struct hook h = {.after = 5};
  expect_cancelled(list, 2, &h);
  // A hook only the opening thread answers (Python's): whichever thread
  // opens the FIFO, the opener asks it, between objects or while it waits
  // for the others.
  struct hook opener = {.after = 5, .opener_only = 1};
  expect_cancelled(list, 2, &opener);
  const char* fifos_only[] = {fifo, fifo};
  struct hook both = {.after = 5, .opener_only = 1};
  expect_cancelled(fifos_only, 2, &both);
  fifos_release(&f);
  unlink(file);
}

static void test_glob_and_hive_asked_between_objects(void** state) {
  // Regular files never make the open wait, but the hook is asked before
  // each object: one that says yes at once stops a glob, a directory and
  // Hive partitions (before, it was never asked for several objects).
  (void)state;
  char dir[256], sub1[300], sub2[300], a[400], b[400], glob[400];
  test_temp_path("many", dir, sizeof dir);
  mkdir(dir, 0700);
  snprintf(sub1, sizeof sub1, "%s/k=1", dir);
  snprintf(sub2, sizeof sub2, "%s/k=2", dir);
  mkdir(sub1, 0700);
  mkdir(sub2, 0700);
  snprintf(a, sizeof a, "%s/a.csv", sub1);
  snprintf(b, sizeof b, "%s/b.csv", sub2);
  write_csv(a);
  write_csv(b);
  snprintf(glob, sizeof glob, "%s/k=*/*.csv", dir);
  const char* as_glob[] = {glob};
  const char* as_dir[] = {dir};
  const char* as_list[] = {a, b};
  for (int k = 0; k < 3; ++k) {
    const char* const* where = k == 0 ? as_glob : k == 1 ? as_dir : as_list;
    struct hook h = {.after = 1};
    expect_cancelled(where, k == 2 ? 2 : 1, &h);
  }
  // One object below key=value directories (read with its key: the files
  // reader too): asked.
  unlink(b);
  rmdir(sub2);
  struct hook h = {.after = 1};
  expect_cancelled(as_dir, 1, &h);
  mkdir(sub2, 0700);
  write_csv(b);

  // A hook that never says yes: the open succeeds, and the scan does not
  // ask it (it is the open's only).
  struct hook never = {.after = 0};
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.format = "csv";
  options.cancelled = hook_cancelled;
  options.cancelled_user = &never;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(dir, &options, &ds, &error), 0);
  long long asked = atomic_load(&never.calls);
  assert_true(asked >= 2);  // (before each of the two objects)
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray batch;
    assert_int_equal(stream.get_next(&stream, &batch), 0);
    if (batch.release == NULL) break;
    rows += batch.length;
    batch.release(&batch);
  }
  stream.release(&stream);
  sluice_dataset_close(ds);
  assert_int_equal(rows, 4);
  assert_int_equal(atomic_load(&never.calls), asked);
  unlink(a);
  unlink(b);
  rmdir(sub1);
  rmdir(sub2);
  rmdir(dir);
}

static void test_listing_asks_the_hook(void** state) {
  // A directory or glob is listed before any object is opened: a hook that
  // says yes at once stops the listing (before, it was not asked until the
  // first object, so a `**` over a big tree kept Ctrl-C waiting for the
  // whole walk, and a glob that matched nothing ended with ENOENT).
  (void)state;
  char dir[256], sub[300], deep[350], a[400], glob[400], none[400];
  test_temp_path("walk", dir, sizeof dir);
  mkdir(dir, 0700);
  snprintf(sub, sizeof sub, "%s/x", dir);
  snprintf(deep, sizeof deep, "%s/y", sub);
  mkdir(sub, 0700);
  mkdir(deep, 0700);
  snprintf(a, sizeof a, "%s/a.csv", deep);
  write_csv(a);
  snprintf(glob, sizeof glob, "%s/**/*.csv", dir);
  snprintf(none, sizeof none, "%s/**/*.none", dir);
  const char* where[] = {dir, glob, none};
  for (int k = 0; k < 3; ++k) {
    struct hook h = {.after = 1};
    struct sluice_error error = expect_cancelled_as(&where[k], 1, "csv", &h);
    assert_non_null(strstr(error.message, "interrupted while listing"));
    assert_non_null(strstr(error.message, where[k]));
    assert_int_equal(atomic_load(&h.calls), 1);  // (and never again)
  }
  // A hook that says no: the listing asks it (once at least) and goes on.
  struct hook never = {.after = 0};
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.format = "csv";
  options.cancelled = hook_cancelled;
  options.cancelled_user = &never;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  assert_int_equal(sluice_dataset_open(none, &options, &ds, &error), ENOENT);
  assert_true(atomic_load(&never.calls) >= 1);
  unlink(a);
  rmdir(deep);
  rmdir(sub);
  rmdir(dir);
}

static void test_server_that_never_answers(void** state) {
  // A loopback server that takes the connection (the kernel's backlog) and
  // never sends the response's headers: the hook stops the open, for a
  // stream format too (opened by a download on its own thread, which the
  // opening thread waited for without asking the hook: only the timeout
  // ended it), whose requests are asked by libcurl's progress calls.
  (void)state;
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(sock >= 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(sock, (struct sockaddr*)&addr, sizeof addr), 0);
  assert_int_equal(listen(sock, 16), 0);
  socklen_t len = sizeof addr;
  assert_int_equal(getsockname(sock, (struct sockaddr*)&addr, &len), 0);
  static const char* const formats[] = {"arrows", "parquet", "csv"};
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/t.%s", ntohs(addr.sin_port), formats[i]);
    const char* where[] = {url};
    struct hook h = {.after = 3, .opener_only = 1};
    struct sluice_error error = expect_cancelled_as(where, 1, formats[i], &h);
    assert_non_null(strstr(error.message, url));
  }
  close(sock);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_fifo),
      cmocka_unit_test(test_list_with_a_fifo),
      cmocka_unit_test(test_glob_and_hive_asked_between_objects),
      cmocka_unit_test(test_listing_asks_the_hook),
      cmocka_unit_test(test_server_that_never_answers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
