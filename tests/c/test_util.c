#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_validate.h"
#include "format/sl_format.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"

static void* counting_allocate(void* ctx, size_t size, size_t alignment) {
  struct test_allocator* t = ctx;
  long long n = atomic_fetch_add(&t->allocations, 1) + 1;
  long long fail_at = atomic_load(&t->fail_at);
  if (fail_at > 0 && n == fail_at) return NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  void* p = aligned_alloc(alignment, rounded);
  if (p == NULL) return NULL;
  long long live = atomic_fetch_add(&t->live_bytes, (long long)size) + (long long)size;
  long long peak = atomic_load(&t->peak_bytes);
  while (live > peak && !atomic_compare_exchange_weak(&t->peak_bytes, &peak, live)) {
  }
  return p;
}

static void counting_deallocate(void* ctx, void* ptr, size_t size) {
  struct test_allocator* t = ctx;
  if (ptr == NULL) return;
  atomic_fetch_sub(&t->live_bytes, (long long)size);
  free(ptr);
}

void test_allocator_init(struct test_allocator* t) {
  t->base.allocate = counting_allocate;
  t->base.deallocate = counting_deallocate;
  t->base.ctx = t;
  atomic_init(&t->live_bytes, 0);
  atomic_init(&t->peak_bytes, 0);
  atomic_init(&t->allocations, 0);
  atomic_init(&t->fail_at, 0);
}

struct test_scan_peak test_scan_peak(const char* path, struct sluice_open_options options,
                                     int pause_ms) {
  struct test_allocator ta;
  test_allocator_init(&ta);
  options.allocator = &ta.base;
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  if (sluice_dataset_open(path, &options, &ds, &error) != 0) fail_msg("open: %s", error.message);
  struct ArrowArrayStream stream;
  if (sluice_dataset_scan(ds, &stream, &error) != 0) fail_msg("scan: %s", error.message);
  long long baseline = atomic_load(&ta.live_bytes);
  atomic_store(&ta.peak_bytes, baseline);
  struct test_scan_peak seen = {.in_order = 1};
  for (;;) {
    struct ArrowArray batch;
    if (stream.get_next(&stream, &batch) != 0) fail_msg("%s", stream.get_last_error(&stream));
    if (batch.release == NULL) break;
    const struct ArrowArray* a = batch.children[0];
    const int64_t* values = (const int64_t*)a->buffers[1] + a->offset;
    if (batch.length > 0 && values[0] != seen.rows) seen.in_order = 0;
    for (int64_t i = 0; i < batch.length; ++i) seen.sum += values[i];
    seen.rows += batch.length;
    struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000 * 1000};
    nanosleep(&pause, NULL);
    batch.release(&batch);
  }
  stream.release(&stream);
  sluice_dataset_close(ds);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  seen.peak_bytes = atomic_load(&ta.peak_bytes) - baseline;
  return seen;
}

long long test_alloc_sweep(test_alloc_attempt attempt, void* ctx, long long max_runs) {
  long long failures = 0;
  for (long long n = 1; n <= max_runs; ++n) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, n);
    struct sluice_error error = {0, {0}};
    int rc = attempt(ctx, &ta.base, &error);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
    if (rc == 0) return failures;
    if (rc != ENOMEM) fprintf(stderr, "fail_at %lld: rc %d: %s\n", n, rc, error.message);
    assert_int_equal(rc, ENOMEM);
    assert_int_equal(error.code, rc);  // the error struct filled, as the header promises
    assert_true(error.message[0] != '\0');
    failures++;
  }
  fail_msg("no run succeeded in %lld", max_runs);
  return failures;
}

const char* test_corpus_path(const char* relative, char* out, size_t cap) {
  const char* root = getenv("SLUICE_CORPORA");
#ifdef SLUICE_CORPORA
  if (root == NULL || root[0] == '\0') root = SLUICE_CORPORA;
#endif
  if (root == NULL) root = "../shared/corpora";
  snprintf(out, cap, "%s/%s", root, relative);
  return out;
}

const char* test_temp_path(const char* name, char* out, size_t cap) {
  const char* tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  snprintf(out, cap, "%s/sluice-test-%ld-%s", tmp, (long)getpid(), name);
  return out;
}

