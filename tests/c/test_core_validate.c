// Tests of array validation: hand-made corruptions with the expected messages,
// UTF-8 edge cases, and random corruption against exact-size buffers so that
// AddressSanitizer catches any read the validator makes out of bounds.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_builder.h"
#include "core/sl_error.h"
#include "core/sl_ref.h"
#include "core/sl_type.h"
#include "core/sl_validate.h"
#include "test_core_batch.h"
#include "test_util.h"

/* ---- validation of corrupted arrays -------------------------------------------------- */

struct size_override {
  const struct ArrowArray* array;
  int64_t buffer;
  int64_t size;
};

static int64_t override_size_of(void* ctx, const struct ArrowArray* array, int64_t i) {
  const struct size_override* o = ctx;
  return (array == o->array && i == o->buffer) ? o->size : -1;
}

static void* writable(const struct ArrowArray* a, int64_t i) { return (void*)(uintptr_t)a->buffers[i]; }

static void put_i32(const struct ArrowArray* a, int64_t buf, int64_t i, int32_t v) {
  memcpy((uint8_t*)writable(a, buf) + i * 4, &v, 4);
}

struct corruption {
  enum sl_validate_level level;
  const char* message;  // expected substring
};

// Applies corruption `which` to a freshly built batch; sizes may be filled in.
static void corrupt(int which, struct ArrowArray* a, struct size_override* o) {
  struct ArrowArray** c = a->children;
  switch (which) {
    case 0: put_i32(c[1], 1, 2, 100); break;                       // offsets decrease
    case 1: o->array = c[1]; o->buffer = 2; o->size = 3; break;    // data shorter than offsets
    case 2: o->array = c[0]; o->buffer = 1; o->size = 8; break;    // int32 data short
    case 3: ((int8_t*)writable(c[7], 0))[1] = 5; break;            // undeclared union id
    case 4: put_i32(c[7], 1, 0, 99); break;                        // dense offset past child
    case 5: put_i32(c[9], 1, 0, 7); break;                         // dictionary index
    case 6: ((uint8_t*)writable(c[1], 2))[0] = 0xFF; break;        // invalid UTF-8
    case 7: put_i32(c[2], 1, 5, 60); break;                        // list past its child
    case 8: c[5]->children[0]->length = 2; break;                  // struct child short
    case 9: c[0]->n_buffers = 1; break;                            // buffer count
    case 10: c[12]->null_count = 9; break;                          // null_count > length
    case 11: c[4]->children[0]->length = 5; break;                 // fixed_size_list child short
    case 12:                                                       // bad UTF-8 deep inside a map
      ((uint8_t*)writable(c[6]->children[0]->children[0], 2))[0] = 0xC0;
      break;
    case 13: c[13]->buffers[1] = NULL; break;                      // missing data buffer
    case 14: c[0]->buffers[0] = NULL; break;                       // nulls without a bitmap
    case 15: put_i32(c[1], 1, 1, 6); break;                        // boundary splits a character
    default: break;
  }
}

static const struct corruption corruptions[] = {
    {SL_VALIDATE_FULL, "column 's': offsets not increasing at index 3"},
    {SL_VALIDATE_MINIMAL, "column 's': last offset 18 exceeds the data size (3)"},
    {SL_VALIDATE_MINIMAL, "column 'i32': data buffer holds 8 bytes, needs 20"},
    {SL_VALIDATE_FULL, "column 'du': union type id 5 not declared at index 1"},
    {SL_VALIDATE_FULL, "column 'du': dense union offset 99 out of range"},
    {SL_VALIDATE_FULL, "column 'd': dictionary index 7 out of range (dictionary length 2)"},
    {SL_VALIDATE_FULL_UTF8, "column 's': invalid UTF-8 in value 0"},
    {SL_VALIDATE_MINIMAL, "column 'li': last offset 60 exceeds the child length (6)"},
    {SL_VALIDATE_MINIMAL, "column 'st.a': length 2 is shorter than its parent's 5"},
    {SL_VALIDATE_MINIMAL, "column 'i32': has 1 buffers, type int32 needs 2"},
    {SL_VALIDATE_MINIMAL, "column 'nul': null_count 9 with length 5"},
    {SL_VALIDATE_MINIMAL, "column 'fsl': child length 5 is shorter than 5 lists of 2"},
    {SL_VALIDATE_FULL_UTF8, "column 'm.entries.key': invalid UTF-8"},
    {SL_VALIDATE_MINIMAL, "column 'fsb': data buffer is NULL"},
    {SL_VALIDATE_MINIMAL, "column 'i32': validity buffer is NULL with null_count 1"},
    // value 0, "h\xc3\xa9llo" cut after its \xc3, is the first bad one
    {SL_VALIDATE_FULL_UTF8, "column 's': invalid UTF-8 in value 0, at byte 5 of it (0xc3)"},
};

