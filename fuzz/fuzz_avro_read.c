// libFuzzer target: bytes -> Avro reader, as a ranged source (every split, all
// columns and then every other column, so skip paths run too), resolved
// against its own writer schema (the reader-schema program), and as a
// forward-only source. Every batch is validated. Allocations are capped so that a forged length
// reports ENOMEM instead of tripping the fuzzer's malloc limit.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_ref.h"
#include "core/sl_validate.h"
#include "format/avro/avro_reader.h"
#include "io/sl_source.h"
#include "fuzz_alloc.h"
#include "fuzz_source.h"


/// Writes the schema's "avro.schema" metadata value to `path`: 1 on success.
static int save_writer_schema(const struct ArrowSchema* schema, const char* path) {
  const char* m = schema->metadata;
  if (m == NULL) return 0;
  int32_t n, kl, vl;
  memcpy(&n, m, 4);
  m += 4;
  for (int32_t i = 0; i < n; ++i) {
    memcpy(&kl, m, 4);
    const char* key = m + 4;
    memcpy(&vl, key + kl, 4);
    const char* value = key + kl + 4;
    if (kl == 11 && memcmp(key, "avro.schema", 11) == 0) {
      FILE* f = fopen(path, "wb");
      if (f == NULL) return 0;
      size_t w = fwrite(value, 1, (size_t)vl, f);
      fclose(f);
      return w == (size_t)vl;
    }
    m = value + vl;
  }
  return 0;
}

static void run(struct sl_source* src, const struct sluice_allocator* alloc, int every_other,
                const char* options) {
  const struct sl_format_reader* fmt = sl_avro_reader();
  struct sl_reader_args args = {.source = src, .alloc = alloc, .batch_size = every_other ? 3 : 0,
                                .format_options = options};
  struct sluice_error err;
  void* reader;
  if (fmt->open(&args, &reader, &err) != 0) return;
  struct ArrowSchema schema = {0}, proj = {0};
  int64_t cols[64];
  int64_t n_cols = 0;
  if (fmt->schema(reader, &schema, &err) == 0) {
    if (every_other == 2) {
      // Resolution against the file's own schema: every field resolves to
      // itself, so the resolving program runs over the same (fuzzed) data.
      char opt[128];
      snprintf(opt, sizeof opt, "/dev/shm/fuzz_avro_reader_%d.avsc", (int)getpid());
      if (save_writer_schema(&schema, opt)) {
        schema.release(&schema);
        fmt->close(reader);
        char options[160];
        snprintf(options, sizeof options, "reader_schema=%s", opt);
        run(src, alloc, 0, options);
        unlink(opt);
        return;
      }
    }
    for (int64_t i = 1; i < schema.n_children && n_cols < 64; i += 2) cols[n_cols++] = i;
    if (sl_schema_project(&schema, cols, n_cols, alloc, &proj, &err) != 0) proj.release = NULL;
  }
  struct sl_split* splits;
  int64_t n;
  if (fmt->plan_splits(reader, &splits, &n, &err) == 0) {
    for (int64_t i = 0; i < n; ++i) {
      void* st;
      int projected;
      if (fmt->split_open(reader, &splits[i], every_other ? cols : NULL, n_cols, &st, &projected,
                          &err) != 0)
        continue;
      struct ArrowArray b;
      while (fmt->split_next(st, &b, &err) == 0 && b.release != NULL) {
        // Whatever the reader hands out must be valid Arrow, UTF-8 included.
        const struct ArrowSchema* s = every_other ? &proj : &schema;
        if (s->release != NULL && sl_array_validate(s, &b, SL_VALIDATE_FULL_UTF8, NULL, &err) != 0)
          abort();
        b.release(&b);
      }
      fmt->split_close(st);
    }
    sl_free(alloc, splits, (size_t)n * sizeof *splits);
  }
  if (schema.release) schema.release(&schema);
  if (proj.release) proj.release(&proj);
  fmt->close(reader);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  (void)sl_avro_reader()->probe(data, (int64_t)size);
  char name[] = "fuzz";
  struct fuzz_source src;
  for (int every_other = 0; every_other < 3; ++every_other) {
    fuzz_source_init(&src, data, size, 0, 0, name);
    run(&src.base, &alloc, every_other, NULL);
  }
  fuzz_source_init(&src, data, size, 1, 0, name);  // a pipe: forward reads only
  run(&src.base, &alloc, 0, NULL);
  return 0;
}
