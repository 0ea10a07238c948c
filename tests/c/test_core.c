// Tests of the columnar core: type strings, array/schema nodes, builders for
// every type, and out-of-memory behaviour. Validation: test_core_validate.c.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_block_pool.h"
#include "core/sl_buffer_cache.h"
#include "core/sl_builder.h"
#include "core/sl_cores.h"
#include "core/sl_error.h"
#include "core/sl_name_set.h"
#include "core/sl_parallel.h"
#include "core/sl_ref.h"
#include "core/sl_type.h"
#include "core/sl_utf8.h"
#include "core/sl_validate.h"
#include "core/sl_value_parse.h"
#include "core/sl_value_text.h"
#include "test_core_batch.h"
#include "test_util.h"

/* ---- types ---------------------------------------------------------------------- */

static void test_type_round_trip(void** state) {
  (void)state;
  static const char* const formats[] = {
      "n", "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "z", "Z", "u", "U",
      "w:16", "w:0", "d:10,2", "d:76,-3,256", "tdD", "tdm", "tts", "ttm", "ttu", "ttn", "tss:",
      "tsm:Europe/Paris", "tsu:UTC", "tsn:+01:00", "tDs", "tDm", "tDu", "tDn", "tiM", "tiD",
      "tin", "+l", "+L", "+w:3", "+s", "+m", "+ud:", "+ud:0,5,127", "+us:1,2",
  };
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
    struct sl_type t;
    struct sluice_error err = {0};
    assert_int_equal(sl_type_parse(formats[i], &t, &err), 0);
    char back[64], name[64];
    sl_type_format(&t, back, sizeof back);
    assert_string_equal(back, formats[i]);
    sl_type_name(&t, name, sizeof name);
    assert_true(strlen(name) > 0 && strcmp(name, "unknown") != 0);
    int nb = sl_type_n_buffers(t.id);
    assert_true(nb >= 0 && nb <= 3);
  }
  struct sl_type t;
  char name[64];
  assert_int_equal(sl_type_parse("tsu:UTC", &t, NULL), 0);
  sl_type_name(&t, name, sizeof name);
  assert_string_equal(name, "timestamp[us, tz=UTC]");
  assert_int_equal(sl_type_parse("d:10,2,128", &t, NULL), 0);
  sl_type_name(&t, name, sizeof name);
  assert_string_equal(name, "decimal128(10, 2)");
  assert_int_equal(sl_type_bit_width(&t), 128);
  assert_int_equal(sl_type_parse("l", &t, NULL), 0);
  sl_type_name(&t, name, sizeof name);
  assert_string_equal(name, "int64");
  assert_int_equal(sl_type_n_buffers(SL_TYPE_NA), 0);
  assert_int_equal(sl_type_n_buffers(SL_TYPE_SPARSE_UNION), 1);
  assert_int_equal(sl_type_n_buffers(SL_TYPE_DENSE_UNION), 2);
  assert_int_equal(sl_type_n_buffers(SL_TYPE_STRING), 3);
  assert_int_equal(sl_type_n_buffers(SL_TYPE_STRUCT), 1);
  assert_int_equal(sl_type_parse("+ud:3,7", &t, NULL), 0);
  assert_int_equal(t.n_type_codes, 2);
  assert_int_equal(t.type_codes[1], 7);
}

static void test_type_rejects(void** state) {
  (void)state;
  static const char* const unsupported[] = {"vz", "vu", "+vl", "+vL", "+r", "d:5,2,64"};
  static const char* const bad[] = {"", "x", "ii", "w:", "w:-1", "d:1", "d:0,0",
                                    "d:10,2,100", "tss", "tx", "tdx", "+ud:1,1", "+ud:128",
                                    "+ud:1,", "+w:", "+x", "tiX", "ttx"};
  struct sl_type t;
  struct sluice_error err = {0};
  // Named as pyarrow names them, in messages, though not taken.
  static const char* const names[] = {"binary_view", "string_view", "list_view",
                                      "large_list_view", "run_end_encoded", "decimal64(5, 2)"};
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; ++i) {
    assert_int_equal(sl_type_parse(unsupported[i], &t, &err), ENOTSUP);
    char name[64];
    sluice_type_name(unsupported[i], name, sizeof name);
    assert_string_equal(name, names[i]);
    // the refusal names the type so too (it said "list view / run-end encoded")
    if (i < 5) assert_non_null(strstr(err.message, names[i]));
  }
  char name[64];
  sluice_type_name("d:5,2,16", name, sizeof name);  // no such width: as it is
  assert_string_equal(name, "d:5,2,16");
  // A NULL format is named, not taken to strcmp (it crashed); no room, no write.
  sluice_type_name(NULL, name, sizeof name);
  assert_string_equal(name, "(null)");
  sluice_type_name("l", name, 0);
  assert_string_equal(name, "(null)");
  sluice_type_name("l", NULL, 64);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    assert_int_equal(sl_type_parse(bad[i], &t, &err), EINVAL);
    assert_true(strlen(err.message) > 0);
  }
  assert_int_equal(sl_type_parse(NULL, &t, &err), EINVAL);
}

static void test_build_every_type(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, &ta.base, &err), 0);
  for (int batch = 0; batch < 3; ++batch) {  // the builder is reusable after finish
    assert_int_equal(append_rows(&b), 0);
    assert_true(sl_builder_byte_size(&b) > 0);
    struct ArrowArray out;
    assert_int_equal(sl_builder_finish(&b, &out, &err), 0);
    check_batch(&schema, &out);
    out.release(&out);
    assert_null(out.release);
  }
  sl_builder_release(&b);
  schema.release(&schema);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void test_build_out_of_memory(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  int succeeded = 0;
  for (long long n = 1; n < 2000 && !succeeded; ++n) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, n);
    struct sl_builder b;
    struct sluice_error err = {0};
    int rc = sl_builder_init_from_schema(&b, &schema, &ta.base, &err);
    if (rc == 0) {
      rc = append_rows(&b);
      struct ArrowArray out;
      if (rc == 0) rc = sl_builder_finish(&b, &out, &err);
      if (rc == 0) {
        check_batch(&schema, &out);
        out.release(&out);
      }
      sl_builder_release(&b);
    }
    if (rc == 0) {
      succeeded = atomic_load(&ta.allocations) < n;
      assert_true(succeeded);
    } else {
      assert_int_equal(rc, ENOMEM);
    }
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
  }
  assert_true(succeeded);
  schema.release(&schema);
}

/* ---- builders: reserve/unsafe fast paths, bulk, decimals ----------------------------- */

static void test_builder_fast_paths(void** state) {
  (void)state;
  struct ArrowSchema s;
  node(&s, "+s", NULL, 4);
  node(s.children[0], "g", "x", 0);
  node(s.children[1], "u", "y", 0);
  node(s.children[2], "d:40,0,256", "big", 0);
  node(s.children[3], "b", "flag", 0);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &s, NULL, &err), 0);
  enum { N = 1000 };
  struct sl_builder* x = sl_builder_child(&b, 0);
  struct sl_builder* y = sl_builder_child(&b, 1);
  struct sl_builder* big = sl_builder_child(&b, 2);
  struct sl_builder* flag = sl_builder_child(&b, 3);
  assert_int_equal(sl_builder_reserve(x, N), 0);
  assert_int_equal(sl_builder_reserve(y, N), 0);
  assert_int_equal(sl_builder_reserve_bytes(y, N * 3), 0);
  assert_int_equal(sl_builder_reserve(flag, N), 0);
  for (int i = 0; i < N; ++i) {
    sl_builder_append_double_unsafe(x, i * 0.5);
    sl_builder_append_binary_unsafe(y, "abc", i % 4);
    sl_builder_append_bool_unsafe(flag, i % 3 == 0);
    if (i % 2 == 0) {
      const uint8_t be[3] = {0xFF, 0xFF, 0x85};  // -123
      assert_int_equal(sl_builder_append_decimal_be(big, be, 3), 0);
    } else {
      assert_int_equal(sl_builder_append_null(big), 0);
    }
  }
  const uint8_t too_big[34] = {0x01};
  assert_int_equal(sl_builder_append_decimal_be(big, too_big, 34), EOVERFLOW);
  assert_int_equal(sl_builder_struct_finish_rows(&b, N), 0);
  struct ArrowArray out;
  assert_int_equal(sl_builder_finish(&b, &out, &err), 0);
  assert_int_equal(sl_array_validate(&s, &out, SL_VALIDATE_FULL_UTF8, NULL, &err), 0);
  assert_int_equal(((uintptr_t)out.children[0]->buffers[1]) % 64, 0);
  double v;
  memcpy(&v, (const uint8_t*)out.children[0]->buffers[1] + 8 * 999, 8);
  assert_true(v == 499.5);
  assert_utf8_value(out.children[1], 7, "abc");
  assert_int_equal(out.children[2]->null_count, N / 2);
  int64_t lo = i64_at(out.children[2], 1, 4 * 2), top = i64_at(out.children[2], 1, 4 * 2 + 3);
  assert_int_equal(lo, -123);
  assert_int_equal(top, -1);
  assert_true(is_valid(out.children[3], 0) &&
              (((const uint8_t*)out.children[3]->buffers[1])[0] & 0x9) == 0x9);
  assert_int_equal(sl_builder_append_values(y, "abc", 1), EINVAL);  // not fixed-width
  out.release(&out);
  sl_builder_release(&b);
  s.release(&s);
}