static void test_validate_rejects_corruption(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, NULL, &err), 0);
  for (int i = 0; i < (int)(sizeof corruptions / sizeof corruptions[0]); ++i) {
    assert_int_equal(append_rows(&b), 0);
    struct ArrowArray a;
    assert_int_equal(sl_builder_finish(&b, &a, &err), 0);
    struct size_override o = {NULL, 0, 0};
    struct sl_buffer_sizes sizes = {override_size_of, &o};
    assert_int_equal(sl_array_validate(&schema, &a, SL_VALIDATE_FULL_UTF8, &sizes, &err), 0);
    corrupt(i, &a, &o);
    sl_error_clear(&err);
    int rc = sl_array_validate(&schema, &a, corruptions[i].level, &sizes, &err);
    if (rc != EILSEQ || strstr(err.message, corruptions[i].message) == NULL) {
      fail_msg("corruption %d: rc %d, message '%s', wanted '%s'", i, rc, err.message,
               corruptions[i].message);
    }
    if (corruptions[i].level > SL_VALIDATE_MINIMAL) {  // a cheaper level does not look
      assert_int_equal(sl_array_validate(&schema, &a, corruptions[i].level - 1, &sizes, &err), 0);
    }
    a.release(&a);
  }
  sl_builder_release(&b);
  // Shape errors between schema and array.
  struct ArrowSchema other;
  node(&other, "+s", NULL, 1);
  node(other.children[0], "i", "x", 0);
  struct ArrowArray a;
  assert_int_equal(sl_array_init(&a, NULL, 1, 2, &err), 0);
  assert_int_equal(sl_array_validate(&other, &a, SL_VALIDATE_FULL, NULL, &err), EILSEQ);
  assert_non_null(strstr(err.message, "children"));
  a.release(&a);
  other.release(&other);
  schema.release(&schema);
}

/// A producer that validated its shared dictionaries as it built them (the
/// IPC reader) has them checked only for shape per batch: bad UTF-8 in a
/// dictionary of strings goes unseen there, an index past it or a dictionary
/// of the wrong shape does not.
static void test_validate_shared_dicts(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, NULL, &err), 0);
  for (int which = 0; which < 3; ++which) {
    assert_int_equal(append_rows(&b), 0);
    struct ArrowArray a;
    assert_int_equal(sl_builder_finish(&b, &a, &err), 0);
    struct ArrowArray* dict = a.children[9]->dictionary;
    ((uint8_t*)writable(dict, 2))[0] = 0xFF;  // "red" is no longer UTF-8
    assert_int_equal(sl_array_validate(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, &err), EILSEQ);
    assert_non_null(strstr(err.message, "column 'd.<dictionary>': invalid UTF-8"));
    if (which == 0) {
      assert_int_equal(
          sl_array_validate_shared_dicts(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, &err), 0);
    } else {
      const char* want = "column 'd': dictionary index 7 out of range (dictionary length 2)";
      if (which == 1) {
        put_i32(a.children[9], 1, 0, 7);
      } else {
        dict->n_buffers = 2;
        want = "column 'd.<dictionary>': has 2 buffers, type string needs 3";
      }
      sl_error_clear(&err);
      assert_int_equal(
          sl_array_validate_shared_dicts(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, &err), EILSEQ);
      if (strstr(err.message, want) == NULL) fail_msg("'%s', wanted '%s'", err.message, want);
      dict->n_buffers = 3;
    }
    a.release(&a);
  }
  sl_builder_release(&b);
  schema.release(&schema);
}

