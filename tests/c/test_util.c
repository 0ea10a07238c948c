#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int test_write_file(const char* path, const void* data, size_t size) {
  FILE* f = fopen(path, "wb");
  if (f == NULL) return -1;
  size_t w = fwrite(data, 1, size, f);
  int rc = fclose(f);
  return (w == size && rc == 0) ? 0 : -1;
}
