// Tests of sl_cast_join and sl_array_cast (core/sl_array_cast.h): the joined
// type of every pair of leaf formats a dataset's objects may disagree on,
// casts of sliced columns with nulls compared value by value with their
// input, string bytes kept as views, the 2 GiB limit of 32-bit offsets, and
// every allocation failing in turn.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_array_cast.h"
#include "core/sl_builder.h"
#include "core/sl_error.h"
#include "core/sl_validate.h"
#include "test_util.h"

static void expect_join(const char* a, const char* b, const char* want) {
  const char* got = sl_cast_join(a, b);
  if (want == NULL) {
    if (got != NULL) fail_msg("join('%s', '%s') = '%s', expected none", a, b, got);
    return;
  }
  if (got == NULL || strcmp(got, want) != 0) {
    fail_msg("join('%s', '%s') = '%s', expected '%s'", a, b, got != NULL ? got : "(none)", want);
  }
}

static void test_join(void** state) {
  (void)state;
  expect_join("u", "U", "u");  // the first object's string type
  expect_join("U", "u", "U");
  expect_join("z", "Z", "z");
  expect_join("i", "l", "l");
  expect_join("l", "c", "l");
  expect_join("C", "I", "I");
  expect_join("S", "i", "i");  // a signed type wider than the unsigned one
  expect_join("I", "i", "l");  // else twice the unsigned width
  expect_join("C", "c", "s");
  expect_join("L", "l", NULL);  // no signed type holds uint64
  expect_join("f", "g", "g");
  expect_join("i", "f", "g");   // a double holds every int32
  expect_join("l", "g", NULL);  // but not every int64
  expect_join("u", "z", NULL);
  expect_join("u", "l", NULL);
  expect_join("tsu:", "tsn:", NULL);
  expect_join("l", "l", "l");
}

/// A column of `format` with values 0..n-1 (as text for strings), every
/// third null, sliced to start at `offset`.
static void make_column(const char* format, int64_t n, int64_t offset,
                        const struct sluice_allocator* alloc, struct ArrowSchema* schema,
                        struct ArrowArray* out) {
  struct sluice_error err = {0};
  assert_int_equal(sl_schema_init(schema, alloc, format, "x", ARROW_FLAG_NULLABLE, 0, &err), 0);
  struct sl_builder b;
  assert_int_equal(sl_builder_init_from_schema(&b, schema, alloc, &err), 0);
  for (int64_t i = 0; i < n; ++i) {
    int rc;
    if (i % 3 == 2) {
      rc = sl_builder_append_null(&b);
    } else if (format[0] == 'u' || format[0] == 'U' || format[0] == 'z' || format[0] == 'Z') {
      char text[32];
      int len = snprintf(text, sizeof text, "v%lld", (long long)i);
      rc = sl_builder_append_binary(&b, text, len);
    } else if (format[0] == 'f') {
      rc = sl_builder_append_float(&b, (float)i + 0.5f);
    } else if (format[0] == 'i') {
      rc = sl_builder_append_int32(&b, (int32_t)(i * (i % 2 ? -1 : 1)));
    } else {
      rc = sl_builder_append_uint16(&b, (uint16_t)(65535 - i));
    }
    assert_int_equal(rc, 0);
  }
  assert_int_equal(sl_builder_finish(&b, out, &err), 0);
  sl_builder_release(&b);
  out->offset = offset;
  out->length = n - offset;
  out->null_count = -1;
}

static int is_valid(const struct ArrowArray* a, int64_t i) {
  const uint8_t* v = a->buffers[0];
  int64_t j = a->offset + i;
  return v == NULL || ((v[j >> 3] >> (j & 7)) & 1);
}