static void test_validate_utf8_edges(void** state) {
  (void)state;
  static const struct {
    const char* bytes;
    int ok;
  } cases[] = {
      {"plain ascii text longer than eight", 1}, {"\xc3\xa9", 1}, {"\xe2\x82\xac", 1},
      {"\xf0\x9f\x98\x80", 1}, {"\xc0\xaf", 0}, {"\xe0\x80\xaf", 0}, {"\xed\xa0\x80", 0},
      {"\xf4\x90\x80\x80", 0}, {"\xe2\x82", 0}, {"\x80", 0}, {"abcdefgh\xff", 0},
  };
  struct ArrowSchema s;
  node(&s, "u", "t", 0);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    struct sl_builder b;
    struct sluice_error err = {0};
    assert_int_equal(sl_builder_init_from_schema(&b, &s, NULL, &err), 0);
    assert_int_equal(sl_builder_append_string(&b, cases[i].bytes), 0);
    struct ArrowArray a;
    assert_int_equal(sl_builder_finish(&b, &a, &err), 0);
    int rc = sl_array_validate(&s, &a, SL_VALIDATE_FULL_UTF8, NULL, &err);
    assert_int_equal(rc, cases[i].ok ? 0 : EILSEQ);
    a.release(&a);
    sl_builder_release(&b);
  }
  s.release(&s);
}

// Bad bytes in a batch's column are named by their row in the stream (the
// write path's check) and the byte in the value; a null's bytes, which the
// Arrow format lets be anything, are not looked at.
static void test_validate_utf8_rows_and_nulls(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, NULL, &err), 0);
  assert_int_equal(append_rows(&b), 0);
  struct ArrowArray a;
  assert_int_equal(sl_builder_finish(&b, &a, &err), 0);
  struct ArrowArray* s = a.children[1];  // "row0", "h\xc3\xa9llo", "row2", null, "row4"
  ((uint8_t*)writable(s, 2))[2] = 0xFF;  // in "row0"
  assert_int_equal(sl_array_validate_rows(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, 1000, &err),
                   EILSEQ);
  assert_string_equal(err.message,
                      "column 's': invalid UTF-8 in row 1000, at byte 2 of the value (0xff)");
  ((uint8_t*)writable(s, 0))[0] &= (uint8_t)~1u;  // row 0 becomes a null
  s->null_count++;
  assert_int_equal(sl_array_validate_rows(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, 1000, &err), 0);
  ((uint8_t*)writable(s, 2))[6] = 0x80;  // "h\xc3\x80llo" is still fine: "h\xc3\xa9" -> "h\xc3\x80"
  assert_int_equal(sl_array_validate_rows(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, 0, &err), 0);
  ((uint8_t*)writable(s, 2))[6] = 'x';  // the \xc3 then lacks its second byte
  assert_int_equal(sl_array_validate_rows(&schema, &a, SL_VALIDATE_FULL_UTF8, NULL, 7, &err),
                   EILSEQ);
  assert_string_equal(err.message,
                      "column 's': invalid UTF-8 in row 8, at byte 1 of the value (0xc3)");
  a.release(&a);
  sl_builder_release(&b);
  schema.release(&schema);
}

/* ---- random corruption against exact-size buffers (ASan sees any overread) ------------ */

struct exact_copy {
  struct {
    const struct ArrowArray* array;
    int64_t buffer, size;
    void* block;
  } bufs[256];
  int n;
};

static int64_t exact_size_of(void* ctx, const struct ArrowArray* array, int64_t i) {
  const struct exact_copy* x = ctx;
  for (int k = 0; k < x->n; ++k) {
    if (x->bufs[k].array == array && x->bufs[k].buffer == i) return x->bufs[k].size;
  }
  return -1;
}

// Bytes buffer `i` of a valid array needs, from its type.
static int64_t needed_bytes(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t i) {
  struct sl_type t;
  assert_int_equal(sl_type_parse(s->format, &t, NULL), 0);
  int64_t end = a->offset + a->length;
  int unions = t.id == SL_TYPE_DENSE_UNION || t.id == SL_TYPE_SPARSE_UNION;
  if (unions) return i == 0 ? end : end * 4;
  if (i == 0) return (end + 7) / 8;
  int large = t.id == SL_TYPE_LARGE_BINARY || t.id == SL_TYPE_LARGE_STRING ||
              t.id == SL_TYPE_LARGE_LIST;
  if (i == 2) return large ? i64_at(a, 1, end) : i32_at(a, 1, end);
  switch (t.id) {
    case SL_TYPE_BINARY: case SL_TYPE_STRING: case SL_TYPE_LIST: case SL_TYPE_MAP:
    case SL_TYPE_LARGE_BINARY: case SL_TYPE_LARGE_STRING: case SL_TYPE_LARGE_LIST:
      return (end + 1) * (large ? 8 : 4);
    default: {
      int64_t bits = sl_type_bit_width(&t);
      return bits == 1 ? (end + 7) / 8 : end * (bits / 8);
    }
  }
}

