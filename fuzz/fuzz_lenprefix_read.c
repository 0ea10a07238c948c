// libFuzzer target: bytes -> the length-prefixed message reader. The first
// byte picks the options, the rest is the stream:
//   bits 0-2  the prefix kind: varint, u8, u16le, u16be, u32le, u32be, u64le,
//             u64be
//   bits 3-5  the most bytes a forward read hands over at once: 1, 2, 3, 5,
//             7, 16, 255, or no limit (messages and prefixes then straddle
//             reads, as they do over a network)
//   bits 6-7  rows per batch: the default, 1, 2 or 7
// The stream is read twice, from a ranged source and from a forward-only one
// cut into those pieces; both reads must give the same messages, or both
// fail. Every batch is validated, and with a fixed-width prefix a
// complete read must account for every input byte.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_validate.h"
#include "format/lenprefix/lenprefix_reader.h"
#include "fuzz_alloc.h"
#include "fuzz_source.h"

/// What one read produced: enough to compare two reads of the same stream.
struct outcome {
  int failed;
  int64_t rows;
  int64_t payload;  ///< message bytes
  uint64_t hash;    ///< FNV-1a over every message's length and bytes, in order
};

static uint64_t fnv(uint64_t h, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

static void take_batch(const struct ArrowSchema* schema, const struct ArrowArray* batch,
                       struct outcome* o) {
  struct sluice_error err;
  if (sl_array_validate(schema, batch, SL_VALIDATE_FULL, NULL, &err) != 0) {
    fprintf(stderr, "fuzz_lenprefix_read: invalid batch: %s\n", err.message);
    abort();
  }
  const struct ArrowArray* col = batch->children[0];
  const int32_t* offsets = (const int32_t*)col->buffers[1] + col->offset;
  const uint8_t* bytes = col->buffers[2];
  for (int64_t i = 0; i < col->length; ++i) {
    uint64_t len = (uint64_t)(offsets[i + 1] - offsets[i]);
    o->hash = fnv(o->hash, (const uint8_t*)&len, sizeof len);
    if (len > 0) o->hash = fnv(o->hash, bytes + offsets[i], (size_t)len);
    o->payload += (int64_t)len;
  }
  o->rows += col->length;
}

static struct outcome read_stream(struct fuzz_source* src, const char* options,
                                  int64_t batch_rows, const struct sluice_allocator* alloc) {
  struct outcome o = {0, 0, 0, UINT64_C(0xcbf29ce484222325)};
  const struct sl_format_reader* fmt = sl_lenprefix_reader();
  struct sl_reader_args args = {.source = &src->base, .alloc = alloc, .batch_size = batch_rows,
                                .format_options = options};
  struct sluice_error err;
  void* reader;
  if (fmt->open(&args, &reader, &err) != 0) {
    o.failed = 1;
    return o;
  }
  struct ArrowSchema schema;
  if (fmt->schema(reader, &schema, &err) != 0) abort();  // fixed: one binary column
  struct sl_split* splits;
  int64_t n;
  if (fmt->plan_splits(reader, &splits, &n, &err) != 0) {
    o.failed = 1;
  } else {
    for (int64_t i = 0; i < n && !o.failed; ++i) {
      void* st;
      int projected;
      if (fmt->split_open(reader, &splits[i], NULL, 0, &st, &projected, &err) != 0) {
        o.failed = 1;
        break;
      }
      struct ArrowArray b;
      int rc;
      while ((rc = fmt->split_next(st, &b, &err)) == 0 && b.release != NULL) {
        take_batch(&schema, &b, &o);
        b.release(&b);
      }
      if (rc != 0) o.failed = 1;
      fmt->split_close(st);
    }
    sl_free(alloc, splits, (size_t)n * sizeof *splits);
  }
  schema.release(&schema);
  fmt->close(reader);
  return o;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* const kinds[] = {"varint", "u8",    "u16le", "u16be",
                                      "u32le",  "u32be", "u64le", "u64be"};
  static const int widths[] = {0, 1, 2, 2, 4, 4, 8, 8};
  static const int64_t chunks[] = {1, 2, 3, 5, 7, 16, 255, 0};
  static const int64_t batch_rows[] = {0, 1, 2, 7};
  const unsigned mode = data[0];
  char options[40];
  snprintf(options, sizeof options, "length_prefix=%s", kinds[mode & 7]);
  struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  char name[] = "fuzz.lenprefix";
  struct fuzz_source src;

  fuzz_source_init(&src, data + 1, size - 1, 0, 0, name);
  struct outcome ranged = read_stream(&src, options, batch_rows[mode >> 6], &alloc);
  fuzz_source_init(&src, data + 1, size - 1, 1, chunks[(mode >> 3) & 7], name);
  struct outcome forward = read_stream(&src, options, batch_rows[mode >> 6], &alloc);

  // The same stream must read the same however it arrives, or fail in both
  // reads (a truncated last message, a message too large). Where batches end
  // before a failure may differ, so only complete reads are compared.
  if (ranged.failed != forward.failed ||
      (!ranged.failed && (ranged.rows != forward.rows || ranged.payload != forward.payload ||
                          ranged.hash != forward.hash))) {
    fprintf(stderr,
            "fuzz_lenprefix_read: ranged read (failed %d, %lld rows, %lld bytes) and forward "
            "read (failed %d, %lld rows, %lld bytes) differ\n",
            ranged.failed, (long long)ranged.rows, (long long)ranged.payload, forward.failed,
            (long long)forward.rows, (long long)forward.payload);
    abort();
  }
  int width = widths[mode & 7];
  if (!ranged.failed && width > 0 && ranged.rows * width + ranged.payload != (int64_t)size - 1) {
    fprintf(stderr, "fuzz_lenprefix_read: %lld messages of %lld bytes do not cover %zu bytes\n",
            (long long)ranged.rows, (long long)ranged.payload, size - 1);
    abort();
  }
  return 0;
}
