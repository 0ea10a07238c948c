// libFuzzer target: bytes -> Arrow IPC file reader and stream reader, every
// split decoded (which validates it), everything released. Allocations are
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


struct fuzz_source {
  struct sl_source base;
  struct sl_ref ref;  // static lifetime: the input outlives every array here
  const uint8_t* data;
  int64_t cursor;
};

static int fuzz_read_at(struct sl_source* source, int64_t offset, int64_t length,
                        struct sl_view* out, struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  (void)error;
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  if (offset < 0 || length < 0 || offset > source->size || length > source->size - offset)
    return EIO;
  out->data = f->data + offset;
  out->size = length;
  out->owner = sl_ref_retain(&f->ref);
  return 0;
}

static int fuzz_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                          struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  int64_t n = source->size - f->cursor;
  if (length < n) n = length;
  int rc = fuzz_read_at(source, f->cursor, n, out, error);
  if (rc == 0) f->cursor += n;
  return rc;
}

static void fuzz_close(struct sl_source* source) { (void)source; }
static void fuzz_ref_destroy(struct sl_ref* ref) { (void)ref; }

static const struct sl_source_ops k_fuzz_ops = {
    .read_at = fuzz_read_at, .read_next = fuzz_read_next, .close = fuzz_close};

static void run(const struct sl_format_reader* fmt, const uint8_t* data, size_t size,
                const struct sluice_allocator* alloc) {
  struct fuzz_source src = {.base = {.ops = &k_fuzz_ops, .name = "fuzz", .size = (int64_t)size},
                            .data = data};
  sl_ref_init(&src.ref, fuzz_ref_destroy);
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
  run(sl_ipc_file_reader(), data, size, &alloc);
  run(sl_ipc_stream_reader(), data, size, &alloc);
  return 0;
}