static void test_builder_bulk_and_shape(void** state) {
  (void)state;
  struct ArrowSchema s;
  node(&s, "+s", NULL, 2);
  node(s.children[0], "l", "a", 0);
  node(s.children[1], "l", "b", 0);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &s, NULL, &err), 0);
  const int64_t raw[3] = {1, 2, 3};
  assert_int_equal(sl_builder_append_values(sl_builder_child(&b, 0), raw, 3), 0);
  assert_int_equal(sl_builder_append_values(sl_builder_child(&b, 1), raw, 2), 0);
  assert_int_equal(sl_builder_struct_finish_rows(&b, 3), 0);
  struct ArrowArray out;
  assert_int_equal(sl_builder_finish(&b, &out, &err), EINVAL);
  assert_null(out.release);
  assert_non_null(strstr(err.message, "child 1"));
  // The builder was reset and is usable again.
  assert_int_equal(sl_builder_append_values(sl_builder_child(&b, 0), raw, 1), 0);
  assert_int_equal(sl_builder_append_null(sl_builder_child(&b, 1)), 0);
  assert_int_equal(sl_builder_struct_finish(&b), 0);
  assert_int_equal(sl_builder_finish(&b, &out, &err), 0);
  assert_int_equal(out.length, 1);
  assert_int_equal(i64_at(out.children[0], 1, 0), 1);
  out.release(&out);
  // Spaced values with a validity mask; reserve_tree; zero-width binary.
  const int64_t spaced[4] = {10, 0, 30, 40};
  const uint8_t mask[4] = {1, 0, 1, 1};
  assert_int_equal(sl_builder_reserve_tree(&b, 4), 0);
  assert_true(sl_builder_child(&b, 1)->capacity >= 4);
  assert_int_equal(sl_builder_append_values_valid(sl_builder_child(&b, 0), spaced, mask, 4), 0);
  assert_int_equal(sl_builder_append_values_valid(sl_builder_child(&b, 1), spaced, NULL, 4), 0);
  assert_int_equal(sl_builder_struct_finish_rows(&b, 4), 0);
  assert_int_equal(sl_builder_finish(&b, &out, &err), 0);
  assert_int_equal(sl_array_validate(&s, &out, SL_VALIDATE_FULL, NULL, &err), 0);
  assert_int_equal(out.children[0]->null_count, 1);
  assert_false(is_valid(out.children[0], 1));
  assert_true(is_valid(out.children[0], 2));
  assert_int_equal(i64_at(out.children[0], 1, 3), 40);
  assert_null(out.children[1]->buffers[0]);
  out.release(&out);
  struct ArrowSchema w0;
  node(&w0, "w:0", "w0", 0);
  struct sl_builder wb;
  assert_int_equal(sl_builder_init_from_schema(&wb, &w0, NULL, &err), 0);
  assert_int_equal(sl_builder_append_fixed(&wb, ""), 0);
  assert_int_equal(sl_builder_append_null(&wb), 0);
  assert_int_equal(sl_builder_finish(&wb, &out, &err), 0);
  assert_int_equal(sl_array_validate(&w0, &out, SL_VALIDATE_FULL, NULL, &err), 0);
  assert_int_equal(out.length, 2);
  out.release(&out);
  sl_builder_release(&wb);
  w0.release(&w0);
  // An empty batch still has valid offsets.
  struct ArrowSchema u;
  node(&u, "u", "u", 0);
  struct sl_builder ub;
  assert_int_equal(sl_builder_init_from_schema(&ub, &u, NULL, &err), 0);
  assert_int_equal(sl_builder_finish(&ub, &out, &err), 0);
  assert_non_null(out.buffers[1]);
  assert_int_equal(sl_array_validate(&u, &out, SL_VALIDATE_FULL_UTF8, NULL, &err), 0);
  out.release(&out);
  sl_builder_release(&ub);
  u.release(&u);
  sl_builder_release(&b);
  s.release(&s);
}

static void test_builder_frozen_dictionary(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct ArrowSchema s;
  node(&s, "s", "color", 0);
  assert_int_equal(sl_schema_alloc_dictionary(&s, NULL), 0);
  node(s.dictionary, "u", NULL, 0);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &s, &ta.base, &err), 0);
  assert_int_equal(sl_builder_append_string(sl_builder_dictionary(&b), "red"), 0);
  assert_int_equal(sl_builder_append_string(sl_builder_dictionary(&b), "green"), 0);
  assert_int_equal(sl_builder_freeze_dictionary(&b, &err), 0);
  struct ArrowArray batches[3];
  for (int k = 0; k < 3; ++k) {
    assert_int_equal(sl_builder_append_int16(&b, (int16_t)(k % 2)), 0);
    assert_int_equal(sl_builder_append_null(&b), 0);
    assert_int_equal(sl_builder_finish(&b, &batches[k], &err), 0);
    assert_int_equal(sl_array_validate(&s, &batches[k], SL_VALIDATE_FULL_UTF8, NULL, &err), 0);
    assert_int_equal(batches[k].dictionary->length, 2);
    assert_utf8_value(batches[k].dictionary, 1, "green");
  }
  // Every batch shares the same bytes, which outlive the builder.
  assert_ptr_equal(batches[0].dictionary->buffers[2], batches[2].dictionary->buffers[2]);
  sl_builder_release(&b);
  for (int k = 0; k < 3; ++k) {
    assert_utf8_value(batches[k].dictionary, 0, "red");
    batches[k].release(&batches[k]);
  }
  s.release(&s);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

// Frozen dictionary, reserve_tree and masked values in one go, for the
// allocation-failure loop below.
static int misc_sequence(const struct ArrowSchema* s, const struct sluice_allocator* alloc) {
  struct sl_builder b;
  int rc = sl_builder_init_from_schema(&b, s, alloc, NULL);
  if (rc != 0) return rc;
  struct sl_builder* color = sl_builder_child(&b, 0);
  struct sl_builder* nums = sl_builder_child(&b, 1);
  rc = sl_builder_append_string(sl_builder_dictionary(color), "red");
  if (rc == 0) rc = sl_builder_append_string(sl_builder_dictionary(color), "green");
  if (rc == 0) rc = sl_builder_freeze_dictionary(color, NULL);
  for (int k = 0; rc == 0 && k < 2; ++k) {
    const int32_t values[3] = {1, 2, 3};
    const uint8_t valid[3] = {1, 0, 1};
    rc = sl_builder_reserve_tree(&b, 3);
    if (rc == 0) rc = sl_builder_append_values_valid(color, (const int16_t[]){0, 1, 0}, valid, 3);
    if (rc == 0) rc = sl_builder_append_values_valid(nums, values, valid, 3);
    if (rc == 0) rc = sl_builder_struct_finish_rows(&b, 3);
    struct ArrowArray out;
    if (rc == 0) rc = sl_builder_finish(&b, &out, NULL);
    if (rc == 0) {
      assert_int_equal(sl_array_validate(s, &out, SL_VALIDATE_FULL_UTF8, NULL, NULL), 0);
      out.release(&out);
    }
  }
  sl_builder_release(&b);
  return rc;
}

static void test_misc_out_of_memory(void** state) {
  (void)state;
  struct ArrowSchema s;
  node(&s, "+s", NULL, 2);
  node(s.children[0], "s", "color", 0);
  assert_int_equal(sl_schema_alloc_dictionary(s.children[0], NULL), 0);
  node(s.children[0]->dictionary, "u", NULL, 0);
  node(s.children[1], "i", "n", 0);
  int succeeded = 0;
  for (long long n = 1; n < 500 && !succeeded; ++n) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, n);
    int rc = misc_sequence(&s, &ta.base);
    if (rc == 0) {
      succeeded = 1;
      assert_true(atomic_load(&ta.allocations) < n);
    } else {
      assert_int_equal(rc, ENOMEM);
    }
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
  }
  assert_true(succeeded);
  s.release(&s);
}