uint8_t* test_read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
  long n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
  uint8_t* data = malloc((size_t)n + 1);
  if (data == NULL) { fclose(f); return NULL; }
  if (fread(data, 1, (size_t)n, f) != (size_t)n) { free(data); fclose(f); return NULL; }
  fclose(f);
  *size = (size_t)n;
  return data;
}

void test_assert_same_files(const char* a, const char* b) {
  size_t na = 0, nb = 0;
  uint8_t* da = test_read_file(a, &na);
  uint8_t* db = test_read_file(b, &nb);
  assert_non_null(da);
  assert_non_null(db);
  assert_int_equal(na, nb);
  assert_memory_equal(da, db, na);
  free(da);
  free(db);
}

int test_write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t w = fwrite(data, 1, size, f);
  int rc = fclose(f);
  return (w == size && rc == 0) ? 0 : -1;
}

int test_dir_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
  closedir(d);
  return n;
}

void test_batches_release(struct test_batches* b) {
  if (b->schema.release) b->schema.release(&b->schema);
  for (int64_t i = 0; i < b->n; ++i)
    if (b->arrays[i].release) b->arrays[i].release(&b->arrays[i]);
  b->n = b->next = 0;
}

int test_batches_read(const struct sl_format_reader* fmt, const char* path, int64_t batch_size,
                      int validate, struct test_batches* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  struct sl_source* src = NULL;
  int rc = sl_source_open(path, NULL, &src, error);
  if (rc != 0) return rc;
  struct sl_reader_args args = {.source = src, .batch_size = batch_size};
  void* reader = NULL;
  struct sl_split* splits = NULL;
  int64_t n = 0;
  rc = fmt->open(&args, &reader, error);
  if (rc == 0) rc = fmt->schema(reader, &out->schema, error);
  if (rc == 0) rc = fmt->plan_splits(reader, &splits, &n, error);
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    void* st = NULL;
    int projected;
    rc = fmt->split_open(reader, &splits[i], NULL, 0, &st, &projected, error);
    while (rc == 0) {
      struct ArrowArray a;
      rc = fmt->split_next(st, &a, error);
      if (rc != 0 || a.release == NULL) break;
      if (validate) rc = sl_array_validate(&out->schema, &a, SL_VALIDATE_FULL, NULL, error);
      out->rows += a.length;
      if (out->n < TEST_MAX_BATCHES) sl_array_move(&a, &out->arrays[out->n++]);
      else a.release(&a);
    }
    if (st) fmt->split_close(st);
  }
  if (splits) sl_free(NULL, splits, (size_t)n * sizeof *splits);
  if (reader) fmt->close(reader);
  sl_source_close(src);
  if (rc != 0) test_batches_release(out);
  return rc;
}

static int batches_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct test_batches* b = s->private_data;
  return sl_schema_copy(&b->schema, NULL, out, &b->error);
}
static int batches_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct test_batches* b = s->private_data;
  if (b->next < b->n) sl_array_move(&b->arrays[b->next++], out);
  else out->release = NULL;
  return 0;
}
static const char* batches_error(struct ArrowArrayStream* s) {
  return ((struct test_batches*)s->private_data)->error.message;
}
static void batches_stream_release(struct ArrowArrayStream* s) { s->release = NULL; }

void test_batches_stream(struct test_batches* b, struct ArrowArrayStream* out) {
  *out = (struct ArrowArrayStream){batches_schema, batches_next, batches_error,
                                   batches_stream_release, b};
}

int test_batches_write(const struct sl_format_writer* writer, struct test_batches* b,
                       const char* path, const char* options,
                       const struct sluice_allocator* alloc, struct sluice_error* error) {
  struct sl_sink* sink = NULL;
  int rc = sl_sink_open(path, alloc, &sink, error);
  if (rc != 0) return rc;
  struct ArrowArrayStream stream;
  test_batches_stream(b, &stream);
  struct sl_write_args args = {.alloc = alloc, .format_options = options};
  rc = writer->write(&stream, sink, &args, error);
  if (rc != 0) {
    sl_sink_abort(sink);
    return rc;
  }
  return sl_sink_commit(sink, error);
}
