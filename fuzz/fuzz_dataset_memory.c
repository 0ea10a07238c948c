// libFuzzer target: bytes -> sluice_dataset_open_memory, the public API's
// whole path as a user's buffer takes it: format detection over every
// reader by the first bytes, open, planning, and a scan on two threads,
// unordered, in a small memory budget, then the dataset's statistics. Every
// batch must be valid Arrow, its strings valid UTF-8 where the reader decodes
// them (Arrow IPC hands its bodies out as they are, unchecked, as Arrow C++
// does); an error is fine, a crash, a leak or a hang is not. The buffer must
// be given back exactly once.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_validate.h"
#include "fuzz_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void count_release(void* ctx) { ++*(int*)ctx; }

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = &alloc;
  options.threads = 2;
  options.ordered = 0;
  options.memory_budget = 8 << 20;
  struct sluice_error err;
  struct sluice_dataset* ds = NULL;
  int released = 0;
  if (sluice_dataset_open_memory(data, size, "fuzz", count_release, &released, &options, &ds,
                                 &err) == 0) {
    struct ArrowSchema schema;
    struct ArrowArrayStream stream;
    const char* format = sluice_dataset_format(ds);
    enum sl_validate_level level = strncmp(format, "arrow", 5) == 0 ? SL_VALIDATE_FULL
                                                                   : SL_VALIDATE_FULL_UTF8;
    if (sluice_dataset_schema(ds, &schema, &err) == 0) {
      if (sluice_dataset_scan(ds, &stream, &err) == 0) {
        struct ArrowArray b;
        while (stream.get_next(&stream, &b) == 0 && b.release != NULL) {
          if (sl_array_validate(&schema, &b, level, NULL, &err) != 0) {
            fprintf(stderr, "fuzz_dataset_memory: invalid batch: %s\n", err.message);
            abort();
          }
          b.release(&b);
        }
        stream.release(&stream);
      }
      schema.release(&schema);
    }
    struct sluice_column_stats* stats = NULL;
    int64_t n = 0;
    if (sluice_dataset_stats(ds, &stats, &n, &err) == 0) sluice_stats_free(stats, n);
    sluice_dataset_close(ds);
  }
  if (released != 1) {
    fprintf(stderr, "fuzz_dataset_memory: the buffer was given back %d times\n", released);
    abort();
  }
  return 0;
}