/* ---- schema and array nodes -------------------------------------------------------- */

static void foreign_release(struct ArrowSchema* s) { s->release = NULL; }

static void test_schema_copy_foreign(void** state) {
  (void)state;
  // Metadata {"key": "value"} in the C Data Interface layout.
  static const char meta[] = {1, 0, 0, 0, 3, 0, 0, 0, 'k', 'e', 'y', 5, 0, 0, 0,
                              'v', 'a', 'l', 'u', 'e'};
  struct ArrowSchema dict = {"u", NULL, NULL, 0, 0, NULL, NULL, foreign_release, NULL};
  struct ArrowSchema item = {"tsu:UTC", "item", NULL, 2, 0, NULL, NULL, foreign_release, NULL};
  struct ArrowSchema* item_ptr[] = {&item};
  struct ArrowSchema a = {"c", "a", meta, 2, 0, NULL, &dict, foreign_release, NULL};
  struct ArrowSchema b = {"+l", "b", NULL, 0, 1, item_ptr, NULL, foreign_release, NULL};
  struct ArrowSchema* kids[] = {&a, &b};
  struct ArrowSchema root = {"+s", "", meta, 0, 2, kids, NULL, foreign_release, NULL};
  assert_int_equal(sl_metadata_size(meta), (int64_t)sizeof meta);
  assert_int_equal(sl_metadata_size(NULL), 0);

  int copied = 0;
  for (long long n = 1; !copied; ++n) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, n);
    struct ArrowSchema copy;
    struct sluice_error err = {0};
    int rc = sl_schema_copy(&root, &ta.base, &copy, &err);
    if (rc == 0) {
      copied = 1;
      assert_true(atomic_load(&ta.allocations) < n);  // no failure was swallowed
      atomic_store(&ta.fail_at, 0);
      assert_string_equal(copy.format, "+s");
      assert_memory_equal(copy.metadata, meta, sizeof meta);
      assert_string_equal(copy.children[0]->name, "a");
      assert_int_equal(copy.children[0]->flags, 2);
      assert_string_equal(copy.children[0]->dictionary->format, "u");
      assert_null(copy.children[0]->dictionary->name);
      assert_string_equal(copy.children[1]->children[0]->format, "tsu:UTC");
      struct ArrowSchema proj;
      const int64_t cols[] = {1};
      assert_int_equal(sl_schema_project(&copy, cols, 1, &ta.base, &proj, &err), 0);
      assert_int_equal(proj.n_children, 1);
      assert_string_equal(proj.children[0]->name, "b");
      proj.release(&proj);
      const int64_t bad[] = {2};
      assert_int_equal(sl_schema_project(&copy, bad, 1, &ta.base, &proj, &err), EINVAL);
      assert_null(proj.release);
      copy.release(&copy);
    } else {
      assert_int_equal(rc, ENOMEM);
      assert_null(copy.release);
    }
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
  }
  // A released or malformed producer schema is refused, not followed.
  struct ArrowSchema broken = {"+s", "", NULL, 0, 1, NULL, NULL, foreign_release, NULL};
  struct ArrowSchema copy;
  assert_int_equal(sl_schema_copy(&broken, NULL, &copy, NULL), EINVAL);
  assert_null(copy.release);
}

static void test_array_project_and_views(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, &ta.base, &err), 0);
  assert_int_equal(append_rows(&b), 0);
  struct ArrowArray batch, proj;
  assert_int_equal(sl_builder_finish(&b, &batch, &err), 0);
  assert_ptr_equal(sl_array_allocator(&batch), &ta.base);
  const int64_t cols[] = {9, 1};
  assert_int_equal(sl_array_project(&batch, cols, 2, &ta.base, &proj, &err), 0);
  assert_null(batch.release);
  struct ArrowSchema pschema;
  assert_int_equal(sl_schema_project(&schema, cols, 2, NULL, &pschema, &err), 0);
  assert_int_equal(sl_array_validate(&pschema, &proj, SL_VALIDATE_FULL_UTF8, NULL, &err), 0);
  assert_utf8_value(proj.children[1], 4, "row4");
  struct ArrowArray moved;
  sl_array_move(&proj, &moved);
  assert_null(proj.release);
  moved.release(&moved);
  pschema.release(&pschema);
  // A column named twice: two views of one child, which lives until both go.
  assert_int_equal(append_rows(&b), 0);
  assert_int_equal(sl_builder_finish(&b, &batch, &err), 0);
  const int64_t twice[] = {1, 9, 1};
  assert_int_equal(sl_array_project(&batch, twice, 3, &ta.base, &proj, &err), 0);
  assert_null(batch.release);
  assert_int_equal(sl_schema_project(&schema, twice, 3, NULL, &pschema, &err), 0);
  assert_int_equal(sl_array_validate(&pschema, &proj, SL_VALIDATE_FULL_UTF8, NULL, &err), 0);
  assert_ptr_equal(proj.children[0]->buffers[1], proj.children[2]->buffers[1]);
  assert_utf8_value(proj.children[0], 4, "row4");
  proj.children[0]->release(proj.children[0]);
  assert_utf8_value(proj.children[2], 4, "row4");
  proj.release(&proj);
  pschema.release(&pschema);
  // A bad projection consumes the input too.
  assert_int_equal(append_rows(&b), 0);
  assert_int_equal(sl_builder_finish(&b, &batch, &err), 0);
  const int64_t bad[] = {99};
  assert_int_equal(sl_array_project(&batch, bad, 1, &ta.base, &proj, &err), EINVAL);
  assert_null(batch.release);
  sl_builder_release(&b);
  schema.release(&schema);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);

  // Views keep their owner alive until the array goes.
  int32_t* block = sl_alloc_buffer(&ta.base, 5 * sizeof(int32_t));
  for (int i = 0; i < 5; ++i) block[i] = i;
  struct sl_ref* ref = sl_ref_wrap_buffer(&ta.base, block, 5 * sizeof(int32_t));
  assert_non_null(ref);
  struct ArrowSchema is;
  node(&is, "i", "v", 0);
  struct ArrowArray view;
  assert_int_equal(sl_array_init(&view, &ta.base, 2, 0, &err), 0);
  sl_array_set_buffer_view(&view, 1, block + 1, ref);
  view.length = 4;
  sl_ref_release(ref);  // the array holds the last reference now
  assert_int_equal(sl_array_validate(&is, &view, SL_VALIDATE_FULL, NULL, &err), 0);
  assert_int_equal(i32_at(&view, 1, 3), 4);
  assert_int_equal(sl_array_byte_size(&is, &view), 16);
  view.offset = 1;
  view.length = 3;
  assert_int_equal(sl_array_byte_size(&is, &view), 16);
  view.release(&view);
  is.release(&is);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

