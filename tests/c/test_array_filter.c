// Tests of sl_array_filter: every batch of the Arrow integration corpus (read
// with sluice's IPC reader) and a generated batch of every kind of column,
// filtered with many masks, plain and sliced (offsets at the top and in
// nested children); each output is validated and compared row by row with
// the input rows it keeps by a value comparison written here, independent
// of the filter. Also: known values checked by hand, exact-size buffers (for
// AddressSanitizer), dictionaries shared (the output outliving its input),
// unsupported types, and every allocation failing in turn.
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
#include "core/sl_row_filter.h"
#include "core/sl_type.h"
#include "core/sl_validate.h"
#include "format/ipc/ipc_reader.h"
#include "test_util.h"

/* ---- Value equality, written from the format spec alone ------------------------- */

static int bit_at(const void* bits, int64_t i) {
  return (((const uint8_t*)bits)[i >> 3] >> (i & 7)) & 1;
}

static struct sl_type type_of(const struct ArrowSchema* s) {
  struct sl_type t;
  if (sl_type_parse(s->format, &t, NULL) != 0) fail_msg("type '%s'", s->format);
  return t;
}

static int is_null_at(const struct sl_type* t, const struct ArrowArray* a, int64_t i) {
  if (t->id == SL_TYPE_NA) return 1;
  if (t->id == SL_TYPE_SPARSE_UNION || t->id == SL_TYPE_DENSE_UNION) return 0;
  return a->buffers[0] != NULL && !bit_at(a->buffers[0], a->offset + i);
}