static void test_casts_keep_values(void** state) {
  (void)state;
  static const char* const pairs[][2] = {{"u", "U"}, {"U", "u"}, {"z", "Z"}, {"Z", "z"},
                                         {"i", "l"}, {"i", "g"}, {"f", "g"}, {"S", "i"},
                                         {"S", "l"}, {"S", "g"}};
  struct test_allocator t;
  test_allocator_init(&t);
  for (size_t k = 0; k < sizeof pairs / sizeof *pairs; ++k) {
    const char *from = pairs[k][0], *to = pairs[k][1];
    struct ArrowSchema schema, to_schema;
    struct ArrowArray in, out;
    make_column(from, 200, 7, &t.base, &schema, &in);
    schema.release(&schema);
    const void* bytes = in.n_buffers > 2 ? in.buffers[2] : NULL;
    struct ArrowArray keep;  // the same values, to compare with after the cast
    make_column(from, 200, 7, &t.base, &schema, &keep);
    schema.release(&schema);
    struct sluice_error err = {0};
    assert_int_equal(sl_array_cast(from, &in, to, &t.base, &out, &err), 0);
    assert_null(in.release);  // consumed
    struct sluice_error verr = {0};
    assert_int_equal(sl_schema_init(&to_schema, &t.base, to, "x", ARROW_FLAG_NULLABLE, 0, &err), 0);
    assert_int_equal(sl_array_validate(&to_schema, &out, SL_VALIDATE_FULL, NULL, &verr), 0);
    assert_int_equal(out.length, 193);
    if (bytes != NULL) assert_ptr_equal(out.buffers[2], bytes);  // a view, not a copy
    for (int64_t i = 0; i < out.length; ++i) {
      int64_t j = keep.offset + i, o = out.offset + i;
      assert_int_equal(is_valid(&out, i), is_valid(&keep, i));
      if (!is_valid(&keep, i)) continue;
      if (from[0] == 'u' || from[0] == 'z' || from[0] == 'U' || from[0] == 'Z') {
        int64_t a0, a1, b0, b1;
        if (from[0] == 'u' || from[0] == 'z') {
          a0 = ((const int32_t*)keep.buffers[1])[j], a1 = ((const int32_t*)keep.buffers[1])[j + 1];
        } else {
          a0 = ((const int64_t*)keep.buffers[1])[j], a1 = ((const int64_t*)keep.buffers[1])[j + 1];
        }
        if (to[0] == 'u' || to[0] == 'z') {
          b0 = ((const int32_t*)out.buffers[1])[o], b1 = ((const int32_t*)out.buffers[1])[o + 1];
        } else {
          b0 = ((const int64_t*)out.buffers[1])[o], b1 = ((const int64_t*)out.buffers[1])[o + 1];
        }
        assert_int_equal(a1 - a0, b1 - b0);
        assert_memory_equal((const char*)keep.buffers[2] + a0, (const char*)out.buffers[2] + b0,
                            (size_t)(a1 - a0));
        continue;
      }
      double want = from[0] == 'f'   ? ((const float*)keep.buffers[1])[j]
                    : from[0] == 'i' ? ((const int32_t*)keep.buffers[1])[j]
                                     : ((const uint16_t*)keep.buffers[1])[j];
      double got = to[0] == 'g'   ? ((const double*)out.buffers[1])[o]
                   : to[0] == 'l' ? (double)((const int64_t*)out.buffers[1])[o]
                                  : ((const int32_t*)out.buffers[1])[o];
      assert_true(got == want);
    }
    keep.release(&keep);
    out.release(&out);
    to_schema.release(&to_schema);
  }
  assert_int_equal(atomic_load(&t.live_bytes), 0);
}

static void test_large_offsets_past_int32(void** state) {
  (void)state;
  // Offsets past 2^31 (the bytes are never read: only the offsets are).
  struct sluice_error err = {0};
  struct ArrowArray in, out;
  assert_int_equal(sl_array_init(&in, NULL, 3, 0, &err), 0);
  int64_t* offsets = sl_alloc_buffer(NULL, 3 * sizeof *offsets);
  assert_non_null(offsets);
  offsets[0] = 0, offsets[1] = 5, offsets[2] = INT64_C(3) << 30;
  sl_array_set_buffer_owned(&in, 1, offsets, 3 * sizeof *offsets);
  static const char bytes[8] = "abcde";
  sl_array_set_buffer_view(&in, 2, bytes, NULL);
  in.length = 2;
  assert_int_equal(sl_array_cast("U", &in, "u", NULL, &out, &err), EOVERFLOW);
  assert_null(in.release);
  assert_null(out.release);
  assert_non_null(strstr(err.message, "2 GiB"));
}

static int cast_attempt(void* ctx, const struct sluice_allocator* alloc,
                        struct sluice_error* error) {
  const char* const* pair = ctx;
  struct ArrowSchema schema;
  struct ArrowArray in, out;
  make_column(pair[0], 50, 3, NULL, &schema, &in);  // (made with the default allocator)
  schema.release(&schema);
  int rc = sl_array_cast(pair[0], &in, pair[1], alloc, &out, error);
  if (rc == 0) out.release(&out);
  return rc;
}

static void test_allocation_failures(void** state) {
  (void)state;
  static const char* const string_pair[2] = {"u", "U"}, *const int_pair[2] = {"i", "l"};
  test_alloc_sweep(cast_attempt, (void*)string_pair, 20);
  test_alloc_sweep(cast_attempt, (void*)int_pair, 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_join),
      cmocka_unit_test(test_casts_keep_values),
      cmocka_unit_test(test_large_offsets_past_int32),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