/// The struct column top{mid{leaf}} with offsets at every level (row j of a
/// node is at index node.offset + the offsets above + j): row 0 null in mid
/// and leaf, row 1 null in top, rows 2, 3 the leaf's values 6, 7.
static void make_nested(struct ArrowArray* top, const struct sluice_allocator* alloc,
                        int with_nulls) {
  static const int32_t values[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  static const uint8_t leaf_bits[2] = {0xEF, 0x03};  // index 4 null
  static const uint8_t mid_bits[1] = {0xF7};         // index 3 null
  static const uint8_t top_bits[1] = {0xFB};         // index 2 null
  struct sluice_error err = {0};
  assert_int_equal(sl_array_init(top, alloc, 1, 1, &err), 0);
  top->offset = 1;
  top->length = 4;
  struct ArrowArray* mid = top->children[0];
  assert_int_equal(sl_array_init(mid, alloc, 1, 1, &err), 0);
  mid->offset = 2;
  mid->length = 5;
  struct ArrowArray* leaf = mid->children[0];
  assert_int_equal(sl_array_init(leaf, alloc, 2, 0, &err), 0);
  leaf->offset = 1;
  leaf->length = 7;
  leaf->null_count = 1;
  sl_array_set_buffer_view(leaf, 0, leaf_bits, NULL);
  sl_array_set_buffer_view(leaf, 1, values, NULL);
  if (with_nulls) {
    sl_array_set_buffer_view(mid, 0, mid_bits, NULL);
    sl_array_set_buffer_view(top, 0, top_bits, NULL);
    mid->null_count = top->null_count = 1;
  }
}

static int valid_at(const struct ArrowArray* a, int64_t j) {
  if (a->buffers[0] == NULL) return 1;
  int64_t i = a->offset + j;
  return (((const uint8_t*)a->buffers[0])[i >> 3] >> (i & 7)) & 1;
}

static void test_array_struct_field(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sluice_error err = {0};
  struct ArrowSchema leaf_schema;
  node(&leaf_schema, "i", "leaf", 0);
  const int64_t path[] = {0, 0};
  for (int with_nulls = 0; with_nulls <= 1; ++with_nulls) {
    struct ArrowArray top, field;
    make_nested(&top, &ta.base, with_nulls);
    assert_int_equal(sl_array_struct_field(&top, path, 2, &ta.base, &field, &err), 0);
    assert_null(top.release);
    assert_int_equal(field.length, 4);
    assert_int_equal(sl_array_validate(&leaf_schema, &field, SL_VALIDATE_FULL, NULL, &err), 0);
    const int want_valid[2][4] = {{0, 1, 1, 1}, {0, 0, 1, 1}};
    for (int64_t j = 0; j < 4; ++j) {
      assert_int_equal(valid_at(&field, j), want_valid[with_nulls][j]);
      if (want_valid[with_nulls][j]) assert_int_equal(i32_at(&field, 1, field.offset + j), 4 + j);
    }
    if (with_nulls) assert_int_equal(field.null_count, 2);
    field.release(&field);
  }
  // A bad path consumes the column too.
  struct ArrowArray top, field;
  make_nested(&top, &ta.base, 1);
  const int64_t bad[] = {0, 1};
  assert_int_equal(sl_array_struct_field(&top, bad, 2, &ta.base, &field, &err), EINVAL);
  assert_null(top.release);
  assert_null(field.release);
  leaf_schema.release(&leaf_schema);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void test_array_init_failure(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  atomic_store(&ta.fail_at, 1);
  struct ArrowArray a;
  struct ArrowSchema s;
  struct sluice_error err = {0};
  assert_int_equal(sl_array_init(&a, &ta.base, 2, 3, &err), ENOMEM);
  assert_null(a.release);
  atomic_store(&ta.fail_at, 2);
  assert_int_equal(sl_schema_init(&s, &ta.base, "i", "x", 0, 0, &err), ENOMEM);
  assert_null(s.release);
  assert_int_equal(sl_schema_init(&s, &ta.base, "i", "x", 0, 0, &err), 0);
  assert_int_equal(sl_array_init(&a, &ta.base, -1, 0, &err), EINVAL);
  // A partially built node (children never filled) releases cleanly.
  assert_int_equal(sl_array_init(&a, &ta.base, 1, 2, &err), 0);
  assert_int_equal(sl_array_init(a.children[0], &ta.base, 2, 0, &err), 0);
  void* data = sl_alloc_buffer(&ta.base, 100);
  sl_array_set_buffer_owned(a.children[0], 1, data, 100);
  assert_int_equal(sl_array_alloc_dictionary(&a, &err), 0);
  a.release(&a);
  s.release(&s);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

/* ---- block pool ------------------------------------------------------------------- */

static void test_block_pool_recycles(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sl_block_pool* pool = sl_block_pool_create(&ta.base, 3000);
  assert_non_null(pool);
  uint8_t *a, *b, *c;
  int recycled;
  struct sl_ref* ra = sl_block_pool_get(pool, 1000, &a, &recycled);
  assert_non_null(ra);
  assert_int_equal(recycled, 0);
  memset(a, 7, 1000);
  struct sl_ref* rb = sl_block_pool_get(pool, 1000, &b, &recycled);
  assert_ptr_not_equal(a, b);
  // A view's reference keeps the block out of the pool.
  sl_ref_retain(ra);
  sl_ref_release(ra);
  struct sl_ref* rc = sl_block_pool_get(pool, 1000, &c, &recycled);
  assert_int_equal(recycled, 0);
  assert_ptr_not_equal(c, a);
  sl_ref_release(rc);  // back to the pool
  sl_ref_release(ra);
  // Reused: the same memory, its bytes as left; only blocks between the size
  // and twice it are reused.
  uint8_t* freed_c = c;
  struct sl_ref* r2 = sl_block_pool_get(pool, 900, &c, &recycled);
  assert_int_equal(recycled, 1);
  assert_true(c == a || c == freed_c);
  if (c == a) assert_int_equal(c[999], 7);
  struct sl_ref* r3 = sl_block_pool_get(pool, 400, &b, &recycled);
  assert_int_equal(recycled, 0);  // the free 1000-byte block is more than twice 400
  sl_ref_release(r3);
  struct sl_ref* r4 = sl_block_pool_get(pool, 2000, &b, &recycled);
  assert_int_equal(recycled, 0);  // too small
  // Over max_bytes (3000) of free blocks, released ones are freed.
  sl_ref_release(r4);
  sl_ref_release(r2);
  sl_ref_release(rb);
  // Closing with a block out: the pool stays until that block goes.
  struct sl_ref* r5 = sl_block_pool_get(pool, 1000, &a, &recycled);
  assert_int_equal(recycled, 1);
  sl_block_pool_close(pool);
  a[999] = 1;
  sl_ref_release(r5);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  // Out of memory: NULL, nothing leaked.
  pool = sl_block_pool_create(&ta.base, 1 << 20);
  assert_non_null(pool);
  atomic_store(&ta.fail_at, atomic_load(&ta.allocations) + 2);  // the block's memory
  assert_null(sl_block_pool_get(pool, 100, &a, &recycled));
  assert_null(a);
  sl_block_pool_close(pool);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

/* ---- buffer cache ----------------------------------------------------------------- */

/// Anonymous memory of this process in KiB (/proc/self/status), -1 if unknown.
static long rss_anon_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "RssAnon:", 8) == 0) kib = strtol(line + 8, NULL, 10);
  }
  fclose(f);
  return kib;
}

/// Freed large blocks of the default allocator go back to the kernel at
/// once. Through malloc they did not: after one freed block raised glibc's
/// mmap threshold, blocks of a few MiB came from the heap and stayed there
/// while a later block pinned its top (a streaming scan's freed batches,
/// hundreds of MB past its budget). Where every block goes through malloc
/// (under AddressSanitizer, which checks it) there is nothing to check.
static void test_default_allocator_returns_large_blocks(void** state) {
  (void)state;
  enum { N = 24, SIZE = 4 << 20 };
  size_t direct = sl_alloc_direct_min();
  if (direct == 0) skip();
  assert_true(direct <= SIZE);
  const struct sluice_allocator* a = sluice_default_allocator();
  void* raise_threshold = a->allocate(a->ctx, 8 << 20, 64);
  assert_non_null(raise_threshold);
  a->deallocate(a->ctx, raise_threshold, 8 << 20);
  void* blocks[N];
  for (int i = 0; i < N; ++i) {
    blocks[i] = a->allocate(a->ctx, SIZE, 64);
    assert_non_null(blocks[i]);
    assert_true(((uintptr_t)blocks[i] & 63) == 0);
    memset(blocks[i], i + 1, SIZE);
  }
  long full = rss_anon_kib();
  if (full < 0) skip();
  for (int i = 0; i < N - 1; ++i) a->deallocate(a->ctx, blocks[i], SIZE);
  long after = rss_anon_kib();
  // 23 blocks of 4 MiB freed: at least 80 of their 92 MiB gone.
  assert_true(full - after >= 80L << 10);
  assert_int_equal(((unsigned char*)blocks[N - 1])[SIZE - 1], N);
  a->deallocate(a->ctx, blocks[N - 1], SIZE);
}

/// The default thread count follows the CPUs the process may run on: pinned
/// to one CPU (as `taskset -c 0` does), it is one, whatever the host has.
static void test_cores_follow_affinity(void** state) {
  (void)state;
#if defined(__linux__) && defined(CPU_COUNT)
  cpu_set_t all;
  CPU_ZERO(&all);
  assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
  int allowed = CPU_COUNT(&all);
  int cores = sl_cores(4096);  // (a cgroup CPU quota may allow fewer)
  assert_true(cores >= 1 && cores <= allowed);
  assert_int_equal(sl_cores(1), 1);
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  int pinned = sl_cores(4096);
  assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
  assert_int_equal(pinned, 1);
#else
  skip();
#endif
}

