// Shared by the core tests: helpers to build schemas and read values, and a
// batch holding a column of every kind (nested ones included) built with the
// builders. Header-only (static inline) so each test executable takes what it
// uses. Include after <cmocka.h>.
#ifndef SLUICE_TEST_CORE_BATCH_H
#define SLUICE_TEST_CORE_BATCH_H

#include <stdio.h>
#include <string.h>

#include "core/sl_array.h"
#include "core/sl_builder.h"
#include "core/sl_type.h"
#include "core/sl_validate.h"

/* ---- helpers ------------------------------------------------------------------- */

static inline struct ArrowSchema* node(struct ArrowSchema* s, const char* fmt, const char* name,
                                int64_t n_children) {
  assert_int_equal(sl_schema_init(s, NULL, fmt, name, ARROW_FLAG_NULLABLE, n_children, NULL), 0);
  return s;
}

static inline int32_t i32_at(const struct ArrowArray* a, int64_t buf, int64_t i) {
  int32_t v;
  memcpy(&v, (const uint8_t*)a->buffers[buf] + i * 4, 4);
  return v;
}

static inline int64_t i64_at(const struct ArrowArray* a, int64_t buf, int64_t i) {
  int64_t v;
  memcpy(&v, (const uint8_t*)a->buffers[buf] + i * 8, 8);
  return v;
}

static inline int is_valid(const struct ArrowArray* a, int64_t i) {
  const uint8_t* bits = a->buffers[0];
  return bits == NULL || ((bits[(a->offset + i) >> 3] >> ((a->offset + i) & 7)) & 1);
}

static inline void assert_utf8_value(const struct ArrowArray* a, int64_t i, const char* want) {
  int32_t start = i32_at(a, 1, a->offset + i), end = i32_at(a, 1, a->offset + i + 1);
  assert_int_equal(end - start, (int32_t)strlen(want));
  assert_memory_equal((const char*)a->buffers[2] + start, want, strlen(want));
}

/* ---- a nested batch of every kind of column ---------------------------------------- */

enum { N_ROWS = 5, N_COLS = 14 };

static inline void make_batch_schema(struct ArrowSchema* root) {
  node(root, "+s", "", N_COLS);
  struct ArrowSchema** c = root->children;
  node(c[0], "i", "i32", 0);
  node(c[1], "u", "s", 0);
  node(node(c[2], "+l", "li", 1)->children[0], "i", "item", 0);
  node(node(c[3], "+L", "lls", 1)->children[0], "U", "item", 0);
  node(node(c[4], "+w:2", "fsl", 1)->children[0], "s", "item", 0);
  node(c[5], "+s", "st", 2);
  node(c[5]->children[0], "l", "a", 0);
  node(c[5]->children[1], "b", "b", 0);
  struct ArrowSchema* entries = node(node(c[6], "+m", "m", 1)->children[0], "+s", "entries", 2);
  node(entries->children[0], "u", "key", 0)->flags = 0;
  node(entries->children[1], "i", "value", 0);
  node(c[7], "+ud:3,7", "du", 2);
  node(c[7]->children[0], "i", "x", 0);
  node(c[7]->children[1], "u", "y", 0);
  node(c[8], "+us:0,1", "su", 2);
  node(c[8]->children[0], "g", "x", 0);
  node(c[8]->children[1], "b", "y", 0);
  node(c[9], "i", "d", 0);
  assert_int_equal(sl_schema_alloc_dictionary(c[9], NULL), 0);
  node(c[9]->dictionary, "u", NULL, 0);
  node(c[10], "d:10,2", "dec", 0);
  node(c[11], "tsu:UTC", "ts", 0);
  node(c[12], "n", "nul", 0);
  node(c[13], "w:3", "fsb", 0);
}

#define RC(expr)                 \
  do {                           \
    int rc_ = (expr);            \
    if (rc_ != 0) return rc_;    \
  } while (0)

