// libFuzzer target: bytes -> a row filter (the first line) over a table (the
// rest: CSV, or Parquet / Arrow IPC / Avro by their magic bytes), read
// through sluice_dataset_open_memory with options.filter. Parsing the filter
// against the inferred schema, pruning splits by statistics, evaluating it on
// every batch and cutting the batch (copies and windows) must give valid
// Arrow whose every row passes; a bad filter or input is an error, never a
// crash, leak or hang.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_row_filter.h"
#include "core/sl_validate.h"
#include "fuzz_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void no_release(void* ctx) { (void)ctx; }

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* nl = memchr(data, '\n', size < 512 ? size : 512);
  if (nl == NULL) return 0;
  size_t n = (size_t)(nl - data);
  char filter[513];
  memcpy(filter, data, n);
  filter[n] = '\0';
  if (strlen(filter) != n) return 0;  // a NUL inside: not a C string
  const struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = &alloc;
  options.threads = 2;
  options.memory_budget = 8 << 20;
  options.batch_size = 7;  // many batches, runs and windows
  options.filter = filter;
  struct sluice_error err;
  struct sluice_dataset* ds = NULL;
  if (sluice_dataset_open_memory(nl + 1, size - n - 1, "fuzz", no_release, NULL, &options, &ds,
                                 &err) != 0) {
    return 0;
  }
  struct ArrowSchema schema;
  struct ArrowArrayStream stream;
  if (sluice_dataset_schema(ds, &schema, &err) == 0) {
    // The same filter, evaluated again on what came out: every row passes.
    // (Parsed as the dataset parses it: a value a CSV column's sampled type
    // does not take waits, passing no row, for the column to widen.)
    uint8_t* inferred = calloc((size_t)schema.n_children + 1, 1);
    if (inferred == NULL) abort();
    for (int64_t i = 0; i < schema.n_children; ++i) {
      const char* name = schema.children[i]->name;
      inferred[i] = name != NULL && sluice_dataset_type_inferred(ds, name) != 0;
    }
    struct sl_row_filter* check = NULL;
    int parsed = sl_row_filter_parse_inferred(filter, &schema, inferred, &alloc, &check, &err);
    free(inferred);
    if (parsed != 0) {
      fprintf(stderr, "fuzz_row_filter: the dataset took '%s' but it does not parse: %s\n",
              filter, err.message);
      abort();
    }
    int64_t at[64];
    int ok = check == NULL || check->n_conditions <= 64;
    for (int k = 0; ok && check != NULL && k < check->n_conditions; ++k) {
      at[k] = check->conditions[k].column;
    }
    if (ok && sluice_dataset_scan(ds, &stream, &err) == 0) {
      struct ArrowArray b;
      while (stream.get_next(&stream, &b) == 0 && b.release != NULL) {
        if (sl_array_validate(&schema, &b, SL_VALIDATE_FULL, NULL, &err) != 0) {
          fprintf(stderr, "fuzz_row_filter: invalid batch: %s\n", err.message);
          abort();
        }
        size_t bytes = (size_t)((b.length + 7) / 8);
        uint8_t* sel = check != NULL && bytes > 0 ? malloc(bytes) : NULL;
        int64_t selected = 0;
        if (sel != NULL &&
            sl_row_filter_select(check, &b, at, sel, &selected, &err) == 0 &&
            selected != b.length) {
          fprintf(stderr, "fuzz_row_filter: %lld of %lld rows pass '%s' after filtering\n",
                  (long long)selected, (long long)b.length, filter);
          abort();
        }
        free(sel);
        b.release(&b);
      }
      stream.release(&stream);
    }
    sl_row_filter_free(check);
    schema.release(&schema);
  }
  sluice_dataset_close(ds);
  return 0;
}