/// A cgroup v2 CPU quota caps the default: the smallest cpu.max on the way
/// from the process's cgroup up to the root counts, rounded up.
static void test_cores_follow_cgroup_quota(void** state) {
  (void)state;
  char root[512], dir[700], file[800];
  test_temp_path("cgroup", root, sizeof root);
  assert_int_equal(mkdir(root, 0700), 0);
  snprintf(dir, sizeof dir, "%s/pod", root);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(dir, sizeof dir, "%s/pod/app", root);
  assert_int_equal(mkdir(dir, 0700), 0);
  // No cpu.max anywhere, or a v1-only /proc/self/cgroup: no quota.
  assert_int_equal(sl_cores_quota("0::/pod/app\n", root), 0);
  assert_int_equal(sl_cores_quota("4:cpu,cpuacct:/pod/app\n", root), 0);
  snprintf(file, sizeof file, "%s/pod/cpu.max", root);
  assert_int_equal(test_write_file(file, "250000 100000\n", 14), 0);  // 2.5 CPUs
  snprintf(file, sizeof file, "%s/pod/app/cpu.max", root);
  assert_int_equal(test_write_file(file, "max 100000\n", 11), 0);
  assert_int_equal(sl_cores_quota("1:name=systemd:/x\n0::/pod/app\n", root), 3);
  assert_int_equal(sl_cores_quota("0::/pod/app/\n", root), 3);
  assert_int_equal(test_write_file(file, "50000 100000\n", 13), 0);  // half a CPU
  assert_int_equal(sl_cores_quota("0::/pod/app\n", root), 1);
  assert_int_equal(test_write_file(file, "junk\n", 5), 0);
  assert_int_equal(sl_cores_quota("0::/pod/app\n", root), 3);
  snprintf(file, sizeof file, "%s/cpu.max", root);  // a namespaced container: "0::/"
  assert_int_equal(test_write_file(file, "400000 100000\n", 14), 0);
  assert_int_equal(sl_cores_quota("0::/\n", root), 4);
  assert_int_equal(sl_cores_quota("0::/pod/app\n", root), 3);
  snprintf(file, sizeof file, "%s/pod/app/cpu.max", root);
  remove(file);
  snprintf(file, sizeof file, "%s/pod/cpu.max", root);
  remove(file);
  snprintf(file, sizeof file, "%s/cpu.max", root);
  remove(file);
  snprintf(dir, sizeof dir, "%s/pod/app", root);
  rmdir(dir);
  snprintf(dir, sizeof dir, "%s/pod", root);
  rmdir(dir);
  rmdir(root);
}

/// A cgroup v1 CPU quota caps the default too: the cpu controller's
/// hierarchy is found in mountinfo, the cgroup under its mount point (or
/// the mount point itself where the mount's root is the container's cgroup).
static void test_cores_follow_cgroup_v1_quota(void** state) {
  (void)state;
  char root[512], mnt[600], dir[700], file[800], mountinfo[800], text[2048];
  test_temp_path("cgroup1", root, sizeof root);
  assert_int_equal(mkdir(root, 0700), 0);
  snprintf(mnt, sizeof mnt, "%s/cpu,cpuacct", root);  // Debian's name for the joint mount
  assert_int_equal(mkdir(mnt, 0700), 0);
  snprintf(dir, sizeof dir, "%s/docker", mnt);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(dir, sizeof dir, "%s/docker/c1", mnt);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(mountinfo, sizeof mountinfo, "%s/mountinfo", root);
  // The cpu hierarchy mounted from its root; a memory mount before it, a
  // v2 mount and a line with a tag field around it.
  int n = snprintf(text, sizeof text,
                   "31 23 0:28 / %s rw - tmpfs tmpfs rw\n"
                   "35 31 0:32 / %s/memory rw - cgroup cgroup rw,memory\n"
                   "32 31 0:29 / %s rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
                   "36 31 0:33 / %s/unified rw - cgroup2 cgroup2 rw\n",
                   root, root, mnt, root);
  assert_int_equal(test_write_file(mountinfo, text, (size_t)n), 0);
  const char* self = "9:memory:/docker/c1\n4:cpu,cpuacct:/docker/c1\n0::/\n";
  assert_int_equal(sl_cores_quota_v1(self, mountinfo), 0);  // no files: no quota
  snprintf(file, sizeof file, "%s/docker/c1/cpu.cfs_quota_us", mnt);
  assert_int_equal(test_write_file(file, "-1\n", 3), 0);
  snprintf(file, sizeof file, "%s/docker/c1/cpu.cfs_period_us", mnt);
  assert_int_equal(test_write_file(file, "100000\n", 7), 0);
  assert_int_equal(sl_cores_quota_v1(self, mountinfo), 0);  // -1: none
  snprintf(file, sizeof file, "%s/docker/c1/cpu.cfs_quota_us", mnt);
  assert_int_equal(test_write_file(file, "150000\n", 7), 0);  // 1.5 CPUs
  assert_int_equal(sl_cores_quota_v1(self, mountinfo), 2);
  assert_int_equal(sl_cores_quota_v1("4:cpu,cpuacct:/docker/c1/\n", mountinfo), 2);
  assert_int_equal(sl_cores_quota(self, root), 0);  // the v2 reading does not see it
  assert_int_equal(sl_cores_quota_v1("4:cpuacct:/docker/c1\n", mountinfo), 0);  // not "cpu"
  assert_int_equal(sl_cores_quota_v1("4:cpu:/docker/c1\n", "/nonexistent/mountinfo"), 0);
  // A parent's smaller quota limits its children.
  snprintf(file, sizeof file, "%s/docker/cpu.cfs_quota_us", mnt);
  assert_int_equal(test_write_file(file, "50000\n", 6), 0);
  snprintf(file, sizeof file, "%s/docker/cpu.cfs_period_us", mnt);
  assert_int_equal(test_write_file(file, "100000\n", 7), 0);
  assert_int_equal(sl_cores_quota_v1(self, mountinfo), 1);
  // A container without a cgroup namespace: /proc/self/cgroup names the
  // host path, and the mount's root is that cgroup, seen at the mount point.
  snprintf(file, sizeof file, "%s/cpu.cfs_quota_us", mnt);
  assert_int_equal(test_write_file(file, "300000\n", 7), 0);
  snprintf(file, sizeof file, "%s/cpu.cfs_period_us", mnt);
  assert_int_equal(test_write_file(file, "100000\n", 7), 0);
  n = snprintf(text, sizeof text, "32 31 0:29 /docker/c9 %s rw - cgroup cgroup rw,cpu\n", mnt);
  assert_int_equal(test_write_file(mountinfo, text, (size_t)n), 0);
  assert_int_equal(sl_cores_quota_v1("4:cpu:/docker/c9\n", mountinfo), 3);
  // A mount whose root is above the cgroup: the rest of the path under it.
  n = snprintf(text, sizeof text, "32 31 0:29 /docker %s rw - cgroup cgroup rw,cpu\n", mnt);
  assert_int_equal(test_write_file(mountinfo, text, (size_t)n), 0);
  assert_int_equal(sl_cores_quota_v1("4:cpu:/docker/docker/c1\n", mountinfo), 1);
  const char* files[] = {"docker/c1/cpu.cfs_quota_us", "docker/c1/cpu.cfs_period_us",
                         "docker/cpu.cfs_quota_us", "docker/cpu.cfs_period_us",
                         "cpu.cfs_quota_us", "cpu.cfs_period_us"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
    snprintf(file, sizeof file, "%s/%s", mnt, files[i]);
    assert_int_equal(remove(file), 0);
  }
  snprintf(dir, sizeof dir, "%s/docker/c1", mnt);
  rmdir(dir);
  snprintf(dir, sizeof dir, "%s/docker", mnt);
  rmdir(dir);
  rmdir(mnt);
  remove(mountinfo);
  rmdir(root);
}

