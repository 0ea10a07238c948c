// Arrow IPC reader tests on messages built by hand with the flatbuffer
// builder: the exact error for a buffer past the body, big-endian schemas,
// short buffers, negative and overflowing offsets, legacy framing, plain EOF.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "format/ipc/fb_build.h"
#include "format/ipc/ipc_fbs.h"
#include "format/ipc/ipc_reader.h"
#include "ipc_read_helpers.h"
#include "test_util.h"

/* ---- Hand-built messages ------------------------------------------------- */

/// Appends a framed message (continuation, length, flatbuffer padded to 8,
/// then `body_len` zero bytes of body) at out + *n.
static void frame_message(struct fb_builder* b, fb_ref msg, int64_t body_len, uint8_t* out,
                          size_t* n) {
  const uint8_t* data;
  size_t size;
  assert_int_equal(sl_fb_finish(b, msg, &data, &size, NULL), 0);
  uint32_t marker = 0xFFFFFFFFu;
  int32_t len = (int32_t)size;
  memcpy(out + *n, &marker, 4);
  memcpy(out + *n + 4, &len, 4);
  memcpy(out + *n + 8, data, size);
  *n += 8 + size;
  memset(out + *n, 0, (size_t)body_len);
  *n += (size_t)body_len;
  sl_fb_reset(b);
}

/// Schema { endianness, fields: [a: int32 nullable] } as a stream message.
static void put_schema(struct fb_builder* b, int16_t endianness, uint8_t* out, size_t* n) {
  fb_ref name = sl_fb_string(b, "a", 1);
  sl_fb_table_start(b);
  sl_fb_add_i32(b, IPC_INT_BIT_WIDTH, 32);
  sl_fb_add_u8(b, IPC_INT_IS_SIGNED, 1);
  fb_ref int_type = sl_fb_table_end(b);
  sl_fb_table_start(b);
  sl_fb_add_ref(b, IPC_FIELD_NAME, name);
  sl_fb_add_u8(b, IPC_FIELD_NULLABLE, 1);
  sl_fb_add_u8(b, IPC_FIELD_TYPE_TYPE, IPC_TYPE_INT);
  sl_fb_add_ref(b, IPC_FIELD_TYPE, int_type);
  fb_ref field = sl_fb_table_end(b);
  size_t base = sl_fb_stack_depth(b);
  sl_fb_stack_push(b, field);
  fb_ref fields = sl_fb_vector_from_stack(b, base);
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_SCHEMA_ENDIANNESS, endianness);
  sl_fb_add_ref(b, IPC_SCHEMA_FIELDS, fields);
  fb_ref schema = sl_fb_table_end(b);
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_MESSAGE_VERSION, IPC_METADATA_V5);
  sl_fb_add_u8(b, IPC_MESSAGE_HEADER_TYPE, IPC_MESSAGE_SCHEMA);
  sl_fb_add_ref(b, IPC_MESSAGE_HEADER, schema);
  fb_ref msg = sl_fb_table_end(b);
  frame_message(b, msg, 0, out, n);
}

/// RecordBatch of `rows` rows for the schema above: validity {0, 0} and
/// values {data_off, data_len}, in a body of body_len bytes.
static void put_batch(struct fb_builder* b, int64_t rows, int64_t nulls, int64_t data_off,
                      int64_t data_len, int64_t body_len, uint8_t* out, size_t* n) {
  fb_ref nodes, buffers;
  uint8_t* p = sl_fb_vector_reserve(b, 1, 16, 8, &nodes);
  assert_non_null(p);
  sl_fb_store_le64(p, rows);
  sl_fb_store_le64(p + 8, nulls);
  p = sl_fb_vector_reserve(b, 2, 16, 8, &buffers);
  assert_non_null(p);
  sl_fb_store_le64(p, 0);
  sl_fb_store_le64(p + 8, 0);
  sl_fb_store_le64(p + 16, data_off);
  sl_fb_store_le64(p + 24, data_len);
  sl_fb_table_start(b);
  sl_fb_add_i64(b, IPC_RECORD_BATCH_LENGTH, rows);
  sl_fb_add_ref(b, IPC_RECORD_BATCH_NODES, nodes);
  sl_fb_add_ref(b, IPC_RECORD_BATCH_BUFFERS, buffers);
  fb_ref rb = sl_fb_table_end(b);
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_MESSAGE_VERSION, IPC_METADATA_V5);
  sl_fb_add_u8(b, IPC_MESSAGE_HEADER_TYPE, IPC_MESSAGE_RECORD_BATCH);
  sl_fb_add_ref(b, IPC_MESSAGE_HEADER, rb);
  sl_fb_add_i64(b, IPC_MESSAGE_BODY_LENGTH, body_len);
  fb_ref msg = sl_fb_table_end(b);
  frame_message(b, msg, body_len, out, n);
}

