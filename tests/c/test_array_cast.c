// Tests of sl_cast_join and sl_array_cast (core/sl_array_cast.h): the joined
// type of every pair of leaf formats a dataset's objects may disagree on,
// casts of sliced columns with nulls compared value by value with their
// input, string bytes kept as views, the 2 GiB limit of 32-bit offsets, and
// every allocation failing in turn; and sl_array_cast_type of nested columns
// (a sliced list<struct<string, int32>> as large_list<struct<large_string,
// int64>>) checked value by value; a field of type null inside a sliced
// struct and list cast to a typed one (nulls of it, offsets kept).
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
  expect_join("tsu:", "tsn:", "tsn:");  // the finer unit, of one zone
  expect_join("tsn:UTC", "tss:UTC", "tsn:UTC");
  expect_join("tsu:UTC", "tsn:", NULL);
  expect_join("tsu:UTC", "tsu:Europe/Paris", NULL);
  expect_join("tDm", "tDu", "tDu");
  expect_join("tDm", "tsu:", NULL);
  expect_join("tdD", "tdm", NULL);
  expect_join("ttm", "ttu", NULL);
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

/// Timestamps in seconds, sliced, with a null whose bytes are past what
/// nanoseconds hold, cast to nanoseconds: the values times 10^9, the null
/// kept; a valid value past the range is EOVERFLOW naming its row.
static void test_time_units_scale(void** state) {
  (void)state;
  struct test_allocator t;
  test_allocator_init(&t);
  int64_t values[5] = {INT64_MAX, -3, 1700000000, INT64_MIN, 9300000000};
  uint8_t valid = 0x16;  // rows 1, 2 and 4 of the buffers; 3 is a null; 0 is sliced off
  for (int past = 0; past <= 1; ++past) {
    values[4] = past ? 9300000000 : 9200000000;  // 2264 is past timestamp[ns]; 2261 is not
    struct ArrowArray view;  // (sl_array_cast consumes its input: a view that frees nothing)
    struct sluice_error err = {0};
    assert_int_equal(sl_array_init(&view, &t.base, 2, 0, &err), 0);
    view.length = 4;
    view.offset = 1;
    view.null_count = 1;
    sl_array_set_buffer_view(&view, 0, &valid, NULL);
    sl_array_set_buffer_view(&view, 1, values, NULL);
    struct ArrowArray out;
    int rc = sl_array_cast("tss:UTC", &view, "tsn:UTC", &t.base, &out, &err);
    if (past) {
      assert_int_equal(rc, EOVERFLOW);
      assert_non_null(strstr(err.message, "row 3: 9300000000 is past the range of timestamp[ns, tz=UTC]"));
      continue;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(out.length, 4);
    assert_int_equal(out.offset, 1);
    const int64_t* got = out.buffers[1];
    assert_true(got[1] == -3000000000 && got[2] == INT64_C(1700000000000000000));
    assert_true(got[4] == INT64_C(9200000000000000000));
    assert_false((((const uint8_t*)out.buffers[0])[0] >> 3) & 1);  // row 3: null
    out.release(&out);
  }
  assert_int_equal(t.live_bytes, 0);
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

/// A sliced list<struct<a: string, b: int32>> of `n` rows from `offset`:
/// row i null when i % 5 == 4, else i % 4 items; item j of row i is
/// {"s<i>_<j>", i * 10 + j}, b null when j == 2.
static void make_nested(int64_t n, int64_t offset, const struct sluice_allocator* alloc,
                        struct ArrowArray* out) {
  struct sluice_error err = {0};
  struct ArrowSchema schema;
  assert_int_equal(sl_schema_init(&schema, NULL, "+l", "x", ARROW_FLAG_NULLABLE, 1, &err), 0);
  assert_int_equal(sl_schema_init(schema.children[0], NULL, "+s", "item", ARROW_FLAG_NULLABLE, 2,
                                  &err), 0);
  struct ArrowSchema* st = schema.children[0];
  assert_int_equal(sl_schema_init(st->children[0], NULL, "u", "a", ARROW_FLAG_NULLABLE, 0, &err), 0);
  assert_int_equal(sl_schema_init(st->children[1], NULL, "i", "b", ARROW_FLAG_NULLABLE, 0, &err), 0);
  struct sl_builder b;
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, alloc, &err), 0);
  struct sl_builder* item = sl_builder_child(&b, 0);
  for (int64_t i = 0; i < n; ++i) {
    if (i % 5 == 4) {
      assert_int_equal(sl_builder_append_null(&b), 0);
      continue;
    }
    for (int64_t j = 0; j < i % 4; ++j) {
      char text[32];
      int len = snprintf(text, sizeof text, "s%lld_%lld", (long long)i, (long long)j);
      assert_int_equal(sl_builder_append_binary(sl_builder_child(item, 0), text, len), 0);
      assert_int_equal(j == 2 ? sl_builder_append_null(sl_builder_child(item, 1))
                              : sl_builder_append_int32(sl_builder_child(item, 1),
                                                        (int32_t)(i * 10 + j)),
                       0);
      assert_int_equal(sl_builder_struct_finish(item), 0);
    }
    assert_int_equal(sl_builder_list_finish(&b), 0);
  }
  int rc = sl_builder_finish(&b, out, &err);
  sl_builder_release(&b);
  schema.release(&schema);
  assert_int_equal(rc, 0);
  out->offset = offset;
  out->length = n - offset;
  out->null_count = -1;
}