static int64_t off_at(const struct ArrowArray* a, int large, int64_t i) {
  if (large) {
    int64_t v;
    memcpy(&v, (const uint8_t*)a->buffers[1] + i * 8, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, (const uint8_t*)a->buffers[1] + i * 4, 4);
  return v;
}

static int64_t index_at(const struct sl_type* t, const struct ArrowArray* a, int64_t i) {
  const uint8_t* p = a->buffers[1];
  int64_t k = a->offset + i;
  switch (t->id) {
    case SL_TYPE_INT8: return ((const int8_t*)p)[k];
    case SL_TYPE_UINT8: return p[k];
    case SL_TYPE_INT16: { int16_t v; memcpy(&v, p + k * 2, 2); return v; }
    case SL_TYPE_UINT16: { uint16_t v; memcpy(&v, p + k * 2, 2); return v; }
    case SL_TYPE_INT32: { int32_t v; memcpy(&v, p + k * 4, 4); return v; }
    case SL_TYPE_UINT32: { uint32_t v; memcpy(&v, p + k * 4, 4); return v; }
    default: { int64_t v; memcpy(&v, p + k * 8, 8); return v; }
  }
}

static int union_child(const struct sl_type* t, int8_t code) {
  for (int k = 0; k < t->n_type_codes; ++k)
    if (t->type_codes[k] == code) return k;
  fail_msg("union type code %d undeclared", code);
  return -1;
}

/// Whether row i of `a` and row j of `b` (logical rows, both of type `s`)
/// hold the same value; nulls equal nulls.
static int rows_equal(const struct ArrowSchema* s, const struct ArrowArray* a, int64_t i,
                      const struct ArrowArray* b, int64_t j) {
  struct sl_type t = type_of(s);
  int na = is_null_at(&t, a, i), nb = is_null_at(&t, b, j);
  if (na || nb) return na == nb;
  if (s->dictionary != NULL) {
    return rows_equal(s->dictionary, a->dictionary, index_at(&t, a, i), b->dictionary,
                      index_at(&t, b, j));
  }
  int64_t ia = a->offset + i, jb = b->offset + j;
  switch (t.id) {
    case SL_TYPE_BOOL:
      return bit_at(a->buffers[1], ia) == bit_at(b->buffers[1], jb);
    case SL_TYPE_BINARY: case SL_TYPE_STRING:
    case SL_TYPE_LARGE_BINARY: case SL_TYPE_LARGE_STRING: {
      int large = t.id == SL_TYPE_LARGE_BINARY || t.id == SL_TYPE_LARGE_STRING;
      int64_t sa = off_at(a, large, ia), la = off_at(a, large, ia + 1) - sa;
      int64_t sb = off_at(b, large, jb), lb = off_at(b, large, jb + 1) - sb;
      return la == lb && (la == 0 || memcmp((const uint8_t*)a->buffers[2] + sa,
                                            (const uint8_t*)b->buffers[2] + sb, (size_t)la) == 0);
    }
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_MAP: {
      int large = t.id == SL_TYPE_LARGE_LIST;
      int64_t sa = off_at(a, large, ia), la = off_at(a, large, ia + 1) - sa;
      int64_t sb = off_at(b, large, jb), lb = off_at(b, large, jb + 1) - sb;
      if (la != lb) return 0;
      for (int64_t k = 0; k < la; ++k)
        if (!rows_equal(s->children[0], a->children[0], sa + k, b->children[0], sb + k)) return 0;
      return 1;
    }
    case SL_TYPE_FIXED_SIZE_LIST:
      for (int64_t k = 0; k < t.list_size; ++k)
        if (!rows_equal(s->children[0], a->children[0], ia * t.list_size + k, b->children[0],
                        jb * t.list_size + k))
          return 0;
      return 1;
    case SL_TYPE_STRUCT:
      for (int64_t c = 0; c < s->n_children; ++c)
        if (!rows_equal(s->children[c], a->children[c], ia, b->children[c], jb)) return 0;
      return 1;
    case SL_TYPE_SPARSE_UNION: case SL_TYPE_DENSE_UNION: {
      int8_t ca = ((const int8_t*)a->buffers[0])[ia], cb = ((const int8_t*)b->buffers[0])[jb];
      if (ca != cb) return 0;
      int c = union_child(&t, ca);
      int64_t ra = ia, rb = jb;
      if (t.id == SL_TYPE_DENSE_UNION) {
        ra = ((const int32_t*)a->buffers[1])[ia];
        rb = ((const int32_t*)b->buffers[1])[jb];
      }
      return rows_equal(s->children[c], a->children[c], ra, b->children[c], rb);
    }
    case SL_TYPE_NA:
      return 1;
    default: {
      int64_t w = sl_type_bit_width(&t) / 8;
      return w == 0 || memcmp((const uint8_t*)a->buffers[1] + ia * w,
                              (const uint8_t*)b->buffers[1] + jb * w, (size_t)w) == 0;
    }
  }
}

/* ---- Shape of the output ---------------------------------------------------------- */

/// Every node of `out` (but a dictionary, which may be shared) has offset
/// 0, an exact null_count, and buffers of its own: aligned, owned (not a
/// view), none of them in's.
static void check_own_node(const struct ArrowSchema* s, const struct ArrowArray* out,
                           const struct ArrowArray* in, int check_dictionary_shared) {
  struct sl_type t = type_of(s);
  assert_int_equal(out->offset, 0);
  assert_int_equal(out->n_buffers, sl_type_n_buffers(t.id));
  int64_t nulls = 0;
  for (int64_t i = 0; i < out->length; ++i) nulls += is_null_at(&t, out, i);
  if (out->null_count != nulls)
    fail_msg("column '%s': null_count %lld, %lld nulls", s->name, (long long)out->null_count,
             (long long)nulls);
  for (int64_t i = 0; i < out->n_buffers; ++i) {
    if (out->buffers[i] == NULL) continue;
    assert_int_equal((uintptr_t)out->buffers[i] % 64, 0);
    assert_null(sl_array_buffer_owner(out, i));
    for (int64_t k = 0; k < in->n_buffers; ++k) assert_ptr_not_equal(out->buffers[i], in->buffers[k]);
  }
  for (int64_t c = 0; c < s->n_children; ++c)
    check_own_node(s->children[c], out->children[c], in->children[c], check_dictionary_shared);
  if (s->dictionary != NULL && check_dictionary_shared) {
    // The readers' dictionaries are reference-held: shared, not copied.
    for (int64_t i = 0; i < in->dictionary->n_buffers; ++i)
      assert_ptr_equal(out->dictionary->buffers[i], in->dictionary->buffers[i]);
  }
}

/* ---- Masks -------------------------------------------------------------------------- */

enum { N_MASKS = 11 };

/// Mask `kind` over n rows into `bits` ((n + 7) / 8 bytes; the bits past n in
/// the last byte are set, as junk the filter must ignore). Returns the count.
static int64_t make_mask(int kind, int64_t n, uint8_t* bits) {
  size_t bytes = (size_t)(n + 7) / 8;
  memset(bits, 0, bytes);
  uint64_t x = 0x9E3779B97F4A7C15u + (uint64_t)kind;
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int keep = 0;
    switch (kind) {
      case 0: keep = 1; break;                        // all
      case 1: keep = 0; break;                        // none
      case 2: keep = r % 2 == 0; break;               // even rows
      case 3: keep = r % 2 == 1; break;               // odd rows
      case 4: keep = (x & 1) != 0; break;             // random half
      case 5: keep = (x & 15) == 0; break;            // random, sparse
      case 6: keep = (x & 15) != 0; break;            // random, dense
      case 7: keep = r == 0; break;                   // first only
      case 8: keep = r == n - 1; break;               // last only
      case 9: keep = (r / 70) % 2 == 0; break;        // runs across words
      default: keep = (r % 200) >= 3; break;          // whole words of ones
    }
    if (keep) {
      bits[r >> 3] |= (uint8_t)(1u << (r & 7));
      count++;
    }
  }
  if (n % 8 != 0) bits[n >> 3] |= (uint8_t)(0xFFu << (n % 8));
  return count;
}

