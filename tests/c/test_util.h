// Helpers shared by the C tests: a counting (and failing) allocator and the
// allocation-failure sweep over it, corpus paths, temporary files, batches
// read from a file and written back through a sink.
#ifndef SLUICE_TEST_UTIL_H
#define SLUICE_TEST_UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct sl_format_reader;
struct sl_format_writer;

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

/// One run of the code under test with `alloc`; 0 on success, else an errno.
typedef int (*test_alloc_attempt)(void* ctx, const struct sluice_allocator* alloc,
                                  struct sluice_error* error);

/// Runs `attempt` with a fresh allocator failing its 1st, 2nd, ... allocation
/// until a run succeeds (at most `max_runs` runs). Every failed run must be a
/// clean ENOMEM: a message, and no live bytes left. Returns the number of
/// failed runs; fails the test when no run succeeded.
long long test_alloc_sweep(test_alloc_attempt attempt, void* ctx, long long max_runs);

/// Path of a file under ../shared/corpora (the SLUICE_CORPORA env var or the
/// compile-time default), written into `out`.
const char* test_corpus_path(const char* relative, char* out, size_t cap);

/// A fresh path in a per-test temporary directory (not created).
const char* test_temp_path(const char* name, char* out, size_t cap);

/// Reads a whole file into a malloc'd buffer (NULL on error).
uint8_t* test_read_file(const char* path, size_t* size);
/// Fails the test unless both files exist and hold the same bytes.
void test_assert_same_files(const char* a, const char* b);
/// Writes bytes to a file; 0 on success.
int test_write_file(const char* path, const void* data, size_t size);

/// Entries of `dir` other than "." and ".." (-1 if it cannot be read).
int test_dir_entries(const char* dir);

/// What a scan with a slow consumer saw: the allocator's peak live bytes
/// above what the open left allocated, and the rows, the sum and the order
/// of the first column (int64).
struct test_scan_peak {
  long long peak_bytes;
  int64_t rows;
  int64_t sum;
  int in_order;  // every batch's first value equals the rows before it
};

/// Scans `path` with `options` (its allocator replaced by a counting one),
/// pausing `pause_ms` per batch so that workers run ahead as far as the
/// budget lets them. Fails the test on an error or on bytes left allocated.
struct test_scan_peak test_scan_peak(const char* path, struct sluice_open_options options,
                                     int pause_ms);

#define TEST_MAX_BATCHES 64

/// The batches of one file (the first TEST_MAX_BATCHES; `rows` counts all).
struct test_batches {
  struct ArrowSchema schema;
  struct ArrowArray arrays[TEST_MAX_BATCHES];
  int64_t n, next;
  int64_t rows;
  struct sluice_error error;
};

/// Reads every batch of `path` with reader `fmt` and the default allocator,
/// `batch_size` rows at a time, fully validating each when `validate`.
int test_batches_read(const struct sl_format_reader* fmt, const char* path, int64_t batch_size,
                      int validate, struct test_batches* out, struct sluice_error* error);
void test_batches_release(struct test_batches* b);
/// A stream handing out the batches once (moved out; `b` must outlive it).
void test_batches_stream(struct test_batches* b, struct ArrowArrayStream* out);

/// Writes the batches to `path` with `writer` through a sink, both with
/// `alloc`; commits on success, aborts on error (as the CLI does).
int test_batches_write(const struct sl_format_writer* writer, struct test_batches* b,
                       const char* path, const char* options,
                       const struct sluice_allocator* alloc, struct sluice_error* error);

#endif
