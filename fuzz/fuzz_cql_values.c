// libFuzzer target: bytes -> a CQL type ([option], as a node's RESULT
// metadata gives it) followed by [bytes] values of that type, decoded the way
// the cql:// reader decodes a page's cells. A malformed type or value is an
// error, never a crash; whatever was decoded must be a valid Arrow array of
// the type's Arrow schema.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_array.h"
#include "core/sl_builder.h"
#include "core/sl_validate.h"
#include "format/cql/cql_type.h"
#include "fuzz_alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const struct sluice_allocator alloc = {fuzz_allocate, fuzz_deallocate, NULL};
  struct sluice_error err;
  struct sl_cql_cursor c = {data, data + size};
  struct cql_type type;
  if (sl_cql_type_read(&c, "v", 1, &alloc, &type) != 0) return 0;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct sl_builder rows;
  memset(&rows, 0, sizeof rows);
  int ok = sl_schema_init(&schema, &alloc, "+s", "", 0, 1, &err) == 0 &&
           sl_cql_type_arrow_schema(&type, &alloc, schema.children[0], &err) == 0 &&
           sl_builder_init_from_schema(&rows, &schema, &alloc, &err) == 0;
  int64_t n = 0;
  for (; ok && c.p < c.end && n < 4096; ++n) {
    const uint8_t* v;
    int32_t len;
    const char* why = NULL;
    if (sl_cql_read_bytes(&c, &v, &len) != 0) break;
    int rc = sl_cql_value_append(&type, sl_builder_child(&rows, 0), v, len, &why);
    if (rc == EILSEQ && why == NULL) {
      fprintf(stderr, "fuzz_cql_values: EILSEQ without a reason\n");
      abort();
    }
    // A failed value may leave the column part-way through a row: drop the
    // batch, as the reader does.
    if (rc != 0) ok = 0;
  }
  if (ok && sl_builder_struct_finish_rows(&rows, n) == 0) {
    struct ArrowArray batch;
    if (sl_builder_finish(&rows, &batch, &err) == 0) {
      if (sl_array_validate(&schema, &batch, SL_VALIDATE_FULL, NULL, &err) != 0) {
        fprintf(stderr, "fuzz_cql_values: invalid batch: %s\n", err.message);
        abort();
      }
      batch.release(&batch);
    }
  }
  sl_builder_release(&rows);
  if (schema.release != NULL) schema.release(&schema);
  sl_cql_type_free(&type, &alloc);
  return 0;
}