/// Filters `in` with every mask; validates and compares each output with
/// `expect` (rows equal to in's, possibly another copy).
static void check_masks(const struct ArrowSchema* schema, const struct ArrowArray* in,
                        const struct ArrowArray* expect, int dictionary_shared,
                        const char* what) {
  int64_t n = in->length;
  uint8_t* bits = malloc(n > 0 ? (size_t)(n + 7) / 8 : 1);  // exact: over-reads show
  assert_non_null(bits);
  for (int kind = 0; kind < N_MASKS; ++kind) {
    int64_t count = make_mask(kind, n, bits);
    struct ArrowArray out;
    struct sluice_error err = {0};
    int rc = sl_array_filter(schema, in, bits, count, NULL, &out, &err);
    if (rc != 0) fail_msg("%s, mask %d: %s", what, kind, err.message);
    rc = sl_array_validate(schema, &out, SL_VALIDATE_FULL_UTF8, NULL, &err);
    if (rc != 0) fail_msg("%s, mask %d: output invalid: %s", what, kind, err.message);
    assert_int_equal(out.length, count);
    check_own_node(schema, &out, in, dictionary_shared);
    int64_t j = 0;
    for (int64_t r = 0; r < n; ++r) {
      if (!bit_at(bits, r)) continue;
      if (!rows_equal(schema, expect, r, &out, j))
        fail_msg("%s, mask %d: output row %lld differs from input row %lld", what, kind,
                 (long long)j, (long long)r);
      ++j;
    }
    assert_int_equal(j, count);
    out.release(&out);
  }
  free(bits);
}

/* ---- Sliced inputs ------------------------------------------------------------------- */

/// A view of `src` (not retaining anything: `src` outlives it).
static void view_of(const struct ArrowArray* src, struct ArrowArray* out) {
  struct sluice_error err = {0};
  if (sl_array_view(src, NULL, NULL, out, &err) != 0) fail_msg("%s", err.message);
}

/// Moves the start of every node below `a` (not dictionaries) one row on
/// where the result stays valid, so children carry offsets of their own.
static void slice_children(const struct ArrowSchema* root, struct ArrowArray* top,
                           const struct ArrowSchema* s, struct ArrowArray* a) {
  for (int64_t c = 0; c < a->n_children; ++c) {
    struct ArrowArray* child = a->children[c];
    if (child->length > 0) {
      child->offset += 1;
      child->length -= 1;
      int64_t saved = child->null_count;
      child->null_count = -1;
      if (sl_array_validate(root, top, SL_VALIDATE_FULL, NULL, NULL) != 0) {
        child->offset -= 1;
        child->length += 1;
        child->null_count = saved;
      }
    }
    slice_children(root, top, s->children[c], child);
  }
}

static int64_t sliced_nodes(const struct ArrowArray* a) {
  int64_t n = a->offset > 0;
  for (int64_t c = 0; c < a->n_children; ++c) n += sliced_nodes(a->children[c]);
  return n;
}

/// The batch filtered as is, sliced at the top (offset 1..), and with
/// offsets in its children (top shortened by one row so they may move).
static int64_t check_batch(const struct ArrowSchema* schema, const struct ArrowArray* batch,
                           const struct ArrowArray* twin, int dictionary_shared,
                           const char* what) {
  char label[600];
  check_masks(schema, batch, twin, dictionary_shared, what);
  if (batch->length < 2) return 0;
  struct ArrowArray v;
  view_of(batch, &v);
  v.offset = 1;
  v.length -= 1;
  v.null_count = -1;
  snprintf(label, sizeof label, "%s sliced", what);
  // A view's buffers are owner-less views: its dictionary is copied.
  check_masks(schema, &v, &v, 0, label);
  v.release(&v);

  view_of(batch, &v);
  v.length -= 1;
  slice_children(schema, &v, schema, &v);
  struct sluice_error err = {0};
  if (sl_array_validate(schema, &v, SL_VALIDATE_FULL, NULL, &err) != 0)
    fail_msg("%s: %s", what, err.message);
  int64_t moved = sliced_nodes(&v);
  snprintf(label, sizeof label, "%s children sliced", what);
  check_masks(schema, &v, &v, 0, label);
  v.release(&v);
  return moved;
}