static void copy_exact(const struct ArrowSchema* s, const struct ArrowArray* src,
                       struct ArrowArray* dst, struct exact_copy* x) {
  assert_int_equal(sl_array_init(dst, NULL, src->n_buffers, src->n_children, NULL), 0);
  dst->length = src->length;
  dst->offset = src->offset;
  dst->null_count = src->null_count;
  for (int64_t i = 0; i < src->n_buffers; ++i) {
    if (src->buffers[i] == NULL) continue;
    int64_t size = needed_bytes(s, src, i);
    void* block = malloc(size > 0 ? (size_t)size : 1);
    if (size > 0) memcpy(block, src->buffers[i], (size_t)size);
    sl_array_set_buffer_view(dst, i, block, NULL);
    assert_true(x->n < 256);
    x->bufs[x->n].array = dst;
    x->bufs[x->n].buffer = i;
    x->bufs[x->n].size = size;
    x->bufs[x->n].block = block;
    x->n++;
  }
  for (int64_t i = 0; i < src->n_children; ++i) {
    copy_exact(s->children[i], src->children[i], dst->children[i], x);
  }
  if (src->dictionary != NULL) {
    assert_int_equal(sl_array_alloc_dictionary(dst, NULL), 0);
    copy_exact(s->dictionary, src->dictionary, dst->dictionary, x);
  }
}

static void collect_nodes(struct ArrowArray* a, struct ArrowArray** nodes, int* n) {
  if (*n < 64) nodes[(*n)++] = a;
  for (int64_t i = 0; i < a->n_children; ++i) collect_nodes(a->children[i], nodes, n);
  if (a->dictionary != NULL) collect_nodes(a->dictionary, nodes, n);
}

static void test_validate_random_corruption(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_batch_schema(&schema);
  struct sl_builder b;
  struct sluice_error err = {0};
  assert_int_equal(sl_builder_init_from_schema(&b, &schema, NULL, &err), 0);
  assert_int_equal(append_rows(&b), 0);
  struct ArrowArray batch;
  assert_int_equal(sl_builder_finish(&b, &batch, &err), 0);
  uint64_t rng = 0x9E3779B97F4A7C15u;
  int rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    struct exact_copy x = {.n = 0};
    struct ArrowArray copy;
    copy_exact(&schema, &batch, &copy, &x);
    struct sl_buffer_sizes sizes = {exact_size_of, &x};
    assert_int_equal(sl_array_validate(&schema, &copy, SL_VALIDATE_FULL_UTF8, &sizes, &err), 0);
    for (int k = 0; k < 1 + iter % 3; ++k) {
      rng = rng * 6364136223846793005u + 1442695040888963407u;
      uint32_t r = (uint32_t)(rng >> 33);
      if (r % 4 == 0) {  // a length, offset or null_count
        struct ArrowArray* nodes[64];
        int n = 0;
        collect_nodes(&copy, nodes, &n);
        struct ArrowArray* victim = nodes[(r >> 2) % (uint32_t)n];
        int64_t delta = (int64_t)((r >> 12) % 5) - 2;
        switch ((r >> 8) % 3) {
          case 0: victim->length += delta; break;
          case 1: victim->offset += delta; break;
          default: victim->null_count += delta; break;
        }
      } else {  // a byte of some buffer
        int which = (int)((r >> 2) % (uint32_t)x.n);
        if (x.bufs[which].size > 0) {
          uint8_t* p = x.bufs[which].block;
          p[(r >> 10) % (uint64_t)x.bufs[which].size] = (uint8_t)(rng >> 17);
        }
      }
    }
    int rc = sl_array_validate(&schema, &copy, SL_VALIDATE_FULL_UTF8, &sizes, &err);
    assert_true(rc == 0 || rc == EILSEQ);
    rejected += rc != 0;
    copy.release(&copy);
    for (int k = 0; k < x.n; ++k) free(x.bufs[k].block);
  }
  assert_true(rejected > 1000);
  batch.release(&batch);
  sl_builder_release(&b);
  schema.release(&schema);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validate_rejects_corruption),
      cmocka_unit_test(test_validate_shared_dicts),
      cmocka_unit_test(test_validate_utf8_edges),
      cmocka_unit_test(test_validate_utf8_rows_and_nulls),
      cmocka_unit_test(test_validate_random_corruption),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
