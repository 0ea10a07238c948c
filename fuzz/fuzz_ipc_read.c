// libFuzzer target: bytes -> Arrow IPC file reader and stream reader (the
// stream reader over a ranged and a forward-only source), every split decoded (which validates it), everything released. Allocations are
// capped so that a forged length reports ENOMEM instead of tripping the
// fuzzer's malloc limit.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_ref.h"
#include "format/ipc/ipc_reader.h"
#include "io/sl_source.h"
#include "fuzz_alloc.h"
#include "fuzz_source.h"


static void run(const struct sl_format_reader* fmt, const uint8_t* data, size_t size,
                int forward, const struct sluice_allocator* alloc) {
  char name[] = "fuzz";
  struct fuzz_source src;
  fuzz_source_init(&src, data, size, forward, forward ? 13 : 0, name);
  struct sl_reader_args args = {.source = &src.base, .alloc = alloc};
  struct sluice_error err;
  void* reader;
  (void)fmt->probe(data, (int64_t)size);
  if (fmt->open(&args, &reader, &err) != 0) return;
  struct ArrowSchema schema;
  if (fmt->schema(reader, &schema, &err) == 0) schema.release(&schema);
  struct sl_split* splits;
  int64_t n;
  if (fmt->plan_splits(reader, &splits, &n, &err) == 0) {
    for (int64_t i = 0; i < n; ++i) {
      void* st;
      int projected;
      if (fmt->split_open(reader, &splits[i], NULL, 0, &st, &projected, &err) != 0) continue;
      struct ArrowArray b;
      while (fmt->split_next(st, &b, &err) == 0 && b.release != NULL) b.release(&b);
      fmt->split_close(st);
    }
    sl_free(alloc, splits, (size_t)n * sizeof *splits);
  }
  fmt->close(reader);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  run(sl_ipc_file_reader(), data, size, 0, &alloc);
  run(sl_ipc_stream_reader(), data, size, 0, &alloc);
  run(sl_ipc_stream_reader(), data, size, 1, &alloc);  // a pipe: forward reads only
  return 0;
}