/// The schema of make_nested's column with `list`, `text` and `num` formats.
static void nested_schema(const char* list, const char* text, const char* num,
                          struct ArrowSchema* out) {
  struct sluice_error err = {0};
  assert_int_equal(sl_schema_init(out, NULL, list, "x", ARROW_FLAG_NULLABLE, 1, &err), 0);
  struct ArrowSchema* st = out->children[0];
  assert_int_equal(sl_schema_init(st, NULL, "+s", "item", ARROW_FLAG_NULLABLE, 2, &err), 0);
  assert_int_equal(sl_schema_init(st->children[0], NULL, text, "a", ARROW_FLAG_NULLABLE, 0, &err), 0);
  assert_int_equal(sl_schema_init(st->children[1], NULL, num, "b", ARROW_FLAG_NULLABLE, 0, &err), 0);
}

static void test_nested_cast_keeps_values(void** state) {
  (void)state;
  struct test_allocator t;
  test_allocator_init(&t);
  struct ArrowSchema from, to;
  nested_schema("+l", "u", "i", &from);
  nested_schema("+L", "U", "l", &to);
  assert_true(sl_types_differ(&from, &to));
  assert_false(sl_types_differ(&from, &from));
  struct ArrowArray in, out;
  make_nested(60, 3, &t.base, &in);
  struct sluice_error err = {0};
  assert_int_equal(sl_array_cast_type(&from, &in, &to, &t.base, &out, &err), 0);
  assert_null(in.release);  // consumed
  assert_int_equal(sl_array_validate(&to, &out, SL_VALIDATE_FULL, NULL, &err), 0);
  assert_int_equal(out.length, 57);
  const int64_t* offsets = out.buffers[1];
  const struct ArrowArray* st = out.children[0];
  const int64_t* text_offsets = st->children[0]->buffers[1];
  const char* bytes = st->children[0]->buffers[2];
  const int64_t* nums = st->children[1]->buffers[1];
  for (int64_t k = 0; k < out.length; ++k) {
    int64_t i = k + 3, o = out.offset + k;
    assert_int_equal(is_valid(&out, k), i % 5 != 4);
    if (i % 5 == 4) continue;
    assert_int_equal(offsets[o + 1] - offsets[o], i % 4);
    for (int64_t j = 0; j < i % 4; ++j) {
      int64_t e = st->offset + offsets[o] + j;
      char text[32];
      int len = snprintf(text, sizeof text, "s%lld_%lld", (long long)i, (long long)j);
      int64_t t0 = text_offsets[st->children[0]->offset + e];
      assert_int_equal(text_offsets[st->children[0]->offset + e + 1] - t0, len);
      assert_memory_equal(bytes + t0, text, (size_t)len);
      assert_int_equal(is_valid(st->children[1], e), j != 2);
      if (j != 2) assert_int_equal(nums[st->children[1]->offset + e], i * 10 + j);
    }
  }
  out.release(&out);
  from.release(&from);
  to.release(&to);
  assert_int_equal(atomic_load(&t.live_bytes), 0);
}

static void test_large_list_offsets_past_int32(void** state) {
  (void)state;
  struct sluice_error err = {0};
  struct ArrowSchema from, to;
  assert_int_equal(sl_schema_init(&from, NULL, "+L", "x", 0, 1, &err), 0);
  assert_int_equal(sl_schema_init(from.children[0], NULL, "n", "item", 0, 0, &err), 0);
  assert_int_equal(sl_schema_init(&to, NULL, "+l", "x", 0, 1, &err), 0);
  assert_int_equal(sl_schema_init(to.children[0], NULL, "n", "item", 0, 0, &err), 0);
  struct ArrowArray in, out;
  assert_int_equal(sl_array_init(&in, NULL, 2, 1, &err), 0);
  int64_t* offsets = sl_alloc_buffer(NULL, 3 * sizeof *offsets);
  assert_non_null(offsets);
  offsets[0] = 0, offsets[1] = 5, offsets[2] = INT64_C(3) << 30;
  sl_array_set_buffer_owned(&in, 1, offsets, 3 * sizeof *offsets);
  in.length = 2;
  assert_int_equal(sl_array_init(in.children[0], NULL, 0, 0, &err), 0);
  in.children[0]->length = INT64_C(3) << 30;  // (type null: no buffers)
  assert_int_equal(sl_array_cast_type(&from, &in, &to, NULL, &out, &err), EOVERFLOW);
  assert_null(in.release);
  assert_null(out.release);
  from.release(&from);
  to.release(&to);
}