/// A request that no kept block fits, once what is kept and the request
/// pass half the bound, frees kept blocks of at least its size first
/// (oldest first), so that memory of another shape is not added to all that
/// is kept; below half, nothing is freed (the next read may want it); blocks
/// that fit are still reused.
static void test_buffer_cache_miss_frees_kept_blocks(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  const size_t big = (size_t)100 << 10;
  const size_t padded_big = big + 64;  // (the cache's header)
  struct sluice_buffer_cache* cache = sl_buffer_cache_create(&ta.base, 20 * (int64_t)padded_big, 64);
  assert_non_null(cache);
  const struct sluice_allocator* alloc = sl_buffer_cache_allocator(cache);
  uint8_t* b[8];
  for (int i = 0; i < 8; ++i) assert_non_null(b[i] = sl_alloc_buffer(alloc, big));
  for (int i = 0; i < 8; ++i) sl_free_buffer(alloc, b[i], big);
  long long kept_all = atomic_load(&ta.live_bytes);
  // Under half the bound with it (8.75 of 10 blocks): a fresh block (no
  // kept one fits 3/4 of its size), the kept ones stay.
  uint8_t* small = sl_alloc_buffer(alloc, big / 4 * 3);
  assert_non_null(small);
  assert_int_equal(atomic_load(&ta.live_bytes), kept_all + (long long)(big / 4 * 3) + 64);
  sl_free_buffer(alloc, small, big / 4 * 3);
  kept_all = atomic_load(&ta.live_bytes);
  // 3.5 blocks' worth that none fits: four kept blocks go first.
  uint8_t* wide = sl_alloc_buffer(alloc, 3 * big + big / 2);
  assert_non_null(wide);
  long long now = atomic_load(&ta.live_bytes);
  assert_true(now < kept_all);  // net: fewer bytes held than before it
  assert_true(now >= 4 * (long long)big);  // four kept blocks and the new one
  // The rest still serve their size.
  int64_t reused = sl_buffer_cache_reuses(cache);
  uint8_t* again = sl_alloc_buffer(alloc, big);
  assert_int_equal(sl_buffer_cache_reuses(cache), reused + 1);
  sl_free_buffer(alloc, again, big);
  sl_free_buffer(alloc, wide, 3 * big + big / 2);
  sl_buffer_cache_close(cache);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void* cache_hammer(void* arg) {
  struct {
    const struct sluice_allocator* alloc;
    atomic_int stop;
  }* h = arg;
  // Two sizes that neither serves the other, beside kept blocks that serve
  // neither: every request scans the whole list under the lock.
  const size_t sizes[2] = {(size_t)64 << 10, (size_t)81 << 10};
  for (int i = 0; !atomic_load(&h->stop); i ^= 1) {
    void* p = sl_alloc_buffer(h->alloc, sizes[i]);
    if (p != NULL) sl_free_buffer(h->alloc, p, sizes[i]);
  }
  return NULL;
}

/// A child forked while another thread works the cache's lock gets a cache
/// of its own with sluice_buffer_cache_after_fork: it allocates and frees
/// without hanging (without it, children forked while the other thread
/// held the lock hung in it: most of them here, as every request of that
/// thread scans thousands of kept blocks under the lock).
static void test_buffer_cache_after_fork(void** state) {
  (void)state;
  enum { KEPT = 4000 };
  const size_t kept_size = (size_t)200 << 10;
  struct sluice_buffer_cache* cache = sluice_buffer_cache_create((int64_t)KEPT * (1 << 20));
  assert_non_null(cache);
  struct {
    const struct sluice_allocator* alloc;
    atomic_int stop;
  } h;
  h.alloc = sluice_buffer_cache_allocator(cache);
  atomic_init(&h.stop, 0);
  void** kept = malloc(KEPT * sizeof *kept);
  assert_non_null(kept);
  for (int i = 0; i < KEPT; ++i) assert_non_null(kept[i] = sl_alloc_buffer(h.alloc, kept_size));
  for (int i = 0; i < KEPT; ++i) sl_free_buffer(h.alloc, kept[i], kept_size);
  free(kept);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, cache_hammer, &h), 0);
  int stuck = 0;
  for (int i = 0; i < 40; ++i) {
    usleep(500);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      alarm(5);
      sluice_buffer_cache_after_fork(cache);
      for (int k = 0; k < 8; ++k) {
        void* p = sl_alloc_buffer(h.alloc, (size_t)1 << 20);
        if (p == NULL) _exit(2);
        sl_free_buffer(h.alloc, p, (size_t)1 << 20);
      }
      _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) stuck++;
  }
  atomic_store(&h.stop, 1);
  pthread_join(t, NULL);
  sluice_buffer_cache_close(cache);
  assert_int_equal(stuck, 0);
}

static void test_buffer_cache_recycles(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  const size_t big = (size_t)100 << 10;  // over the 64 KiB from which blocks are kept
  struct sluice_buffer_cache* cache = sl_buffer_cache_create(&ta.base, 3 * (int64_t)big, 64);
  assert_non_null(cache);
  const struct sluice_allocator* alloc = sl_buffer_cache_allocator(cache);
  assert_true(sl_alloc_is_default(sluice_default_allocator()));
  assert_false(sl_alloc_is_default(&ta.base));
  assert_false(sl_alloc_is_default(alloc));  // over the test's allocator
  // A freed block comes back for the same size and for up to a quarter less,
  // 64-byte aligned, its bytes as left.
  uint8_t* a = sl_alloc_buffer(alloc, big);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 64, 0);
  memset(a, 7, big);
  sl_free_buffer(alloc, a, big);
  uint8_t* b = sl_alloc_buffer(alloc, big - big / 8);
  assert_ptr_equal(b, a);
  assert_int_equal(b[big - big / 8 - 1], 7);
  // Freed with a smaller size than its block holds: still kept by what it
  // holds, and handed out for the full size again.
  sl_free_buffer(alloc, b, big - big / 8);
  uint8_t* c = sl_alloc_buffer(alloc, big);
  assert_ptr_equal(c, a);
  sl_free_buffer(alloc, c, big);
  // A request much smaller than the free block gets a block of its own.
  uint8_t* d = sl_alloc_buffer(alloc, big / 2);
  assert_ptr_not_equal(d, a);
  // Small blocks are the base allocator's, never kept.
  char* small = sl_alloc(alloc, 100);
  assert_non_null(small);
  sl_free(alloc, small, 100);
  // Over max_bytes of free blocks, the rest go back to the base allocator.
  uint8_t* e[5];
  for (int i = 0; i < 5; ++i) assert_non_null(e[i] = sl_alloc_buffer(alloc, big));
  long long live_out = atomic_load(&ta.live_bytes);
  for (int i = 0; i < 5; ++i) sl_free_buffer(alloc, e[i], big);
  long long kept = atomic_load(&ta.live_bytes) - (live_out - 5 * (long long)(big + 64));
  assert_true(kept > 0 && kept <= 3 * (long long)(big + 64));
  // Closing with a block out: the cache lives until that block is freed,
  // which goes to the base allocator, and then every byte is back.
  sl_buffer_cache_close(cache);
  d[big / 2 - 1] = 1;
  sl_free_buffer(alloc, d, big / 2);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  // At most max_blocks free blocks, whatever bytes they hold: the rest go
  // back to the base allocator; with room for all, all come back.
  for (int blocks = 2; blocks <= 5; blocks += 3) {
    cache = sl_buffer_cache_create(&ta.base, 10 * (int64_t)big, blocks);
    assert_non_null(cache);
    alloc = sl_buffer_cache_allocator(cache);
    for (int i = 0; i < 5; ++i) assert_non_null(e[i] = sl_alloc_buffer(alloc, big));
    for (int i = 0; i < 5; ++i) sl_free_buffer(alloc, e[i], big);
    for (int i = 0; i < 5; ++i) assert_non_null(e[i] = sl_alloc_buffer(alloc, big));
    assert_int_equal(sl_buffer_cache_reuses(cache), blocks);
    for (int i = 0; i < 5; ++i) sl_free_buffer(alloc, e[i], big);
    sl_buffer_cache_close(cache);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
  }
  // Out of memory: NULL, nothing held.
  cache = sl_buffer_cache_create(&ta.base, 1 << 20, 64);
  assert_non_null(cache);
  alloc = sl_buffer_cache_allocator(cache);
  atomic_store(&ta.fail_at, atomic_load(&ta.allocations) + 1);
  assert_null(sl_alloc_buffer(alloc, big));
  sl_buffer_cache_close(cache);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
  // Over the default allocator, the block pool maps its blocks itself.
  cache = sl_buffer_cache_create(NULL, 1 << 20, 64);
  assert_non_null(cache);
  assert_true(sl_alloc_is_default(sl_buffer_cache_allocator(cache)));
  sl_buffer_cache_close(cache);
}

/* ---- UTF-8 ----------------------------------------------------------------------- */

