// libFuzzer target: bytes -> the CSV reader, every split decoded, everything
// released. The first byte picks the options, the rest is the file:
//   bits 0-1  delimiter: sniffed, ',', ';', tab
//   bits 2-3  header=auto, header=true, header=false + stray_quotes=text
//             (quotes open quoting only at a field's start), escape=backslash
//   bits 4-5  split_size: default, 7, 64, 1 (split boundaries everywhere),
//             the last three with infer_bytes=64,
//             but at least size/64: a split's quote parity is found by
//             scanning from the start, so thousands of splits opened last to
//             first cost O(n^2) and starve the fuzzer
//   bit  6    splits decoded last to first, two-row batches, columns
//             projected in reverse order
//   bit  7    a forward-only source (no ranged reads: the pipe path)
// The file may be gzip or zstd (inflated as it is read). When a value past
// the type-inference sample did not fit, the reader's refine hook widens the
// types and every split is decoded once more.
// Allocations are capped so that a huge claimed size reports ENOMEM instead
// of tripping the fuzzer's malloc limit.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_ref.h"
#include "format/csv/csv_reader.h"
#include "io/sl_source.h"
#include "fuzz_alloc.h"
#include "fuzz_source.h"


static void decode_split(const struct sl_format_reader* fmt, void* reader,
                         const struct sl_split* split, const int64_t* columns, int64_t n_columns) {
  struct sluice_error err;
  void* st;
  int projected;
  if (fmt->split_open(reader, split, columns, n_columns, &st, &projected, &err) != 0) return;
  struct ArrowArray b;
  memset(&b, 0, sizeof b);
  while (fmt->split_next(st, &b, &err) == 0 && b.release != NULL) {
    b.release(&b);
    memset(&b, 0, sizeof b);
  }
  fmt->split_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const unsigned mode = data[0];
  static const char* const delimiters[] = {"", "delimiter=comma,", "delimiter=semicolon,",
                                           "delimiter=tab,"};
  static const char* const headers[] = {"header=auto", "header=true",
                                        "header=false,stray_quotes=text", "escape=backslash"};
  static const int64_t split_sizes[] = {0, 7, 64, 1};
  char options[160];
  size_t len = 0;
  options[0] = '\0';
  int64_t split_size = split_sizes[(mode >> 4) & 3];
  if (split_size > 0 && split_size < (int64_t)size / 64) split_size = (int64_t)size / 64;
  char split[64] = "";
  // Small splits come with a small type-inference sample, so that values
  // past it can fail their inferred types (the refine path below).
  if (split_size > 0) {
    snprintf(split, sizeof split, ",split_size=%lld,infer_bytes=64", (long long)split_size);
  }
  const char* parts[] = {delimiters[mode & 3], headers[(mode >> 2) & 3], split};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
    size_t n = strlen(parts[i]);
    memcpy(options + len, parts[i], n + 1);
    len += n;
  }
  const int reverse = (mode >> 6) & 1;
  const int forward_only = (mode >> 7) & 1;

  struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  char name[] = "fuzz.csv";
  struct fuzz_source src;
  fuzz_source_init(&src, data + 1, size - 1, forward_only, 0, name);
  src.base.alloc = &alloc;

  const struct sl_format_reader* fmt = sl_csv_reader();
  (void)fmt->probe(src.data, src.length);
  struct sl_reader_args args = {.source = &src.base,
                                .alloc = &alloc,
                                .batch_size = reverse ? 2 : 0,
                                .format_options = options};
  struct sluice_error err;
  void* reader;
  if (fmt->open(&args, &reader, &err) != 0) return 0;
  int64_t n_columns = 0;
  struct ArrowSchema schema;
  if (fmt->schema(reader, &schema, &err) == 0) {
    n_columns = schema.n_children;
    schema.release(&schema);
  }
  int64_t* columns = NULL;
  if (reverse && n_columns > 0 && n_columns <= 4096) {
    columns = malloc((size_t)n_columns * sizeof *columns);
    if (columns != NULL) {
      for (int64_t i = 0; i < n_columns; ++i) columns[i] = n_columns - 1 - i;
    }
  }
  // A second pass when the first found values its inferred types do not
  // fit (the widening that sluice_dataset_refine applies); a forward-only
  // source cannot be read twice and must say so.
  for (int pass = 0; pass < 2; ++pass) {
    struct sl_split* plan;
    int64_t n;
    if (fmt->plan_splits(reader, &plan, &n, &err) == 0) {
      for (int64_t i = 0; i < n; ++i) {
        decode_split(fmt, reader, &plan[reverse ? n - 1 - i : i], columns,
                     columns != NULL ? n_columns : 0);
      }
      sl_free(&alloc, plan, (size_t)n * sizeof *plan);
    }
    int changed = 0;
    if (pass > 0 || fmt->refine == NULL || fmt->refine(reader, &changed, &err) != 0 || !changed) {
      break;
    }
  }
  free(columns);
  fmt->close(reader);
  return 0;
}