static int nested_attempt(void* ctx, const struct sluice_allocator* alloc,
                          struct sluice_error* error) {
  (void)ctx;
  struct ArrowSchema from, to;
  nested_schema("+L", "U", "i", &from);
  nested_schema("+l", "u", "l", &to);
  struct ArrowArray small, in, out;
  make_nested(40, 2, NULL, &small);  // (made with the default allocator)
  struct ArrowSchema small_schema;
  nested_schema("+l", "u", "i", &small_schema);
  int rc = sl_array_cast_type(&small_schema, &small, &from, NULL, &in, error);  // large first
  if (rc == 0) rc = sl_array_cast_type(&from, &in, &to, alloc, &out, error);
  if (rc == 0) out.release(&out);
  small_schema.release(&small_schema);
  from.release(&from);
  to.release(&to);
  return rc;
}

static void test_nested_allocation_failures(void** state) {
  (void)state;
  test_alloc_sweep(nested_attempt, NULL, 200);
}

/// struct<a: null, b: int32> of `n` rows from `offset`, a's array itself
/// a window from 2 (its own offset: type null has no buffers), b = i, null
/// when i % 3 == 0.
static void make_null_field(int64_t n, int64_t offset, struct ArrowSchema* schema,
                            struct ArrowArray* out) {
  struct sluice_error err = {0};
  assert_int_equal(sl_schema_init(schema, NULL, "+s", "x", ARROW_FLAG_NULLABLE, 2, &err), 0);
  assert_int_equal(sl_schema_init(schema->children[0], NULL, "n", "a", ARROW_FLAG_NULLABLE, 0,
                                  &err), 0);
  assert_int_equal(sl_schema_init(schema->children[1], NULL, "i", "b", ARROW_FLAG_NULLABLE, 0,
                                  &err), 0);
  struct sl_builder b;
  assert_int_equal(sl_builder_init_from_schema(&b, schema, NULL, &err), 0);
  for (int64_t i = 0; i < n; ++i) {
    assert_int_equal(sl_builder_append_null(sl_builder_child(&b, 0)), 0);
    assert_int_equal(i % 3 == 0 ? sl_builder_append_null(sl_builder_child(&b, 1))
                                : sl_builder_append_int32(sl_builder_child(&b, 1), (int32_t)i),
                     0);
    assert_int_equal(sl_builder_struct_finish(&b), 0);
  }
  assert_int_equal(sl_builder_finish(&b, out, &err), 0);
  sl_builder_release(&b);
  out->offset = offset;
  out->length = n - offset;
  out->null_count = 0;
  out->children[0]->offset = 2;
}