/* ---- The integration corpus ----------------------------------------------------------- */

static const char* const k_corpus_files[] = {
  "generated_primitive", "generated_primitive_large_offsets", "generated_primitive_zerolength",
  "generated_primitive_no_batches", "generated_nested", "generated_recursive_nested",
  "generated_nested_large_offsets", "generated_union", "generated_dictionary",
  "generated_dictionary_unsigned", "generated_nested_dictionary", "generated_datetime",
  "generated_interval", "generated_decimal", "generated_decimal256", "generated_map",
  "generated_map_non_canonical", "generated_null", "generated_null_trivial",
  "generated_duplicate_fieldnames", "generated_custom_metadata", "generated_extension",
};

static const char k_corpus_dir[] = "arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian";

static int read_corpus(const char* base, struct test_batches* out) {
  char rel[512], path[1024];
  snprintf(rel, sizeof rel, "%s/%s.arrow_file", k_corpus_dir, base);
  test_corpus_path(rel, path, sizeof path);
  struct sluice_error err = {0};
  int rc = test_batches_read(sl_ipc_file_reader(), path, 0, 1, out, &err);
  if (rc == ENOENT) return rc;
  if (rc != 0) fail_msg("%s: %s", path, err.message);
  return 0;
}

static void test_corpus(void** state) {
  (void)state;
  int files = 0;
  int64_t batches = 0, rows = 0, moved = 0;
  for (size_t f = 0; f < sizeof k_corpus_files / sizeof *k_corpus_files; ++f) {
    static struct test_batches a, b;  // large: off the stack
    if (read_corpus(k_corpus_files[f], &a) != 0) continue;
    assert_int_equal(read_corpus(k_corpus_files[f], &b), 0);
    files++;
    for (int64_t k = 0; k < a.n; ++k) {
      char what[256];
      snprintf(what, sizeof what, "%s batch %lld", k_corpus_files[f], (long long)k);
      moved += check_batch(&a.schema, &a.arrays[k], &b.arrays[k], 1, what);
      batches++;
      rows += a.arrays[k].length;
      // The input is unchanged (compared with its twin), and the output
      // stands on its own: it outlives the batch it came from.
      for (int64_t r = 0; r < a.arrays[k].length; ++r)
        assert_true(rows_equal(&a.schema, &a.arrays[k], r, &b.arrays[k], r));
      int64_t n = a.arrays[k].length;
      uint8_t* bits = malloc((size_t)(n + 7) / 8 + 1);
      int64_t count = make_mask(4, n, bits);
      struct ArrowArray out;
      struct sluice_error err = {0};
      assert_int_equal(sl_array_filter(&a.schema, &a.arrays[k], bits, count, NULL, &out, &err), 0);
      a.arrays[k].release(&a.arrays[k]);
      assert_int_equal(sl_array_validate(&a.schema, &out, SL_VALIDATE_FULL, NULL, &err), 0);
      for (int64_t r = 0, j = 0; r < n; ++r)
        if (bit_at(bits, r)) assert_true(rows_equal(&a.schema, &b.arrays[k], r, &out, j++));
      out.release(&out);
      free(bits);
    }
    test_batches_release(&a);
    test_batches_release(&b);
  }
  print_message("%d files, %lld batches, %lld rows, %lld sliced nodes\n", files, (long long)batches,
                (long long)rows, (long long)moved);
  if (files == 0) skip();
  assert_int_equal(files, (int)(sizeof k_corpus_files / sizeof *k_corpus_files));
  assert_true(batches >= 50);
  assert_true(rows > 0);
  assert_true(moved >= 100);  // offsets really reached nested children
}

/* ---- A generated batch: long, with every kind of column -------------------------------- */

static struct ArrowSchema* node(struct ArrowSchema* s, const char* fmt, const char* name,
                                int64_t n_children) {
  assert_int_equal(sl_schema_init(s, NULL, fmt, name, ARROW_FLAG_NULLABLE, n_children, NULL), 0);
  return s;
}

enum { N_COLS = 17 };

