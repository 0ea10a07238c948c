// Helpers shared by the C tests: a counting (and failing) allocator, corpus
// paths, temporary files.
#ifndef SLUICE_TEST_UTIL_H
#define SLUICE_TEST_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/// An allocator that counts live bytes and their peak, and can fail the
/// N-th allocation (fail_at = N, 1-based; 0 = never).
struct test_allocator {
  struct sluice_allocator base;
  atomic_llong live_bytes;
  atomic_llong peak_bytes;
  atomic_llong allocations;
  atomic_llong fail_at;
};

void test_allocator_init(struct test_allocator* t);

/// Path of a file under ../shared/corpora (the SLUICE_CORPORA env var or the
/// compile-time default), written into `out`.
const char* test_corpus_path(const char* relative, char* out, size_t cap);

/// A fresh path in a per-test temporary directory (not created).
const char* test_temp_path(const char* name, char* out, size_t cap);

/// Reads a whole file into a malloc'd buffer (NULL on error).
uint8_t* test_read_file(const char* path, size_t* size);
/// Writes bytes to a file; 0 on success.
int test_write_file(const char* path, const void* data, size_t size);

#endif
