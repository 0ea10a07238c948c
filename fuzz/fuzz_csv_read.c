// libFuzzer target: bytes -> the CSV reader, every split decoded, everything
// released. The first byte picks the options, the rest is the file:
//   bits 0-1  delimiter: sniffed, ',', ';', tab
//   bits 2-3  header=auto, header=true, header=false, escape=backslash
//   bits 4-5  split_size: default, 7, 64, 1 (split boundaries everywhere),
//             but at least size/64: a split's quote parity is found by
//             scanning from the start, so thousands of splits opened last to
//             first cost O(n^2) and starve the fuzzer
//   bit  6    splits decoded last to first, two-row batches, columns
//             projected in reverse order
//   bit  7    a forward-only source (no ranged reads: the pipe path)
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


struct fuzz_source {
  struct sl_source base;
  struct sl_ref ref;  // static lifetime: the input outlives every array here
  const uint8_t* data;
  int64_t length;
  int64_t cursor;
};

static int fuzz_view(struct fuzz_source* f, int64_t offset, int64_t length, struct sl_view* out) {
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  if (offset < 0 || length < 0 || offset > f->length || length > f->length - offset) return EIO;
  out->data = f->data + offset;
  out->size = length;
  out->owner = sl_ref_retain(&f->ref);
  return 0;
}

static int fuzz_read_at(struct sl_source* source, int64_t offset, int64_t length,
                        struct sl_view* out, struct sluice_error* error) {
  (void)error;
  return fuzz_view((struct fuzz_source*)source, offset, length, out);
}

static int fuzz_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                          struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  (void)error;
  int64_t n = f->length - f->cursor;
  if (length < n) n = length;
  int rc = fuzz_view(f, f->cursor, n, out);
  if (rc == 0) f->cursor += n;
  return rc;
}

static int fuzz_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                     struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  (void)error;
  int64_t n = f->length - f->cursor;
  if (length < n) n = length;
  return fuzz_view(f, f->cursor, n, out);
}

static void fuzz_close(struct sl_source* source) { (void)source; }
static void fuzz_ref_destroy(struct sl_ref* ref) { (void)ref; }

static const struct sl_source_ops k_ranged_ops = {
    .read_at = fuzz_read_at, .read_next = fuzz_read_next, .close = fuzz_close};
static const struct sl_source_ops k_forward_ops = {
    .read_next = fuzz_read_next, .close = fuzz_close, .peek = fuzz_peek};

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
  static const char* const headers[] = {"header=auto", "header=true", "header=false",
                                        "escape=backslash"};
  static const int64_t split_sizes[] = {0, 7, 64, 1};
  char options[160];
  size_t len = 0;
  options[0] = '\0';
  int64_t split_size = split_sizes[(mode >> 4) & 3];
  if (split_size > 0 && split_size < (int64_t)size / 64) split_size = (int64_t)size / 64;
  char split[40] = "";
  if (split_size > 0) snprintf(split, sizeof split, ",split_size=%lld", (long long)split_size);
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
  memset(&src, 0, sizeof src);
  src.base.ops = forward_only ? &k_forward_ops : &k_ranged_ops;
  src.base.name = name;
  src.base.size = forward_only ? -1 : (int64_t)(size - 1);
  src.base.alloc = &alloc;
  src.data = data + 1;
  src.length = (int64_t)(size - 1);
  sl_ref_init(&src.ref, fuzz_ref_destroy);

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
  struct sl_split* plan;
  int64_t n;
  if (fmt->plan_splits(reader, &plan, &n, &err) == 0) {
    for (int64_t i = 0; i < n; ++i) {
      decode_split(fmt, reader, &plan[reverse ? n - 1 - i : i], columns,
                   columns != NULL ? n_columns : 0);
    }
    sl_free(&alloc, plan, (size_t)n * sizeof *plan);
  }
  free(columns);
  fmt->close(reader);
  return 0;
}