static void make_schema(struct ArrowSchema* root) {
  node(root, "+s", "", N_COLS);
  struct ArrowSchema** c = root->children;
  node(c[0], "l", "i64", 0);
  node(c[1], "u", "str", 0);
  node(c[2], "b", "flag", 0);
  node(node(c[3], "+l", "list", 1)->children[0], "i", "item", 0);
  node(c[4], "e", "half", 0);
  node(c[5], "tin", "mdn", 0);
  node(c[6], "w:3", "fsb", 0);
  node(node(c[7], "+w:2", "fsl", 1)->children[0], "s", "item", 0);
  node(c[8], "c", "dict", 0);
  assert_int_equal(sl_schema_alloc_dictionary(c[8], NULL), 0);
  node(c[8]->dictionary, "u", NULL, 0);
  node(c[9], "U", "lstr", 0);
  node(c[10], "+ud:0,1", "dense", 2);
  node(c[10]->children[0], "i", "a", 0);
  node(c[10]->children[1], "u", "b", 0);
  node(c[11], "+us:5,7", "sparse", 2);
  node(c[11]->children[0], "l", "x", 0);
  node(c[11]->children[1], "b", "y", 0);
  struct ArrowSchema* entries = node(node(c[12], "+m", "map", 1)->children[0], "+s", "entries", 2);
  node(entries->children[0], "u", "key", 0)->flags = 0;
  node(entries->children[1], "g", "value", 0);
  node(c[13], "n", "nothing", 0);
  node(c[14], "d:30,4,256", "dec256", 0);
  struct ArrowSchema* ls = node(node(c[15], "+L", "llist", 1)->children[0], "+s", "item", 2);
  node(ls->children[0], "z", "bin", 0);
  node(node(ls->children[1], "+l", "inner", 1)->children[0], "C", "item", 0);
  node(c[16], "tDm", "dur", 0);
}

#define RC(expr)              \
  do {                        \
    int rc_ = (expr);         \
    if (rc_ != 0) return rc_; \
  } while (0)

static int append_row(struct sl_builder* b, int64_t r) {
  struct sl_builder* c = b->children;
  char text[64];
  snprintf(text, sizeof text, "s%lld%.*s", (long long)r, (int)(r % 5), "xxxxx");
  RC(r % 7 == 3 ? sl_builder_append_null(&c[0]) : sl_builder_append_int64(&c[0], r * 3 - 500));
  RC(r % 5 == 1 ? sl_builder_append_null(&c[1]) : sl_builder_append_string(&c[1], r % 9 ? text : ""));
  RC(r % 11 == 0 ? sl_builder_append_null(&c[2]) : sl_builder_append_bool(&c[2], r % 3 == 0));
  if (r % 13 == 2) {
    RC(sl_builder_append_null(&c[3]));
  } else {
    for (int64_t k = 0; k < r % 4; ++k)
      RC(k == 1 && r % 2 ? sl_builder_append_null(&c[3].children[0])
                         : sl_builder_append_int32(&c[3].children[0], (int32_t)(r * 10 + k)));
    RC(sl_builder_list_finish(&c[3]));
  }
  RC(sl_builder_append_uint16(&c[4], (uint16_t)(r * 7)));
  uint8_t mdn[16];
  for (int k = 0; k < 16; ++k) mdn[k] = (uint8_t)(r * 31 + k);
  RC(r % 17 == 5 ? sl_builder_append_null(&c[5]) : sl_builder_append_fixed(&c[5], mdn));
  RC(sl_builder_append_fixed(&c[6], text));
  if (r % 6 == 4) {
    RC(sl_builder_append_null(&c[7]));
  } else {
    RC(sl_builder_append_int16(&c[7].children[0], (int16_t)r));
    RC(sl_builder_append_int16(&c[7].children[0], (int16_t)-r));
    RC(sl_builder_list_finish(&c[7]));
  }
  RC(r % 9 == 4 ? sl_builder_append_null(&c[8]) : sl_builder_append_int8(&c[8], (int8_t)(r % 5)));
  RC(r % 8 == 7 ? sl_builder_append_null(&c[9]) : sl_builder_append_string(&c[9], text));
  if (r % 3 == 0) {
    RC(sl_builder_append_string(&c[10].children[sl_builder_union_child(&c[10], 1)], text));
    RC(sl_builder_union_finish(&c[10], 1));
  } else {
    RC(sl_builder_append_int32(&c[10].children[sl_builder_union_child(&c[10], 0)], (int32_t)r));
    RC(sl_builder_union_finish(&c[10], 0));
  }
  if (r % 4 == 1) {
    RC(sl_builder_append_bool(&c[11].children[sl_builder_union_child(&c[11], 7)], r % 8 == 1));
    RC(sl_builder_union_finish(&c[11], 7));
  } else {
    RC(sl_builder_append_int64(&c[11].children[sl_builder_union_child(&c[11], 5)], -r));
    RC(sl_builder_union_finish(&c[11], 5));
  }
  if (r % 10 == 9) {
    RC(sl_builder_append_null(&c[12]));
  } else {
    struct sl_builder* e = &c[12].children[0];
    for (int64_t k = 0; k < r % 3; ++k) {
      RC(sl_builder_append_string(&e->children[0], k ? "b" : "a"));
      RC(k ? sl_builder_append_null(&e->children[1]) : sl_builder_append_double(&e->children[1], r * 0.5));
      RC(sl_builder_struct_finish(e));
    }
    RC(sl_builder_list_finish(&c[12]));
  }
  RC(sl_builder_append_null(&c[13]));
  RC(r % 12 == 0 ? sl_builder_append_null(&c[14]) : sl_builder_append_decimal_int64(&c[14], r * -997));
  if (r % 14 == 6) {
    RC(sl_builder_append_null(&c[15]));
  } else {
    struct sl_builder* item = &c[15].children[0];
    for (int64_t k = 0; k < (r % 5) / 2; ++k) {
      if (k == 1 && r % 3 == 0) {
        RC(sl_builder_append_null(item));
        continue;
      }
      RC(sl_builder_append_binary(&item->children[0], text, (int64_t)k + 1));
      struct sl_builder* inner = &item->children[1];
      for (int64_t m = 0; m < (r + k) % 3; ++m)
        RC(sl_builder_append_uint8(&inner->children[0], (uint8_t)(r + m)));
      RC(sl_builder_list_finish(inner));
      RC(sl_builder_struct_finish(item));
    }
    RC(sl_builder_list_finish(&c[15]));
  }
  RC(r % 19 == 0 ? sl_builder_append_null(&c[16]) : sl_builder_append_int64(&c[16], r * 1000));
  return sl_builder_struct_finish(b);
}