static void test_null_field_cast_to_type(void** state) {
  (void)state;
  struct test_allocator t;
  test_allocator_init(&t);
  struct sluice_error err = {0};
  struct ArrowSchema from, to, list_from, list_to;
  struct ArrowArray in, out;
  make_null_field(40, 5, &from, &in);
  // to: struct<a: struct<s: large_string, l: list<int64>>, b: int64>
  assert_int_equal(sl_schema_init(&to, NULL, "+s", "x", ARROW_FLAG_NULLABLE, 2, &err), 0);
  struct ArrowSchema* a = to.children[0];
  assert_int_equal(sl_schema_init(a, NULL, "+s", "a", ARROW_FLAG_NULLABLE, 2, &err), 0);
  assert_int_equal(sl_schema_init(a->children[0], NULL, "U", "s", ARROW_FLAG_NULLABLE, 0, &err), 0);
  assert_int_equal(sl_schema_init(a->children[1], NULL, "+l", "l", ARROW_FLAG_NULLABLE, 1, &err), 0);
  assert_int_equal(sl_schema_init(a->children[1]->children[0], NULL, "l", "item",
                                  ARROW_FLAG_NULLABLE, 0, &err), 0);
  assert_int_equal(sl_schema_init(to.children[1], NULL, "l", "b", ARROW_FLAG_NULLABLE, 0, &err), 0);
  assert_true(sl_types_differ(&from, &to));
  assert_int_equal(sl_array_cast_type(&from, &in, &to, &t.base, &out, &err), 0);
  assert_null(in.release);  // consumed
  assert_int_equal(sl_array_validate(&to, &out, SL_VALIDATE_FULL, NULL, &err), 0);
  assert_int_equal(out.offset, 5);
  assert_int_equal(out.length, 35);
  const struct ArrowArray* got_a = out.children[0];
  assert_int_equal(got_a->offset, 2);  // (the window the struct's rows index)
  assert_int_equal(got_a->length, 40);
  assert_int_equal(got_a->null_count, 40);
  for (int64_t i = 0; i < got_a->length; ++i) assert_false(is_valid(got_a, i));
  const int64_t* nums = out.children[1]->buffers[1];
  for (int64_t k = 0; k < out.length; ++k) {
    int64_t i = k + 5;
    assert_int_equal(is_valid(out.children[1], i), i % 3 != 0);
    if (i % 3 != 0) assert_int_equal(nums[i], i);
  }
  out.release(&out);
  // list<null> (items sliced too) as list<string>
  assert_int_equal(sl_schema_init(&list_from, NULL, "+l", "x", ARROW_FLAG_NULLABLE, 1, &err), 0);
  assert_int_equal(sl_schema_init(list_from.children[0], NULL, "n", "item", ARROW_FLAG_NULLABLE, 0,
                                  &err), 0);
  assert_int_equal(sl_schema_init(&list_to, NULL, "+l", "x", ARROW_FLAG_NULLABLE, 1, &err), 0);
  assert_int_equal(sl_schema_init(list_to.children[0], NULL, "u", "element", ARROW_FLAG_NULLABLE,
                                  0, &err), 0);
  struct sl_builder b;
  assert_int_equal(sl_builder_init_from_schema(&b, &list_from, NULL, &err), 0);
  for (int64_t i = 0; i < 20; ++i) {  // row i: i % 3 null items
    assert_int_equal(sl_builder_append_nulls(sl_builder_child(&b, 0), i % 3), 0);
    assert_int_equal(sl_builder_list_finish(&b), 0);
  }
  assert_int_equal(sl_builder_finish(&b, &in, &err), 0);
  sl_builder_release(&b);
  in.offset = 4;
  in.length = 16;
  in.null_count = 0;
  const int64_t items = in.children[0]->length;
  assert_int_equal(sl_array_cast_type(&list_from, &in, &list_to, &t.base, &out, &err), 0);
  assert_int_equal(sl_array_validate(&list_to, &out, SL_VALIDATE_FULL, NULL, &err), 0);
  assert_int_equal(out.offset, 4);
  assert_int_equal(out.children[0]->length, items);
  const int32_t* offsets = out.buffers[1];
  for (int64_t k = 0; k < out.length; ++k) {
    assert_int_equal(offsets[4 + k + 1] - offsets[4 + k], (k + 4) % 3);
  }
  for (int64_t e = 0; e < items; ++e) assert_false(is_valid(out.children[0], e));
  out.release(&out);
  from.release(&from);
  to.release(&to);
  list_from.release(&list_from);
  list_to.release(&list_to);
  assert_int_equal(atomic_load(&t.live_bytes), 0);
}

static int null_field_attempt(void* ctx, const struct sluice_allocator* alloc,
                              struct sluice_error* error) {
  (void)ctx;
  struct ArrowSchema from, to;
  struct ArrowArray in, out;
  make_null_field(30, 3, &from, &in);  // (made with the default allocator)
  int rc = sl_schema_copy(&from, NULL, &to, error);
  if (rc == 0) {
    to.children[0]->release(to.children[0]);
    rc = sl_schema_init(to.children[0], NULL, "U", "a", ARROW_FLAG_NULLABLE, 0, error);
  }
  if (rc == 0) {
    rc = sl_array_cast_type(&from, &in, &to, alloc, &out, error);
  } else {
    in.release(&in);
  }
  if (rc == 0) out.release(&out);
  from.release(&from);
  if (to.release != NULL) to.release(&to);
  return rc;
}

static void test_null_field_allocation_failures(void** state) {
  (void)state;
  test_alloc_sweep(null_field_attempt, NULL, 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_join),
      cmocka_unit_test(test_casts_keep_values),
      cmocka_unit_test(test_time_units_scale),
      cmocka_unit_test(test_large_offsets_past_int32),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_nested_cast_keeps_values),
      cmocka_unit_test(test_large_list_offsets_past_int32),
      cmocka_unit_test(test_nested_allocation_failures),
      cmocka_unit_test(test_null_field_cast_to_type),
      cmocka_unit_test(test_null_field_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