// Appends the rows with checked calls only, so that any allocation may fail.
static inline int append_rows(struct sl_builder* b) {
  struct sl_builder* i32 = sl_builder_child(b, 0);
  struct sl_builder* s = sl_builder_child(b, 1);
  struct sl_builder* li = sl_builder_child(b, 2);
  struct sl_builder* lls = sl_builder_child(b, 3);
  struct sl_builder* fsl = sl_builder_child(b, 4);
  struct sl_builder* st = sl_builder_child(b, 5);
  struct sl_builder* m = sl_builder_child(b, 6);
  struct sl_builder* entries = sl_builder_child(m, 0);
  struct sl_builder* du = sl_builder_child(b, 7);
  struct sl_builder* su = sl_builder_child(b, 8);
  struct sl_builder* d = sl_builder_child(b, 9);
  for (int r = 0; r < N_ROWS; ++r) {
    char text[32];
    RC(r == 2 ? sl_builder_append_null(i32) : sl_builder_append_int32(i32, r * 10));
    snprintf(text, sizeof text, "row%d", r);
    RC(r == 3 ? sl_builder_append_null(s)
              : sl_builder_append_string(s, r == 1 ? "h\xc3\xa9llo" : text));
    if (r == 4) {
      RC(sl_builder_append_null(li));
    } else {
      for (int k = 0; k < r; ++k) RC(sl_builder_append_int32(sl_builder_child(li, 0), k));
      RC(sl_builder_list_finish(li));
    }
    if (r % 2 == 0) {
      RC(sl_builder_append_string(sl_builder_child(lls, 0), "a"));
      RC(sl_builder_append_string(sl_builder_child(lls, 0), "bb"));
    }
    RC(sl_builder_list_finish(lls));
    if (r == 1) {
      RC(sl_builder_append_null(fsl));
    } else {
      RC(sl_builder_append_int16(sl_builder_child(fsl, 0), (int16_t)r));
      RC(sl_builder_append_int16(sl_builder_child(fsl, 0), (int16_t)-r));
      RC(sl_builder_list_finish(fsl));
    }
    if (r == 0) {
      RC(sl_builder_append_null(st));
    } else {
      RC(sl_builder_append_int64(sl_builder_child(st, 0), r * 100));
      RC(sl_builder_append_bool(sl_builder_child(st, 1), r % 2));
      RC(sl_builder_struct_finish(st));
    }
    if (r == 3) {
      RC(sl_builder_append_null(m));
    } else {
      if (r != 2) {
        RC(sl_builder_append_string(sl_builder_child(entries, 0), "k"));
        RC(sl_builder_append_int32(sl_builder_child(entries, 1), r));
        RC(sl_builder_struct_finish(entries));
      }
      RC(sl_builder_list_finish(m));
    }
    if (r == 4) {
      RC(sl_builder_append_null(du));
    } else if (r % 2 == 0) {
      RC(sl_builder_append_int32(sl_builder_child(du, sl_builder_union_child(du, 3)), r));
      RC(sl_builder_union_finish(du, 3));
    } else {
      snprintf(text, sizeof text, "u%d", r);
      RC(sl_builder_append_string(sl_builder_child(du, sl_builder_union_child(du, 7)), text));
      RC(sl_builder_union_finish(du, 7));
    }
    if (r % 2 == 0) {
      RC(sl_builder_append_double(sl_builder_child(su, 0), r * 1.5));
      RC(sl_builder_union_finish(su, 0));
    } else {
      RC(sl_builder_append_bool(sl_builder_child(su, 1), 1));
      RC(sl_builder_union_finish(su, 1));
    }
    RC(r == 3 ? sl_builder_append_null(d) : sl_builder_append_int32(d, r % 2));
    RC(sl_builder_append_decimal_int64(sl_builder_child(b, 10), r * -123));
    RC(sl_builder_append_int64(sl_builder_child(b, 11), (int64_t)r * 1000000));
    RC(sl_builder_append_null(sl_builder_child(b, 12)));
    RC(r == 0 ? sl_builder_append_null(sl_builder_child(b, 13))
              : sl_builder_append_fixed(sl_builder_child(b, 13), "xyz"));
    RC(sl_builder_struct_finish(b));
  }
  RC(sl_builder_append_string(sl_builder_dictionary(d), "red"));
  RC(sl_builder_append_string(sl_builder_dictionary(d), "green"));
  return 0;
}

static inline void check_batch(const struct ArrowSchema* schema, const struct ArrowArray* a) {
  struct sluice_error err = {0};
  int rc = sl_array_validate(schema, a, SL_VALIDATE_FULL_UTF8, NULL, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(a->length, N_ROWS);
  assert_int_equal(a->n_children, N_COLS);
  struct ArrowArray** c = a->children;
  // int32 with one null
  assert_int_equal(c[0]->null_count, 1);
  assert_false(is_valid(c[0], 2));
  assert_int_equal(i32_at(c[0], 1, 4), 40);
  // utf8
  assert_utf8_value(c[1], 1, "h\xc3\xa9llo");
  assert_utf8_value(c[1], 4, "row4");
  assert_false(is_valid(c[1], 3));
  // list<int32>: offsets 0,0,1,3,6,6
  assert_int_equal(i32_at(c[2], 1, 5), 6);
  assert_int_equal(c[2]->children[0]->length, 6);
  assert_false(is_valid(c[2], 4));
  // large_list<large_utf8>
  assert_int_equal(i64_at(c[3], 1, 5), 6);
  assert_null(c[3]->buffers[0]);
  // fixed_size_list<int16>[2]
  assert_int_equal(c[4]->children[0]->length, 10);
  assert_false(is_valid(c[4], 1));
  // struct: row 0 null, children padded
  assert_false(is_valid(c[5], 0));
  assert_int_equal(i64_at(c[5]->children[0], 1, 3), 300);
  // map: rows 0,1,4 have one entry, 2 empty, 3 null
  assert_int_equal(i32_at(c[6], 1, 5), 3);
  assert_int_equal(c[6]->children[0]->children[0]->null_count, 0);
  // dense union: type ids 3,7,3,7,3(null)
  assert_int_equal(((const int8_t*)c[7]->buffers[0])[1], 7);
  assert_int_equal(i32_at(c[7], 1, 3), 1);
  assert_int_equal(c[7]->null_count, 0);
  // sparse union: children as long as the union
  assert_int_equal(c[8]->children[0]->length, N_ROWS);
  assert_int_equal(c[8]->children[1]->length, N_ROWS);
  // dictionary
  assert_non_null(c[9]->dictionary);
  assert_int_equal(c[9]->dictionary->length, 2);
  assert_int_equal(i32_at(c[9], 1, 1), 1);
  // decimal128 -123*4 sign-extended
  int64_t lo = i64_at(c[10], 1, 8), hi = i64_at(c[10], 1, 9);
  assert_int_equal(lo, -492);
  assert_int_equal(hi, -1);
  assert_int_equal(i64_at(c[11], 1, 2), 2000000);
  assert_int_equal(c[12]->null_count, N_ROWS);
  assert_int_equal(c[12]->n_buffers, 0);
  assert_memory_equal((const uint8_t*)c[13]->buffers[1] + 3, "xyz", 3);
  assert_true(sl_array_byte_size(schema, a) > 0);
}

#endif