/// A batch of n rows of make_schema's columns; its dictionary's buffers are
/// the node's own (not reference-held), so a filter must copy it.
static int make_batch(const struct ArrowSchema* schema, int64_t n,
                      const struct sluice_allocator* alloc, struct ArrowArray* out,
                      struct sluice_error* error) {
  struct sl_builder b;
  RC(sl_builder_init_from_schema(&b, schema, alloc, error));
  int rc = 0;
  for (int64_t r = 0; rc == 0 && r < n; ++r) rc = append_row(&b, r);
  static const char* const colours[] = {"red", "green", "blue", "", "violet"};
  for (int k = 0; rc == 0 && k < 5; ++k)
    rc = sl_builder_append_string(sl_builder_dictionary(&b.children[8]), colours[k]);
  if (rc == 0) rc = sl_builder_finish(&b, out, error);
  else sl_error_set(error, rc, "building the test batch");
  sl_builder_release(&b);
  return rc;
}

static void test_generated(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_schema(&schema);
  static const int64_t lengths[] = {1, 2, 63, 64, 65, 200, 1000};
  for (size_t l = 0; l < sizeof lengths / sizeof *lengths; ++l) {
    struct ArrowArray batch;
    struct sluice_error err = {0};
    if (make_batch(&schema, lengths[l], NULL, &batch, &err) != 0) fail_msg("%s", err.message);
    if (sl_array_validate(&schema, &batch, SL_VALIDATE_FULL_UTF8, NULL, &err) != 0)
      fail_msg("%s", err.message);
    char what[64];
    snprintf(what, sizeof what, "generated, %lld rows", (long long)lengths[l]);
    int64_t moved = check_batch(&schema, &batch, &batch, 0, what);
    if (lengths[l] >= 200) assert_true(moved >= 15);
    batch.release(&batch);
  }
  schema.release(&schema);
}