static void test_crafted_messages(void** state) {
  (void)state;
  static uint8_t buf[8192];
  struct fb_builder b;
  sl_fb_init(&b, NULL);
  struct read_result res;
  struct sluice_error err = {0};
  size_t n = 0;

  // A well-formed stream: schema, one batch of 3 int32, end marker.
  put_schema(&b, IPC_ENDIAN_LITTLE, buf, &n);
  put_batch(&b, 3, 0, 0, 12, 16, buf, &n);
  memcpy(buf + n, "\xFF\xFF\xFF\xFF\0\0\0\0", 8);
  n += 8;
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "ok.arrows", buf, n, 0, 0, NULL, &res, &err), 0);
  assert_int_equal(res.n_batches, 1);
  assert_int_equal(res.rows[0], 3);

  // Big-endian data: a clear ENOTSUP.
  n = 0;
  put_schema(&b, IPC_ENDIAN_BIG, buf, &n);
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "be.arrows", buf, n, 0, 0, NULL, &res, &err),
                   ENOTSUP);
  assert_non_null(strstr(err.message, "big-endian"));

  // A buffer past the body, with the numbers in the message.
  n = 0;
  put_schema(&b, IPC_ENDIAN_LITTLE, buf, &n);
  size_t batch_at = n;
  put_batch(&b, 3, 0, 8, 9000, 16, buf, &n);
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "past.arrows", buf, n, 0, 0, NULL, &res, &err),
                   EILSEQ);
  char want[128];
  snprintf(want, sizeof want, "past.arrows: offset %zu: record batch buffer 1 extends past message body "
           "(offset 8 + length 9000 > 16)", batch_at);
  if (strstr(err.message, want) == NULL) fail_msg("unexpected message: %s", err.message);

  // A buffer shorter than the rows need (validation with declared sizes).
  n = 0;
  put_schema(&b, IPC_ENDIAN_LITTLE, buf, &n);
  put_batch(&b, 100, 0, 0, 16, 16, buf, &n);
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "short.arrows", buf, n, 0, 0, NULL, &res, &err),
                   EILSEQ);
  assert_non_null(strstr(err.message, "short.arrows"));

  // Nulls without a validity buffer.
  n = 0;
  put_schema(&b, IPC_ENDIAN_LITTLE, buf, &n);
  put_batch(&b, 3, 1, 0, 12, 16, buf, &n);
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "nulls.arrows", buf, n, 0, 0, NULL, &res, &err),
                   EILSEQ);

  // Negative and overflowing offsets / lengths.
  static const int64_t bad[][2] = {{-8, 8}, {8, -1}, {INT64_MAX, 8}, {8, INT64_MAX}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    n = 0;
    put_schema(&b, IPC_ENDIAN_LITTLE, buf, &n);
    put_batch(&b, 1, 0, bad[i][0], bad[i][1], 16, buf, &n);
    assert_int_equal(read_bytes(sl_ipc_stream_reader(), "neg.arrows", buf, n, 0, 0, NULL, &res, &err),
                     EILSEQ);
  }

  // Legacy framing (no continuation marker) and plain EOF instead of the
  // end marker.
  n = 0;
  put_schema(&b, IPC_ENDIAN_LITTLE, buf, &n);
  put_batch(&b, 2, 0, 0, 8, 8, buf, &n);
  size_t m = 0;
  static uint8_t legacy[8192];
  size_t at = 0;
  while (at < n) {
    int32_t len;
    memcpy(&len, buf + at + 4, 4);
    memcpy(legacy + m, &len, 4);
    memcpy(legacy + m + 4, buf + at + 8, (size_t)len);
    m += 4 + (size_t)len;
    at += 8 + (size_t)len;
    if (at < n && at + 8 <= n && memcmp(buf + at, "\xFF\xFF\xFF\xFF", 4) != 0) {
      memcpy(legacy + m, buf + at, 8);  // the batch body
      m += 8;
      at += 8;
    }
  }
  if (read_bytes(sl_ipc_stream_reader(), "legacy.arrows", legacy, m, 0, 0, NULL, &res, &err) != 0)
    fail_msg("%s", err.message);
  assert_int_equal(res.n_batches, 1);
  assert_int_equal(res.rows[0], 2);
  sl_fb_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_crafted_messages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