/// The definition, one byte at a time: the index of the first byte of the
/// first sequence that is not well-formed UTF-8 (RFC 3629), or -1.
static int64_t utf8_reference(const uint8_t* s, int64_t n) {
  for (int64_t i = 0; i < n;) {
    uint8_t c = s[i];
    int len;
    uint32_t lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else return i;
    if (i + len > n || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (int k = 2; k < len; ++k) if ((s[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return -1;
}

static void test_utf8_against_reference(void** state) {
  (void)state;
  // Texts of every length up to 100 (the ASCII fast paths take 32 and 8
  // bytes a step and re-read the last 8 for a short tail), mostly ASCII with
  // pieces that are valid, overlong, surrogates, truncated or stray bytes at
  // random places, the end included.
  static const char* const pieces[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                       "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                       "\xe2\x82",  "\x80",         "\xff", "\xc3"};
  uint8_t text[160];
  unsigned seed = 12345;
  int invalid_seen = 0, valid_seen = 0;
  for (int round = 0; round < 20000; ++round) {
    seed = seed * 1103515245u + 12345u;
    int64_t n = (int64_t)((seed >> 8) % 101);
    for (int64_t i = 0; i < n; ++i) text[i] = (uint8_t)(' ' + (i * 7 + round) % 90);
    seed = seed * 1103515245u + 12345u;
    int n_pieces = (int)((seed >> 8) % 3);
    for (int k = 0; k < n_pieces && n > 0; ++k) {
      seed = seed * 1103515245u + 12345u;
      const char* piece = pieces[(seed >> 8) % 10];
      size_t len = strlen(piece);
      int64_t at = (int64_t)((seed >> 16) % (uint64_t)n);
      if (at + (int64_t)len > n) at = n - (int64_t)len;
      if (at < 0) continue;
      memcpy(text + at, piece, len);
    }
    int64_t want = utf8_reference(text, n);
    assert_int_equal(sl_utf8_invalid_at(text, n), want);
    if (want >= 0) invalid_seen++;
    else valid_seen++;
  }
  assert_true(invalid_seen > 1000 && valid_seen > 1000);
}

/// sl_parallel_for's jobs: each marks its index; those in `fail` fail
/// with their index in the message.
struct marks {
  _Atomic int ran[200];
  int fail_from;  ///< indexes >= this fail (200 = none)
  int fail_also;  ///< and this one (-1 = none)
};

static int mark_job(void* ctx, int64_t i, struct sluice_error* error) {
  struct marks* m = ctx;
  m->ran[i]++;
  if (i >= m->fail_from || i == m->fail_also) {
    return sl_error_set(error, EIO, "job %lld failed", (long long)i);
  }
  return 0;
}

static void test_parallel_for_reports_the_first_failure_in_order(void** state) {
  (void)state;
  for (int threads = 1; threads <= 8; threads *= 2) {
    struct marks m;
    memset(&m, 0, sizeof m);
    m.fail_from = 200;
    m.fail_also = -1;
    int64_t ok = -1;
    struct sluice_error error = {0, {0}};
    assert_int_equal(sl_parallel_for(200, threads, mark_job, &m, &ok, &error), 0);
    assert_int_equal(ok, 200);
    for (int i = 0; i < 200; i++) assert_int_equal(m.ran[i], 1);  // each once
    // Two failures: the lowest index's error, whichever finished first;
    // nothing past it started after it failed, nothing before it skipped.
    memset(&m, 0, sizeof m);
    m.fail_from = 150;
    m.fail_also = 70;
    assert_int_equal(sl_parallel_for(200, threads, mark_job, &m, &ok, &error), EIO);
    assert_string_equal(error.message, "job 70 failed");
    for (int i = 0; i <= 70; i++) assert_int_equal(m.ran[i], 1);
    int64_t ran = 0, succeeded = 0;
    for (int i = 0; i < 200; i++) {
      ran += m.ran[i];
      if (i != 70 && i < 150) succeeded += m.ran[i];
    }
    assert_int_equal(ok, succeeded);
    if (threads == 1) assert_int_equal(ran, 71);  // serial: stops at the failure
  }
  int64_t ok = -1;
  assert_int_equal(sl_parallel_for(0, 4, mark_job, NULL, &ok, NULL), 0);
  assert_int_equal(ok, 0);
}

/// Job 0 of sl_parallel_for runs on the calling thread, whichever thread
/// starts first: an open's first object asks the cancel hook only on the
/// thread that opened it (a FIFO read elsewhere waited in read() until its
/// writer closed it, however soon the hook said yes).
struct job_threads {
  pthread_t caller;
  _Atomic int job0_elsewhere;
};

static int note_thread_job(void* ctx, int64_t i, struct sluice_error* error) {
  (void)error;
  struct job_threads* t = ctx;
  if (i == 0 && !pthread_equal(pthread_self(), t->caller)) atomic_store(&t->job0_elsewhere, 1);
  return 0;
}

/// UUID text (the Avro writer's check, CQL's encoding): RFC 4122's
/// 8-4-4-4-12 form in either case, or 32 hex digits; anything else refused.
static void test_parse_uuid(void** state) {
  (void)state;
  // RFC 4122's own example, with the bytes it spells.
  static const uint8_t want[16] = {0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0,
                                   0xa7, 0x65, 0x00, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6};
  const char* good[] = {"f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6",
                        "f81d4fae7dec11d0a76500a0c91e6bf6"};
  for (size_t i = 0; i < sizeof good / sizeof *good; ++i) {
    uint8_t got[16] = {0};
    assert_int_equal(sl_parse_uuid((const uint8_t*)good[i], (int64_t)strlen(good[i]), got), 1);
    assert_memory_equal(got, want, 16);
  }
  const char* bad[] = {"", "f81d4fae-7dec-11d0-a765-00a0c91e6bf",  // 35
                       "f81d4fae-7dec-11d0-a765-00a0c91e6bf6a",       // 37
                       "f81d4fae+7dec-11d0-a765-00a0c91e6bf6",        // not a hyphen
                       "g81d4fae-7dec-11d0-a765-00a0c91e6bf6",        // not hex
                       "f81d4fae7dec-11d0-a765-00a0c91e6bf6-",        // hyphens misplaced
                       "f81d4fae7dec11d0a76500a0c91e6bfg"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
    uint8_t got[16];
    assert_int_equal(sl_parse_uuid((const uint8_t*)bad[i], (int64_t)strlen(bad[i]), got), 0);
  }
}

static void test_parallel_for_runs_job_0_on_the_caller(void** state) {
  (void)state;
  struct job_threads t = {.caller = pthread_self()};
  atomic_init(&t.job0_elsewhere, 0);
  for (int round = 0; round < 2000; ++round) {
    assert_int_equal(sl_parallel_for(2, 2, note_thread_job, &t, NULL, NULL), 0);
  }
  assert_int_equal(atomic_load(&t.job0_elsewhere), 0);
}

/// sl_error_prefix: "prefix: message"; a message too long for what the
/// prefix leaves keeps its start and its end (a caller may tell the error by
/// its last line), cut between whole UTF-8 characters.
static void test_error_prefix_keeps_both_ends(void** state) {
  (void)state;
  struct sluice_error e;
  sl_error_set(&e, EINVAL, "short");
  assert_int_equal(sl_error_prefix(&e, "%s", "dst.parquet"), EINVAL);
  assert_string_equal(e.message, "dst.parquet: short");
  char longer[2000];
  size_t at = 0;
  while (at < 1500) at += (size_t)snprintf(longer + at, sizeof longer - at, "\xc3\xa9line %zu\n", at);
  snprintf(longer + at, sizeof longer - at, "KeyboardInterrupt");
  sl_error_set(&e, EIO, "%s", longer);  // itself cut to fit, its end kept
  snprintf(e.message + sizeof e.message - 1 - 18, 19, "\nKeyboardInterrupt");
  assert_int_equal(sl_error_prefix(&e, "%s", "/a/rather/long/destination/path/out.parquet"), EIO);
  assert_int_equal(strncmp(e.message, "/a/rather/long/destination/path/out.parquet: \xc3\xa9line 0\n", 54), 0);
  size_t n = strlen(e.message);
  assert_true(n <= sizeof e.message - 1);
  assert_string_equal(e.message + n - 18, "\nKeyboardInterrupt");
  assert_non_null(strstr(e.message, " [...] "));
  assert_true(sl_utf8_invalid_at((const uint8_t*)e.message, (int64_t)n) < 0);
  // A message cut at the buffer's size in the middle of a character (as
  // vsnprintf cuts it): what is kept of its end is still whole characters.
  char accents[2001];
  for (size_t i = 0; i < 2000; i += 2) memcpy(accents + i, "\xc3\xa9", 2);
  accents[2000] = '\0';
  for (size_t shift = 0; shift < 2; ++shift) {  // the cut falls after a lead byte, then not
    sl_error_set(&e, EINVAL, "%.*s%s", (int)shift, "x", accents);
    assert_int_equal(sl_error_prefix(&e, "%s", "\xc3\xa9" "dst"), EINVAL);
    n = strlen(e.message);
    assert_true(sl_utf8_invalid_at((const uint8_t*)e.message, (int64_t)n) < 0);
    assert_int_equal(strncmp(e.message, "\xc3\xa9" "dst: ", 7), 0);
  }
}

/// sl_error_set: a message longer than the buffer (an object named by a
/// 1 KiB S3 key) keeps its start and its end, where the reason is, cut
/// between whole UTF-8 characters; a short one is kept as it is.
static void test_error_set_keeps_the_reason(void** state) {
  (void)state;
  struct sluice_error e;
  assert_int_equal(sl_error_set(&e, ENOENT, "%s: %s", "s3://b/k", "HTTP 404"), ENOENT);
  assert_string_equal(e.message, "s3://b/k: HTTP 404");
  char key[1025];
  for (size_t i = 0; i < 1024; i += 2) memcpy(key + i, "\xc3\xa9", 2);
  key[1024] = '\0';
  assert_int_equal(sl_error_set(&e, ENOENT, "s3://bucket/%s: GET: HTTP 404 (not found): NoSuchKey",
                                key), ENOENT);
  size_t n = strlen(e.message);
  assert_true(n <= sizeof e.message - 1);
  assert_int_equal(strncmp(e.message, "s3://bucket/\xc3\xa9", 14), 0);
  assert_non_null(strstr(e.message, " [...] "));
  const char* end = "\xc3\xa9: GET: HTTP 404 (not found): NoSuchKey";
  assert_string_equal(e.message + n - strlen(end), end);
  assert_true(sl_utf8_invalid_at((const uint8_t*)e.message, (int64_t)n) < 0);
  // Past the 8 KiB it is first formatted in (a 20 KB URL): the end kept is
  // still the message's own, not where that buffer cut it.
  static char url[20001];
  memset(url, 'a', sizeof url - 1);
  url[sizeof url - 1] = '\0';
  assert_int_equal(sl_error_set(&e, EIO, "http://h/%s.csv: GET: Couldn't connect", url), EIO);
  n = strlen(e.message);
  end = ".csv: GET: Couldn't connect";
  assert_string_equal(e.message + n - strlen(end), end);
  assert_int_equal(strncmp(e.message, "http://h/aaa", 12), 0);
}

/// sl_escaped / sl_text_append_escaped, the one spelling of names, metadata
/// and option values in messages and on screen: every byte visible on one
/// line, a backslash (and the quote the text stands in) escaped, bytes that
/// are not UTF-8 as \xNN, C1 and bidirectional controls as \uXXXX, and a cut
/// after a whole character or escape marked with "...".
static void test_escaped_spelling(void** state) {
  (void)state;
  static const char odd[] = "a'b\\c\n\t\r\x01\x7f\xff\xc3\xa9\xc2\x85\xe2\x80\xae\xc3";
  const char* want = "a'b\\\\c\\n\\t\\r\\x01\\x7f\\xff\xc3\xa9\\u0085\\u202e\\xc3";
  char buf[64];
  assert_string_equal(sl_escaped(odd, sizeof odd - 1, 0, buf, sizeof buf), want);
  assert_string_equal(sl_escaped("it's", 4, '\'', buf, sizeof buf), "it\\'s");
  assert_string_equal(sl_escaped("a\0b", 3, 0, buf, sizeof buf), "a\\x00b");
  struct sl_text text;
  sl_text_init(&text, NULL);
  assert_int_equal(sl_text_append_escaped(&text, odd, sizeof odd - 1, 0), 0);
  assert_string_equal(sl_text_cstr(&text), want);
  sl_text_reset(&text);
  // Cut: what fits exactly is whole; else the last escape or character that
  // fits with room for "...", never half of one.
  assert_string_equal(sl_escaped("0123456789abcde", 15, 0, buf, 16), "0123456789abcde");
  assert_string_equal(sl_escaped("0123456789abcdef", 16, 0, buf, 16), "0123456789ab...");
  assert_string_equal(sl_escaped("0123456789a\x01z", 13, 0, buf, 16), "0123456789a...");
  assert_string_equal(sl_escaped("0123456789\xc3\xa9zzzz", 16, 0, buf, 16),
                      "0123456789\xc3\xa9...");
  assert_string_equal(sl_escaped("0123456789ab\xc3\xa9zz", 16, 0, buf, 16), "0123456789ab...");
}

// The name set the Avro and JSON Lines writers and the Avro schema parser
// find repeated names with: the first value of a name is kept by add and
// reported, put replaces it, and growing (from 64 slots) keeps every name;
// a failed allocation leaves nothing behind.
static int name_set_attempt(void* ctx, const struct sluice_allocator* alloc,
                            struct sluice_error* error) {
  char(*names)[16] = ctx;
  struct sl_name_set set;
  sl_name_set_init(&set, alloc);
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < 1000; ++i) {
    int64_t had = 0;
    rc = sl_name_set_add(&set, names[i], i, &had);
    if (rc == 0) assert_int_equal(had, -1);
  }
  for (int64_t i = 0; rc == 0 && i < 1000; ++i) {
    int64_t had = -1;
    rc = sl_name_set_add(&set, names[i], i + 5000, &had);  // a repeat: kept, reported
    if (rc == 0) assert_int_equal(had, i);
  }
  if (rc == 0) rc = sl_name_set_put(&set, names[999], 7);
  if (rc == 0) {
    assert_int_equal(set.n, 1000);
    for (int64_t i = 0; i < 999; ++i) assert_int_equal(sl_name_set_find(&set, names[i]), i);
    assert_int_equal(sl_name_set_find(&set, names[999]), 7);
    assert_int_equal(sl_name_set_find(&set, "n"), -1);
    assert_int_equal(sl_name_set_find(&set, ""), -1);
  }
  sl_name_set_release(&set);
  return rc == 0 ? 0 : sl_error_set(error, rc, "name set: out of memory");
}

static void test_name_set(void** state) {
  (void)state;
  static char names[1000][16];
  for (int i = 0; i < 1000; ++i) snprintf(names[i], sizeof names[i], "n%d", i);
  struct sl_name_set empty;
  sl_name_set_init(&empty, NULL);
  assert_int_equal(sl_name_set_find(&empty, "n0"), -1);  // no slots yet
  sl_name_set_release(&empty);
  assert_true(test_alloc_sweep(name_set_attempt, names, 100) > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_type_round_trip),
      cmocka_unit_test(test_type_rejects),
      cmocka_unit_test(test_build_every_type),
      cmocka_unit_test(test_build_out_of_memory),
      cmocka_unit_test(test_builder_fast_paths),
      cmocka_unit_test(test_builder_bulk_and_shape),
      cmocka_unit_test(test_builder_frozen_dictionary),
      cmocka_unit_test(test_misc_out_of_memory),
      cmocka_unit_test(test_name_set),
      cmocka_unit_test(test_schema_copy_foreign),
      cmocka_unit_test(test_array_project_and_views),
      cmocka_unit_test(test_array_struct_field),
      cmocka_unit_test(test_array_init_failure),
      cmocka_unit_test(test_block_pool_recycles),
      cmocka_unit_test(test_buffer_cache_recycles),
      cmocka_unit_test(test_buffer_cache_miss_frees_kept_blocks),
      cmocka_unit_test(test_buffer_cache_after_fork),
      cmocka_unit_test(test_default_allocator_returns_large_blocks),
      cmocka_unit_test(test_cores_follow_affinity),
      cmocka_unit_test(test_cores_follow_cgroup_quota),
      cmocka_unit_test(test_cores_follow_cgroup_v1_quota),
      cmocka_unit_test(test_utf8_against_reference),
      cmocka_unit_test(test_parallel_for_reports_the_first_failure_in_order),
      cmocka_unit_test(test_parallel_for_runs_job_0_on_the_caller),
      cmocka_unit_test(test_parse_uuid),
      cmocka_unit_test(test_error_prefix_keeps_both_ends),
      cmocka_unit_test(test_error_set_keeps_the_reason),
      cmocka_unit_test(test_escaped_spelling),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