/// Known values, checked by hand: the comparison above is no tautology.
static void test_known_values(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_schema(&schema);
  struct ArrowArray batch, out;
  struct sluice_error err = {0};
  assert_int_equal(make_batch(&schema, 100, NULL, &batch, &err), 0);
  // Rows 3 (i64 null), 4, 64, 99, from a view starting at row 1.
  struct ArrowArray v;
  view_of(&batch, &v);
  v.offset = 1;
  v.length = 99;
  uint8_t bits[13] = {0};
  int64_t rows[] = {3, 4, 64, 99};
  for (int k = 0; k < 4; ++k) bits[(rows[k] - 1) / 8] |= (uint8_t)(1u << ((rows[k] - 1) % 8));
  assert_int_equal(sl_array_filter(&schema, &v, bits, 4, NULL, &out, &err), 0);
  assert_int_equal(out.length, 4);
  const struct ArrowArray* i64 = out.children[0];
  assert_int_equal(i64->null_count, 1);
  assert_false(bit_at(i64->buffers[0], 0));
  const int64_t* values = i64->buffers[1];
  assert_int_equal(values[1], 4 * 3 - 500);
  assert_int_equal(values[2], 64 * 3 - 500);
  assert_int_equal(values[3], 99 * 3 - 500);
  // str: row 3 "s3xxx", 4 "s4xxxx", 64 "s64xxxx", 99 "" (99 % 9 == 0).
  const struct ArrowArray* str = out.children[1];
  const int32_t* offs = str->buffers[1];
  assert_int_equal(offs[0], 0);
  assert_int_equal(offs[3], 18);
  assert_int_equal(offs[4], 18);
  assert_memory_equal((const char*)str->buffers[2], "s3xxxs4xxxxs64xxxx", 18);
  // list: row 3 [30, null, 32], 4 [], 64 [], 99 [990, null, 992]
  const struct ArrowArray* list = out.children[3];
  const int32_t* lo = list->buffers[1];
  assert_int_equal(lo[1], 3);
  assert_int_equal(lo[2], 3);
  assert_int_equal(lo[3], 3);
  assert_int_equal(lo[4], 6);
  const int32_t* items = list->children[0]->buffers[1];
  assert_int_equal(items[0], 30);
  assert_int_equal(items[5], 992);
  assert_int_equal(list->children[0]->null_count, 2);
  // dense union: row 3 and 99 are strings (code 1), 4 and 64 ints (code 0).
  const struct ArrowArray* du = out.children[10];
  const int8_t* ids = du->buffers[0];
  const int32_t* doffs = du->buffers[1];
  assert_int_equal(ids[0], 1);
  assert_int_equal(ids[1], 0);
  assert_int_equal(ids[3], 1);
  assert_int_equal(doffs[0], 0);
  assert_int_equal(doffs[1], 0);
  assert_int_equal(doffs[2], 1);
  assert_int_equal(doffs[3], 1);
  assert_int_equal(((const int32_t*)du->children[0]->buffers[1])[1], 64);
  assert_int_equal(du->children[1]->length, 2);
  // dictionary copied (the builder's own buffers), indices kept.
  assert_int_equal(out.children[8]->dictionary->length, 5);
  assert_ptr_not_equal(out.children[8]->dictionary->buffers[2], batch.children[8]->dictionary->buffers[2]);
  assert_int_equal(((const int8_t*)out.children[8]->buffers[1])[2], 64 % 5);
  // A comparison that must fail: row 4 is not row 64.
  assert_false(rows_equal(&schema, &v, 3, &out, 2));
  out.release(&out);
  v.release(&v);
  batch.release(&batch);
  schema.release(&schema);
}

/// Buffers of exactly the size their columns need, at odd offsets, so that
/// AddressSanitizer sees any read past them (the filter loads words).
static void test_exact_buffers(void** state) {
  (void)state;
  struct ArrowSchema schema;
  node(&schema, "+s", "", 3);
  node(schema.children[0], "l", "i64", 0);
  node(schema.children[1], "b", "flag", 0);
  node(schema.children[2], "u", "str", 0);
  for (int64_t n = 1; n <= 200; n += (n < 140 ? 1 : 29)) {
    for (int64_t off = 0; off < 11; off += 5) {
      int64_t end = off + n, bytes = (end + 7) / 8;
      uint8_t* validity = malloc((size_t)bytes);
      uint8_t* flags = malloc((size_t)bytes);
      int64_t* values = malloc((size_t)end * 8);
      int32_t* offsets = malloc((size_t)(end + 1) * 4);
      char* text = malloc((size_t)end * 2);
      offsets[0] = 0;
      for (int64_t i = 0; i < end; ++i) {
        values[i] = i * 11;
        text[2 * i] = (char)('a' + i % 26);
        text[2 * i + 1] = (char)('A' + i % 26);
        offsets[i + 1] = offsets[i] + 1 + (int32_t)(i % 2);  // lengths 1, 2, 1, 2 ...
      }
      memset(validity, 0, (size_t)bytes);
      memset(flags, 0, (size_t)bytes);
      for (int64_t i = 0; i < end; ++i) {
        if (i % 3 != 0) validity[i / 8] |= (uint8_t)(1u << (i % 8));
        if (i % 5 < 2) flags[i / 8] |= (uint8_t)(1u << (i % 8));
      }
      struct ArrowArray in;
      assert_int_equal(sl_array_init(&in, NULL, 1, 3, NULL), 0);
      in.length = n;
      in.offset = 0;
      for (int c = 0; c < 3; ++c) {
        assert_int_equal(sl_array_init(in.children[c], NULL, c == 2 ? 3 : 2, 0, NULL), 0);
        in.children[c]->length = n;
        in.children[c]->offset = off;
        in.children[c]->null_count = -1;
        sl_array_set_buffer_view(in.children[c], 0, validity, NULL);
      }
      sl_array_set_buffer_view(in.children[0], 1, values, NULL);
      sl_array_set_buffer_view(in.children[1], 1, flags, NULL);
      sl_array_set_buffer_view(in.children[2], 1, offsets, NULL);
      sl_array_set_buffer_view(in.children[2], 2, text, NULL);
      struct sluice_error err = {0};
      if (sl_array_validate(&schema, &in, SL_VALIDATE_FULL, NULL, &err) != 0)
        fail_msg("%s", err.message);
      check_masks(&schema, &in, &in, 0, "exact buffers");
      in.release(&in);
      free(validity);
      free(flags);
      free(values);
      free(offsets);
      free(text);
    }
  }
  schema.release(&schema);
}

