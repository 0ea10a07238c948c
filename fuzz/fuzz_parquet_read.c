// libFuzzer target: bytes -> Parquet reader, as a ranged source (Parquet needs
// random access: the footer is at the end). Three passes: every column with the
// defaults (checksums verified); every other column, reversed, with small
// batches, checksums not verified and dictionaries kept; and the stored
// statistics of every column. Every batch is validated. Allocations are capped
// so that a forged length reports ENOMEM instead of tripping the fuzzer's
// malloc limit.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_ref.h"
#include "core/sl_validate.h"
#include "format/parquet/parquet_reader.h"
#include "io/sl_source.h"
#include "fuzz_alloc.h"
#include "fuzz_source.h"

#define FUZZ_MAX_COLUMNS 64

/// Reads every split; `projected_pass` asks for every other column in reverse
/// order (the reader must then emit exactly those, or say it did not).
static void read_all(const struct sl_format_reader* fmt, void* reader,
                     const struct ArrowSchema* schema, int projected_pass,
                     const struct sluice_allocator* alloc) {
  struct sluice_error err;
  int64_t cols[FUZZ_MAX_COLUMNS];
  int64_t n_cols = 0;
  struct ArrowSchema proj = {0};
  if (projected_pass) {
    for (int64_t i = schema->n_children - 1; i >= 0 && n_cols < FUZZ_MAX_COLUMNS; i -= 2)
      cols[n_cols++] = i;
    if (sl_schema_project(schema, cols, n_cols, alloc, &proj, &err) != 0) return;
  }
  struct sl_split* splits;
  int64_t n;
  if (fmt->plan_splits(reader, &splits, &n, &err) == 0) {
    for (int64_t i = 0; i < n; ++i) {
      void* st;
      int projected = 0;
      if (fmt->split_open(reader, &splits[i], projected_pass ? cols : NULL, n_cols, &st,
                          &projected, &err) != 0)
        continue;
      const struct ArrowSchema* s = projected_pass && projected ? &proj : schema;
      struct ArrowArray b;
      while (fmt->split_next(st, &b, &err) == 0 && b.release != NULL) {
        // Whatever the reader hands out must be valid Arrow, UTF-8 included.
        if (sl_array_validate(s, &b, SL_VALIDATE_FULL_UTF8, NULL, &err) != 0) {
          fprintf(stderr, "fuzz_parquet_read: invalid batch (pass %d): %s\n", projected_pass,
                  err.message);
          abort();
        }
        b.release(&b);
      }
      fmt->split_close(st);
    }
    sl_free(alloc, splits, (size_t)n * sizeof *splits);
  }
  if (proj.release) proj.release(&proj);
}

static void read_stats(const struct sl_format_reader* fmt, void* reader,
                       const struct ArrowSchema* schema) {
  if (fmt->stored_stats == NULL || schema->n_children > FUZZ_MAX_COLUMNS) return;
  struct sl_stored_column_stats stats[FUZZ_MAX_COLUMNS];
  struct ArrowArray min_max = {0};
  int64_t rows;
  struct sluice_error err;
  if (fmt->stored_stats(reader, NULL, 0, &rows, stats, &min_max, &err) == 0 &&
      min_max.release != NULL)
    min_max.release(&min_max);
}

static void run(const uint8_t* data, size_t size, const struct sluice_allocator* alloc,
                int pass) {
  char name[] = "fuzz";
  struct fuzz_source src;
  fuzz_source_init(&src, data, size, 0, 0, name);
  const struct sl_format_reader* fmt = sl_parquet_reader();
  struct sl_reader_args args = {
      .source = &src.base, .alloc = alloc, .batch_size = pass == 1 ? 3 : 0,
      .format_options = pass == 1 ? "verify_checksums=false,dictionary=true" : NULL};
  struct sluice_error err;
  void* reader;
  if (fmt->open(&args, &reader, &err) != 0) return;
  struct ArrowSchema schema = {0};
  if (fmt->schema(reader, &schema, &err) == 0) {
    if (pass == 2) read_stats(fmt, reader, &schema);
    else read_all(fmt, reader, &schema, pass == 1, alloc);
    schema.release(&schema);
  }
  fmt->close(reader);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  (void)sl_parquet_reader()->probe(data, (int64_t)size);
  for (int pass = 0; pass < 3; ++pass) run(data, size, &alloc, pass);
  return 0;
}