/* ---- Errors --------------------------------------------------------------------------- */

static void test_unsupported(void** state) {
  (void)state;
  static const char* const formats[] = {"vu", "vz", "+vl", "+r", "+vL", "?"};
  for (size_t f = 0; f < sizeof formats / sizeof *formats; ++f) {
    struct ArrowSchema schema;
    node(&schema, "+s", "", 2);
    node(schema.children[0], "i", "ok", 0);
    node(schema.children[1], formats[f], "odd", 0);
    struct ArrowArray in, out;
    assert_int_equal(sl_array_init(&in, NULL, 1, 2, NULL), 0);
    in.length = 1;
    static const int32_t one = 1;
    assert_int_equal(sl_array_init(in.children[0], NULL, 2, 0, NULL), 0);
    in.children[0]->length = 1;
    sl_array_set_buffer_view(in.children[0], 1, &one, NULL);
    assert_int_equal(sl_array_init(in.children[1], NULL, 3, 0, NULL), 0);
    in.children[1]->length = 1;
    struct test_allocator ta;
    test_allocator_init(&ta);
    struct sluice_error err = {0};
    uint8_t bits = 1;
    assert_int_equal(sl_array_filter(&schema, &in, &bits, 1, &ta.base, &out, &err), ENOTSUP);
    assert_non_null(strstr(err.message, formats[f]));
    assert_null(out.release);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
    // A count that does not match the selection is refused.
    assert_int_equal(sl_array_filter(&schema, &in, &bits, 2, &ta.base, &out, &err), EINVAL);
    in.release(&in);
    schema.release(&schema);
  }
}

struct sweep_ctx {
  const struct ArrowSchema* schema;
  const struct ArrowArray* in;
  const uint8_t* bits;
  int64_t count;
};

static int sweep_attempt(void* ctx, const struct sluice_allocator* alloc,
                         struct sluice_error* error) {
  struct sweep_ctx* c = ctx;
  struct ArrowArray out;
  int rc = sl_array_filter(c->schema, c->in, c->bits, c->count, alloc, &out, error);
  if (rc != 0) {
    assert_null(out.release);
    return rc;
  }
  struct sluice_error err = {0};
  if (sl_array_validate(c->schema, &out, SL_VALIDATE_FULL, NULL, &err) != 0)
    fail_msg("%s", err.message);
  assert_int_equal(out.length, c->count);
  out.release(&out);
  return 0;
}

static void sweep(const struct ArrowSchema* schema, const struct ArrowArray* in, int kind) {
  uint8_t* bits = malloc((size_t)(in->length + 7) / 8 + 1);
  struct sweep_ctx ctx = {schema, in, bits, make_mask(kind, in->length, bits)};
  long long failures = test_alloc_sweep(sweep_attempt, &ctx, 10000);
  if (in->length > 0 && ctx.count > 0) assert_true(failures > 0);
  free(bits);
}

static void test_allocation_failures(void** state) {
  (void)state;
  struct ArrowSchema schema;
  make_schema(&schema);
  struct ArrowArray batch;
  struct sluice_error err = {0};
  assert_int_equal(make_batch(&schema, 300, NULL, &batch, &err), 0);
  for (int kind = 0; kind < N_MASKS; ++kind) sweep(&schema, &batch, kind);
  batch.release(&batch);
  schema.release(&schema);
  // Corpus batches: shared dictionaries, nested dictionaries, unions.
  static const char* const files[] = {"generated_nested_dictionary", "generated_union",
                                      "generated_nested", "generated_map"};
  for (size_t f = 0; f < sizeof files / sizeof *files; ++f) {
    static struct test_batches b;
    if (read_corpus(files[f], &b) != 0) continue;
    for (int64_t k = 0; k < b.n; ++k) sweep(&b.schema, &b.arrays[k], 4);
    test_batches_release(&b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_values),
      cmocka_unit_test(test_generated),
      cmocka_unit_test(test_corpus),
      cmocka_unit_test(test_exact_buffers),
      cmocka_unit_test(test_unsupported),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
