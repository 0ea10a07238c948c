// Arrow IPC writer tests: flatbuffer builder against the reader's
// flatbuffer parser, message framing and file layout, dictionaries, errors,
// allocation failures. Values are checked by pyarrow in
// tests/py/test_ipc_write_pyarrow.py, which runs this program as
// `test_ipc_write --emit DIR` to get the same files written.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/ipc/fb_build.h"
#include "format/ipc/fb_read.h"
#include "format/ipc/ipc_fbs.h"
#include "format/ipc/ipc_writer.h"
#include "io/sl_sink.h"
#include "test_util.h"

/* ---- Hand-built arrays ---------------------------------------------------- */
// Nodes live in a pool and point at static data; release callbacks only mark
// the node released, so a stream can hand out shallow copies.

#define MAX_KIDS 40

struct tarr {
  struct ArrowArray a;
  const void* bufs[3];
  struct ArrowArray* kids[MAX_KIDS];
};

struct tsch {
  struct ArrowSchema s;
  struct ArrowSchema* kids[MAX_KIDS];
};

struct pool {
  struct tarr arr[128];
  int na;
  struct tsch sch[128];
  int ns;
};

static void release_array(struct ArrowArray* a) { a->release = NULL; }
static void release_schema(struct ArrowSchema* s) { s->release = NULL; }

static struct ArrowArray* arr(struct pool* p, int64_t len, int64_t nulls, int64_t off, int nb,
                              const void* b0, const void* b1, const void* b2) {
  struct tarr* t = &p->arr[p->na++];
  assert_true(p->na <= 128);
  t->bufs[0] = b0;
  t->bufs[1] = b1;
  t->bufs[2] = b2;
  t->a.length = len;
  t->a.null_count = nulls;
  t->a.offset = off;
  t->a.n_buffers = nb;
  t->a.buffers = t->bufs;
  t->a.children = t->kids;
  t->a.release = release_array;
  return &t->a;
}

static struct ArrowArray* kid(struct ArrowArray* parent, struct ArrowArray* child) {
  assert_true(parent->n_children < MAX_KIDS);
  ((struct tarr*)(void*)parent)->kids[parent->n_children++] = child;
  return parent;
}

static struct ArrowSchema* sch(struct pool* p, const char* format, const char* name,
                               int64_t flags) {
  struct tsch* t = &p->sch[p->ns++];
  assert_true(p->ns <= 128);
  t->s.format = format;
  t->s.name = name;
  t->s.flags = flags;
  t->s.children = t->kids;
  t->s.release = release_schema;
  return &t->s;
}

static struct ArrowSchema* skid(struct ArrowSchema* parent, struct ArrowSchema* child) {
  assert_true(parent->n_children < MAX_KIDS);
  ((struct tsch*)(void*)parent)->kids[parent->n_children++] = child;
  return parent;
}

/// Adds column (schema, array) to a record batch under construction.
static void column(struct ArrowSchema* root, struct ArrowArray* batch, struct ArrowSchema* s,
                   struct ArrowArray* a) {
  skid(root, s);
  kid(batch, a);
}

/// A stream handing out shallow copies of fixed batches.
struct tstream {
  struct ArrowSchema* schema;
  struct ArrowArray* batches[8];
  int n, next;
};

static int ts_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct tstream* t = s->private_data;
  *out = *t->schema;
  return 0;
}

static int ts_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct tstream* t = s->private_data;
  if (t->next < t->n) *out = *t->batches[t->next++];
  else out->release = NULL;
  return 0;
}

static const char* ts_last_error(struct ArrowArrayStream* s) {
  (void)s;
  return NULL;
}

static void ts_release(struct ArrowArrayStream* s) { s->release = NULL; }

static struct ArrowArrayStream make_stream(struct tstream* t) {
  struct ArrowArrayStream s = {ts_get_schema, ts_get_next, ts_last_error, ts_release, t};
  t->next = 0;
  return s;
}

/* ---- Test data: every type, sliced ---------------------------------------- */
// Every column has 5 physical slots, child offset 1, and the batch (offset 1,
// length 3) selects physical slots 2..4, so bitmaps start at bit 2 and
// offsets buffers must be rebased. Slot 3 is null where there is validity.

#define N 0
#define NUL 2  // ARROW_FLAG_NULLABLE

static const uint8_t valid = 0x17;  // slot 3 null

static void add_all_types(struct pool* p, struct ArrowSchema* root, struct ArrowArray* b) {
  static const uint8_t bools = 0x05;
  static const int8_t i8[] = {-1, -2, -3, -4, -5};
  static const uint16_t u16[] = {1, 2, 3, 4, 65535};
  static const int32_t i32[] = {10, 20, 30, 40, 50};
  static const uint64_t u64[] = {0, 1, 2, 3, UINT64_MAX};
  static const uint16_t f16[] = {0x3C00, 0x4000, 0x4200, 0x4400, 0xC000};
  static const float f32[] = {0.5f, 1.5f, 2.5f, 3.5f, 4.5f};
  static const double f64[] = {0.25, 1.25, 2.25, 3.25, 4.25};
  static const int32_t off32[] = {0, 4, 7, 10, 10, 14};
  static const int64_t off64[] = {0, 4, 7, 10, 10, 14};
  static const char text[] = "zeroonetwofour";
  static const char fsb[] = "aaabbbcccdddeee";
  static const int32_t d32[] = {0, 1, 2, 3, 19000};
  static const int64_t d64[] = {0, 86400000, 2 * 86400000LL, 3 * 86400000LL, 4 * 86400000LL};
  static const int32_t t32[] = {1, 2, 3, 4, 5};
  static const int64_t t64[] = {1000, 2000, 3000, 4000, 5000};
  static const int64_t ts[] = {1000000, 2000000, 3000000, 4000000, 5000000};
  static const int32_t months[] = {1, 2, 3, 4, 5};
  static const int32_t day_time[] = {1, 10, 2, 20, 3, 30, 4, 40, 5, 50};
  static const struct { int32_t m, d; int64_t ns; } mdn[] = {
      {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}, {5, 5, -5}};
  static const int64_t dec128[] = {100, 0, 200, 0, 300, 0, 400, 0, -500, -1};
  static int64_t dec256[20];
  for (int i = 0; i < 5; i++) {
    dec256[4 * i] = (i + 1) * 1000;
    for (int k = 1; k < 4; k++) dec256[4 * i + k] = 0;
  }

  column(root, b, sch(p, "b", "bool", NUL), arr(p, 4, 1, 1, 2, &valid, &bools, NULL));
  column(root, b, sch(p, "c", "i8", NUL), arr(p, 4, 1, 1, 2, &valid, i8, NULL));
  column(root, b, sch(p, "S", "u16", N), arr(p, 4, 0, 1, 2, NULL, u16, NULL));
  struct ArrowSchema* s_i32 = sch(p, "i", "i32", NUL);
  // C Data Interface metadata: {"unit": "m", "empty": ""}
  static const char meta_i32[] = "\x02\x00\x00\x00" "\x04\x00\x00\x00" "unit"
                                 "\x01\x00\x00\x00" "m" "\x05\x00\x00\x00" "empty"
                                 "\x00\x00\x00\x00";
  s_i32->metadata = meta_i32;
  column(root, b, s_i32, arr(p, 4, -1, 1, 2, &valid, i32, NULL));
  column(root, b, sch(p, "L", "u64", N), arr(p, 4, 0, 1, 2, NULL, u64, NULL));
  column(root, b, sch(p, "e", "f16", N), arr(p, 4, 0, 1, 2, NULL, f16, NULL));
  column(root, b, sch(p, "f", "f32", N), arr(p, 4, 0, 1, 2, NULL, f32, NULL));
  column(root, b, sch(p, "g", "f64", NUL), arr(p, 4, 1, 1, 2, &valid, f64, NULL));
  column(root, b, sch(p, "u", "utf8", NUL), arr(p, 4, 1, 1, 3, &valid, off32, text));
  column(root, b, sch(p, "U", "large_utf8", NUL), arr(p, 4, 1, 1, 3, &valid, off64, text));
  column(root, b, sch(p, "z", "binary", NUL), arr(p, 4, 1, 1, 3, &valid, off32, text));
  column(root, b, sch(p, "Z", "large_binary", NUL), arr(p, 4, 1, 1, 3, &valid, off64, text));
  column(root, b, sch(p, "w:3", "fsb3", NUL), arr(p, 4, 1, 1, 2, &valid, fsb, NULL));
  column(root, b, sch(p, "tdD", "date32", N), arr(p, 4, 0, 1, 2, NULL, d32, NULL));
  column(root, b, sch(p, "tdm", "date64", N), arr(p, 4, 0, 1, 2, NULL, d64, NULL));
  column(root, b, sch(p, "tts", "time32s", N), arr(p, 4, 0, 1, 2, NULL, t32, NULL));
  column(root, b, sch(p, "ttn", "time64ns", N), arr(p, 4, 0, 1, 2, NULL, t64, NULL));
  column(root, b, sch(p, "tsu:UTC", "ts_utc", NUL), arr(p, 4, 1, 1, 2, &valid, ts, NULL));
  column(root, b, sch(p, "tsn:", "ts_naive", N), arr(p, 4, 0, 1, 2, NULL, ts, NULL));
  column(root, b, sch(p, "tDm", "dur_ms", N), arr(p, 4, 0, 1, 2, NULL, t64, NULL));
  column(root, b, sch(p, "tiM", "iv_months", N), arr(p, 4, 0, 1, 2, NULL, months, NULL));
  column(root, b, sch(p, "tiD", "iv_day_time", N), arr(p, 4, 0, 1, 2, NULL, day_time, NULL));
  column(root, b, sch(p, "tin", "iv_mdn", N), arr(p, 4, 0, 1, 2, NULL, mdn, NULL));
  column(root, b, sch(p, "d:10,2", "dec128", NUL), arr(p, 4, 0, 1, 2, NULL, dec128, NULL));
  column(root, b, sch(p, "d:40,3,256", "dec256", NUL), arr(p, 4, 0, 1, 2, NULL, dec256, NULL));

  // list<int32>: slot 2 = [30, 40], slot 3 null, slot 4 = [60]; child offset 2.
  static const int32_t list_off[] = {0, 1, 3, 5, 6, 7};
  static const int32_t list_vals[] = {-1, -1, 0, 10, 20, 30, 40, 50, 60};
  column(root, b, skid(sch(p, "+l", "list_i32", NUL), sch(p, "i", "item", NUL)),
         kid(arr(p, 4, 1, 1, 2, &valid, list_off, NULL),
             arr(p, 7, 0, 2, 2, NULL, list_vals, NULL)));
  // large_list<utf8>: one string per slot: ["c"], ["d"], ["e"].
  static const int64_t llist_off[] = {0, 1, 2, 3, 4, 5};
  static const int32_t str1_off[] = {0, 1, 2, 3, 4, 5};
  column(root, b, skid(sch(p, "+L", "llist_utf8", N), sch(p, "u", "item", NUL)),
         kid(arr(p, 4, 0, 1, 2, NULL, llist_off, NULL),
             arr(p, 5, 0, 0, 3, NULL, str1_off, "abcde")));
  // fixed_size_list<int16, 2>: [4,5], null, [8,9].
  static const int16_t fsl_vals[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  column(root, b, skid(sch(p, "+w:2", "fsl_i16", NUL), sch(p, "s", "item", NUL)),
         kid(arr(p, 4, 1, 1, 1, &valid, NULL, NULL), arr(p, 10, 0, 0, 2, NULL, fsl_vals, NULL)));
  // struct{x: int32, y: utf8 (child offset 1)}: {2, "p2"}, null, {4, "p4"}.
  static const int32_t xs[] = {0, 1, 2, 3, 4};
  static const int32_t y_off[] = {0, 1, 3, 5, 7, 9, 11};
  struct ArrowArray* st = arr(p, 4, 1, 1, 1, &valid, NULL, NULL);
  kid(st, arr(p, 5, 0, 0, 2, NULL, xs, NULL));
  kid(st, arr(p, 5, 0, 1, 3, NULL, y_off, "-p0p1p2p3p4"));
  column(root, b,
         skid(skid(sch(p, "+s", "struct", NUL), sch(p, "i", "x", NUL)), sch(p, "u", "y", NUL)),
         st);
  // map<utf8, int32> (keys sorted): [k1:1, k2:2], [k3:3], [k4:4, k5:5].
  static const int32_t map_off[] = {0, 1, 1, 3, 4, 6};
  static const int32_t key_off[] = {0, 2, 4, 6, 8, 10, 12};
  static const int32_t map_vals[] = {0, 1, 2, 3, 4, 5};
  struct ArrowArray* entries = arr(p, 6, 0, 0, 1, NULL, NULL, NULL);
  kid(entries, arr(p, 6, 0, 0, 3, NULL, key_off, "k0k1k2k3k4k5"));
  kid(entries, arr(p, 6, 0, 0, 2, NULL, map_vals, NULL));
  column(root, b,
         skid(sch(p, "+m", "map", NUL | ARROW_FLAG_MAP_KEYS_SORTED),
              skid(skid(sch(p, "+s", "entries", N), sch(p, "u", "key", N)),
                   sch(p, "i", "value", NUL))),
         kid(arr(p, 4, 0, 1, 2, NULL, map_off, NULL), entries));
  // sparse union<i: int32 = 0, s: utf8 = 1>: 2, "d", 4.
  static const int8_t su_ids[] = {0, 1, 0, 1, 0};
  static const int32_t su_off[] = {0, 1, 2, 3, 4, 5};
  struct ArrowArray* su = arr(p, 4, 0, 1, 1, su_ids, NULL, NULL);
  kid(su, arr(p, 5, 0, 0, 2, NULL, xs, NULL));
  kid(su, arr(p, 5, 0, 0, 3, NULL, su_off, "abcde"));
  column(root, b,
         skid(skid(sch(p, "+us:0,1", "sparse_union", N), sch(p, "i", "i", NUL)),
              sch(p, "u", "s", NUL)),
         su);
  // dense union<f: float64 = 5, b: bool = 7>: 2.5, false, true.
  static const int8_t du_ids[] = {5, 7, 5, 7, 7};
  static const int32_t du_off[] = {0, 0, 1, 1, 2};
  static const double du_f[] = {1.5, 2.5};
  static const uint8_t du_b = 0x05;
  struct ArrowArray* du = arr(p, 4, 0, 1, 2, du_ids, du_off, NULL);
  kid(du, arr(p, 2, 0, 0, 2, NULL, du_f, NULL));
  kid(du, arr(p, 3, 0, 0, 2, NULL, &du_b, NULL));
  column(root, b,
         skid(skid(sch(p, "+ud:5,7", "dense_union", N), sch(p, "g", "f", NUL)),
              sch(p, "b", "b", NUL)),
         du);
  // dictionary<int8, utf8> (ordered): "c", null, "b".
  static const int8_t idx[] = {0, 1, 2, 0, 1};
  static const int32_t dict_off[] = {0, 1, 2, 3};
  struct ArrowSchema* ds = sch(p, "c", "dict", NUL | ARROW_FLAG_DICTIONARY_ORDERED);
  ds->dictionary = sch(p, "u", NULL, NUL);
  struct ArrowArray* da = arr(p, 4, 1, 1, 2, &valid, idx, NULL);
  da->dictionary = arr(p, 3, 0, 0, 3, NULL, dict_off, "abc");
  column(root, b, ds, da);
  column(root, b, sch(p, "n", "null", NUL), arr(p, 4, 4, 1, 0, NULL, NULL, NULL));
}

static void build_all_types(struct pool* p, struct ArrowSchema** root, struct ArrowArray** b) {
  static const char meta[] = "\x01\x00\x00\x00" "\x06\x00\x00\x00" "origin"
                             "\x0b\x00\x00\x00" "sluice-test";
  *root = sch(p, "+s", "", 0);
  (*root)->metadata = meta;
  *b = arr(p, 3, 0, 1, 1, NULL, NULL, NULL);
  add_all_types(p, *root, *b);
}

/// A one-column batch of dictionary<int32, utf8> with the given dictionary.
static struct ArrowArray* dict_batch(struct pool* p, struct ArrowSchema** root, const char* chars,
                                     int64_t n) {
  static const int32_t idx[] = {0, 1, 1, 0};
  static const int32_t off[] = {0, 1, 2, 3, 4, 5};
  if (*root == NULL) {
    *root = sch(p, "+s", "", 0);
    struct ArrowSchema* ds = sch(p, "i", "d", NUL);
    ds->dictionary = sch(p, "u", NULL, NUL);
    skid(*root, ds);
  }
  struct ArrowArray* b = arr(p, 4, 0, 0, 1, NULL, NULL, NULL);
  struct ArrowArray* da = arr(p, 4, 0, 0, 2, NULL, idx, NULL);
  da->dictionary = arr(p, n, 0, 0, 3, NULL, off, chars);
  return kid(b, da);
}

/* ---- Writing -------------------------------------------------------------- */

static int write_path(const char* path, const char* format, struct tstream* t,
                      const char* compression, const struct sluice_allocator* alloc,
                      struct sluice_error* error) {
  const struct sl_format_writer* w =
      strcmp(format, "arrow") == 0 ? sl_ipc_file_writer() : sl_ipc_stream_writer();
  struct sl_sink* sink = NULL;
  // The sink gets the default allocator: allocation-failure tests target
  // the writer alone.
  int rc = sl_sink_open(path, NULL, &sink, error);
  if (rc != 0) return rc;
  struct ArrowArrayStream s = make_stream(t);
  struct sl_write_args args = {.alloc = alloc, .compression = compression};
  rc = w->write(&s, sink, &args, error);
  if (rc != 0) {
    sl_sink_abort(sink);
    return rc;
  }
  return sl_sink_commit(sink, error);
}

/// 100000 rows of compressible data: n = i % 1000, s = "v<i % 100>".
static int emit_big(struct pool* p, const char* dir) {
  enum { ROWS = 100000 };
  int64_t* n = malloc(ROWS * sizeof *n);
  int32_t* off = malloc((ROWS + 1) * sizeof *off);
  char* chars = malloc(ROWS * 3);
  int rc = 1;
  if (n == NULL || off == NULL || chars == NULL) goto done;
  off[0] = 0;
  for (int i = 0; i < ROWS; i++) {
    n[i] = i % 1000;
    int len = snprintf(chars + off[i], 4, "v%d", i % 100);
    off[i + 1] = off[i] + len;
  }
  struct ArrowSchema* root =
      skid(skid(sch(p, "+s", "", 0), sch(p, "l", "n", N)), sch(p, "u", "s", N));
  struct ArrowArray* b = arr(p, ROWS, 0, 0, 1, NULL, NULL, NULL);
  kid(b, arr(p, ROWS, 0, 0, 2, NULL, n, NULL));
  kid(b, arr(p, ROWS, 0, 0, 3, NULL, off, chars));
  struct tstream t = {root, {b}, 1, 0};
  static const char* const codecs[] = {"none", "lz4", "zstd"};
  for (int c = 0; c < 3; c++) {
    char path[1024];
    struct sluice_error error = {0, {0}};
    snprintf(path, sizeof path, "%s/big_%s.arrows", dir, codecs[c]);
    if (write_path(path, "arrows", &t, codecs[c], NULL, &error) != 0) {
      fprintf(stderr, "%s: %s\n", path, error.message);
      goto done;
    }
  }
  rc = 0;
done:
  free(n);
  free(off);
  free(chars);
  return rc;
}

/// Writes every file the pyarrow test checks into `dir`.
static int emit_all(const char* dir) {
  static struct pool p;  // large: keep it off the stack
  char path[1024];
  struct sluice_error error = {0, {0}};
  struct ArrowSchema* root;
  struct ArrowArray* b;
  build_all_types(&p, &root, &b);
  struct tstream t = {root, {b, b}, 2, 0};
  static const char* const codecs[] = {"none", "lz4", "zstd"};
  for (int c = 0; c < 3; c++) {
    for (int f = 0; f < 2; f++) {
      const char* fmt = f ? "arrow" : "arrows";
      snprintf(path, sizeof path, "%s/all_types_%s.%s", dir, codecs[c], fmt);
      if (write_path(path, fmt, &t, codecs[c], NULL, &error) != 0) goto fail;
    }
  }
  struct ArrowSchema* droot = NULL;
  struct ArrowArray* d1 = dict_batch(&p, &droot, "abc", 3);
  struct ArrowArray* d2 = dict_batch(&p, &droot, "abc", 3);
  struct ArrowArray* d3 = dict_batch(&p, &droot, "xyz", 3);
  struct tstream dt = {droot, {d1, d2, d3}, 3, 0};
  snprintf(path, sizeof path, "%s/dict_replace.arrows", dir);
  if (write_path(path, "arrows", &dt, "zstd", NULL, &error) != 0) goto fail;
  struct ArrowArray* d4 = dict_batch(&p, &droot, "abcde", 5);
  struct tstream delta = {droot, {d1, d4}, 2, 0};
  for (int f = 0; f < 2; f++) {
    const char* fmt = f ? "arrow" : "arrows";
    snprintf(path, sizeof path, "%s/dict_delta.%s", dir, fmt);
    if (write_path(path, fmt, &delta, NULL, NULL, &error) != 0) goto fail;
  }
  dt.n = 2;
  snprintf(path, sizeof path, "%s/dict_same.arrow", dir);
  if (write_path(path, "arrow", &dt, NULL, NULL, &error) != 0) goto fail;
  struct ArrowArray b0 = *b;  // a zero-row batch of every type
  b0.length = 0;
  struct tstream zero = {root, {&b0, b}, 2, 0};
  snprintf(path, sizeof path, "%s/zero_rows.arrows", dir);
  if (write_path(path, "arrows", &zero, "lz4", NULL, &error) != 0) goto fail;
  if (emit_big(&p, dir) != 0) return 1;
  struct tstream empty = {root, {NULL}, 0, 0};
  snprintf(path, sizeof path, "%s/empty.arrow", dir);
  if (write_path(path, "arrow", &empty, NULL, NULL, &error) != 0) goto fail;
  return 0;
fail:
  fprintf(stderr, "%s: %s\n", path, error.message);
  return 1;
}

/* ---- Tests ---------------------------------------------------------------- */

static void test_fb_builder_roundtrip(void** state) {
  (void)state;
  struct fb_builder b;
  sl_fb_init(&b, NULL);
  fb_ref s = sl_fb_string(&b, "hello", 5);
  fb_ref v;
  uint8_t* p = sl_fb_vector_reserve(&b, 3, 16, 8, &v);
  assert_non_null(p);
  for (int i = 0; i < 3; i++) {
    sl_fb_store_le64(p + 16 * i, i);
    sl_fb_store_le64(p + 16 * i + 8, 100 + i);
  }
  size_t base = sl_fb_stack_depth(&b);
  for (int i = 0; i < 2; i++) {
    sl_fb_table_start(&b);
    sl_fb_add_i32(&b, 1, 7 + i);
    sl_fb_stack_push(&b, sl_fb_table_end(&b));
  }
  fb_ref tables = sl_fb_vector_from_stack(&b, base);
  sl_fb_table_start(&b);
  sl_fb_add_u8(&b, 0, 1);
  sl_fb_add_ref(&b, 2, s);
  sl_fb_add_i64(&b, 3, -42);
  sl_fb_add_ref(&b, 4, v);
  sl_fb_add_ref(&b, 5, tables);
  sl_fb_add_i16(&b, 6, 300);
  fb_ref root = sl_fb_table_end(&b);
  const uint8_t* data;
  size_t size;
  struct sluice_error error = {0, {0}};
  assert_int_equal(sl_fb_finish(&b, root, &data, &size, &error), 0);
  assert_int_equal(size % 8, 0);

  struct fb_buf buf;
  struct fb_table t, sub;
  struct fb_vec vec;
  sl_fb_buf_init(&buf, data, size);
  assert_int_equal(sl_fb_root(&buf, &t), 0);
  uint8_t u8;
  int64_t i64;
  int16_t i16;
  int32_t i32;
  assert_int_equal(sl_fb_read_u8(&t, 0, 9, &u8), 0);
  assert_int_equal(u8, 1);
  assert_int_equal(sl_fb_read_i32(&t, 1, 77, &i32), 0);  // absent: default
  assert_int_equal(i32, 77);
  const char* str;
  uint32_t len;
  assert_int_equal(sl_fb_read_string(&t, 2, &str, &len), 1);
  assert_int_equal(len, 5);
  assert_memory_equal(str, "hello", 5);
  assert_int_equal(sl_fb_read_i64(&t, 3, 0, &i64), 0);
  assert_int_equal(i64, -42);
  assert_int_equal(sl_fb_read_vec(&t, 4, 16, &vec), 1);
  assert_int_equal(vec.count, 3);
  assert_int_equal(fb_load_i64(sl_fb_vec_elem(&vec, 2) + 8), 102);
  assert_int_equal((uintptr_t)(sl_fb_vec_elem(&vec, 0) - data) % 8, 0);
  assert_int_equal(sl_fb_read_vec(&t, 5, 4, &vec), 1);
  assert_int_equal(vec.count, 2);
  assert_int_equal(sl_fb_vec_table(&vec, 1, &sub), 0);
  assert_int_equal(sl_fb_read_i32(&sub, 1, 0, &i32), 0);
  assert_int_equal(i32, 8);
  assert_int_equal(sl_fb_read_i16(&t, 6, 0, &i16), 0);
  assert_int_equal(i16, 300);
  assert_null(buf.why);
  sl_fb_free(&b);
}

/// Walks the encapsulated messages of a stream at `data`: checks framing and
/// alignment, returns the header types seen (up to 16) and where it ended.
static int walk_messages(const uint8_t* data, size_t size, size_t at, uint8_t* types,
                         size_t* end) {
  int n = 0;
  for (;;) {
    assert_true(at + 8 <= size);
    assert_int_equal(at % 8, 0);
    assert_int_equal(fb_load_u32(data + at), 0xFFFFFFFFu);
    int32_t meta_len = fb_load_i32(data + at + 4);
    if (meta_len == 0) {
      *end = at + 8;
      return n;
    }
    assert_int_equal((8 + meta_len) % 8, 0);
    struct fb_buf buf;
    struct fb_table msg;
    sl_fb_buf_init(&buf, data + at + 8, (size_t)meta_len);
    assert_int_equal(sl_fb_root(&buf, &msg), 0);
    int16_t version;
    uint8_t type;
    int64_t body;
    assert_int_equal(sl_fb_read_i16(&msg, IPC_MESSAGE_VERSION, 0, &version), 0);
    assert_int_equal(version, IPC_METADATA_V5);
    assert_int_equal(sl_fb_read_u8(&msg, IPC_MESSAGE_HEADER_TYPE, 0, &type), 0);
    assert_int_equal(sl_fb_read_i64(&msg, IPC_MESSAGE_BODY_LENGTH, 0, &body), 0);
    assert_int_equal(body % 8, 0);
    assert_true(n < 16);
    types[n++] = type;
    at += 8 + (size_t)meta_len + (size_t)body;
  }
}

static void test_stream_framing(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  struct ArrowSchema* root;
  struct ArrowArray* b;
  build_all_types(&p, &root, &b);
  struct tstream t = {root, {b, b}, 2, 0};
  char path[512];
  test_temp_path("ipcw_framing.arrows", path, sizeof path);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path, "arrows", &t, NULL, NULL, &error), 0);
  size_t size, end;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  uint8_t types[16];
  int n = walk_messages(data, size, 0, types, &end);
  // schema, one dictionary (unchanged in batch 2), two record batches
  assert_int_equal(n, 4);
  assert_int_equal(types[0], IPC_MESSAGE_SCHEMA);
  assert_int_equal(types[1], IPC_MESSAGE_DICTIONARY_BATCH);
  assert_int_equal(types[2], IPC_MESSAGE_RECORD_BATCH);
  assert_int_equal(types[3], IPC_MESSAGE_RECORD_BATCH);
  assert_int_equal(end, size);
  free(data);
  unlink(path);
}

static void test_file_layout(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  struct ArrowSchema* root;
  struct ArrowArray* b;
  build_all_types(&p, &root, &b);
  struct tstream t = {root, {b, b, b}, 3, 0};
  char path[512];
  test_temp_path("ipcw_layout.arrow", path, sizeof path);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path, "arrow", &t, "lz4", NULL, &error), 0);
  size_t size, end;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  assert_memory_equal(data, "ARROW1\0\0", 8);
  assert_memory_equal(data + size - 6, "ARROW1", 6);
  uint8_t types[16];
  assert_int_equal(walk_messages(data, size, 8, types, &end), 5);
  int32_t footer_len = fb_load_i32(data + size - 10);
  assert_int_equal(end + (size_t)footer_len + 10, size);
  assert_int_equal(end % 8, 0);
  struct fb_buf buf;
  struct fb_table footer, schema;
  struct fb_vec blocks;
  sl_fb_buf_init(&buf, data + end, (size_t)footer_len);
  assert_int_equal(sl_fb_root(&buf, &footer), 0);
  assert_int_equal(sl_fb_read_table(&footer, IPC_FOOTER_SCHEMA, &schema), 1);
  assert_int_equal(
      sl_fb_read_vec(&footer, IPC_FOOTER_RECORD_BATCHES, IPC_BLOCK_STRUCT_SIZE, &blocks), 1);
  assert_int_equal(blocks.count, 3);
  for (uint32_t i = 0; i < 3; i++) {
    const uint8_t* e = sl_fb_vec_elem(&blocks, i);
    int64_t off = fb_load_i64(e + IPC_BLOCK_OFFSET_AT);
    assert_int_equal(off % 8, 0);
    assert_int_equal(fb_load_u32(data + off), 0xFFFFFFFFu);
    assert_int_equal(fb_load_i32(data + off + 4) + 8,
                     fb_load_i32(e + IPC_BLOCK_META_DATA_LENGTH_AT));
  }
  assert_int_equal(
      sl_fb_read_vec(&footer, IPC_FOOTER_DICTIONARIES, IPC_BLOCK_STRUCT_SIZE, &blocks), 1);
  assert_int_equal(blocks.count, 1);
  free(data);
  unlink(path);
}

/// Two batches of one column 'dv': dictionary<int32, int64> indices {0, 2}
/// into values[i] (3 of them, validity[i] or none); returns the schema.
static struct ArrowSchema* int64_dict_batches(struct pool* p, const int64_t* const values[2],
                                              const uint8_t* const validity[2],
                                              struct ArrowArray* batches[2]) {
  static const int32_t idx[] = {0, 2};
  struct ArrowSchema* ds = sch(p, "i", "dv", NUL);
  ds->dictionary = sch(p, "l", NULL, NUL);
  struct ArrowSchema* root = skid(sch(p, "+s", "", 0), ds);
  for (int i = 0; i < 2; i++) {
    struct ArrowArray* da = arr(p, 2, 0, 0, 2, NULL, idx, NULL);
    da->dictionary = arr(p, 3, validity[i] != NULL, 0, 2, validity[i], values[i], NULL);
    batches[i] = kid(arr(p, 2, 0, 0, 1, NULL, NULL, NULL), da);
  }
  return root;
}

/// A file cannot replace a dictionary: a string dictionary that changes is
/// grown into one (indices mapped, deltas written: 4 dictionary messages for
/// "abc", "abcd" (delta "d"), then "abd" mapped into it, nothing new); any
/// other changed dictionary is an error that leaves nothing behind, and the
/// stream format replaces it instead.
static void test_file_dictionary_change(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  struct ArrowSchema* root = NULL;
  struct ArrowArray* d1 = dict_batch(&p, &root, "abc", 3);
  struct ArrowArray* d2 = dict_batch(&p, &root, "abd", 3);
  struct ArrowArray* d3 = dict_batch(&p, &root, "abcd", 4);  // a delta
  struct tstream t = {root, {d1, d3, d2}, 3, 0};
  char path[512];
  test_temp_path("ipcw_dict.arrow", path, sizeof path);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path, "arrow", &t, NULL, NULL, &error), 0);
  size_t size, end;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  uint8_t types[16];
  // schema, dictionary, batch, delta, batch, batch: "abd" needed nothing new
  assert_int_equal(walk_messages(data, size, 8, types, &end), 6);
  assert_int_equal(types[3], IPC_MESSAGE_DICTIONARY_BATCH);
  assert_int_equal(types[5], IPC_MESSAGE_RECORD_BATCH);
  free(data);
  unlink(path);

  static const int64_t a[] = {7, 8, 9}, b[] = {7, 8, 10};
  const int64_t* const vals[2] = {a, b};
  const uint8_t* const none[2] = {NULL, NULL};
  struct ArrowArray* batches[2];
  struct ArrowSchema* iroot = int64_dict_batches(&p, vals, none, batches);
  struct tstream ti = {iroot, {batches[0], batches[1]}, 2, 0};
  assert_int_equal(write_path(path, "arrow", &ti, NULL, NULL, &error), ENOTSUP);
  assert_non_null(strstr(error.message, "'dv'"));
  assert_non_null(strstr(error.message, "dictionary"));
  assert_int_equal(access(path, F_OK), -1);  // nothing left behind
  ti.next = 0;
  assert_int_equal(write_path(path, "arrows", &ti, NULL, NULL, &error), 0);
  unlink(path);
}

/// Bits past a bitmap's length are not data: dictionaries that differ only
/// there are the same dictionary (a file may then be written).
static void test_dictionary_ignores_bitmap_padding(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  static const int64_t same[] = {7, 8, 9};
  static const uint8_t valid_a = 0x05, valid_b = 0xF5;
  const int64_t* const vals[2] = {same, same};
  const uint8_t* const valid[2] = {&valid_a, &valid_b};
  struct ArrowArray* batches[2];
  struct ArrowSchema* root = int64_dict_batches(&p, vals, valid, batches);
  struct tstream t = {root, {batches[0], batches[1]}, 2, 0};
  char path[512];
  test_temp_path("ipcw_dictpad.arrow", path, sizeof path);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path, "arrow", &t, NULL, NULL, &error), 0);
  size_t size, end;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  uint8_t types[16];
  assert_int_equal(walk_messages(data, size, 8, types, &end), 4);  // one dictionary
  assert_int_equal(types[1], IPC_MESSAGE_DICTIONARY_BATCH);
  free(data);
  unlink(path);
}

static void test_bad_compression(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  struct ArrowSchema* root = NULL;
  struct tstream t = {NULL, {dict_batch(&p, &root, "abc", 3)}, 1, 0};
  t.schema = root;
  char path[512];
  test_temp_path("ipcw_bad.arrows", path, sizeof path);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path, "arrows", &t, "snappy", NULL, &error), EINVAL);
  assert_non_null(strstr(error.message, "snappy"));
}

static void test_bad_batch_names_column(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  static const int32_t off[] = {3, 5, 2};  // decreasing
  struct ArrowSchema* root = skid(sch(&p, "+s", "", 0), sch(&p, "u", "name", NUL));
  struct ArrowArray* b = kid(arr(&p, 2, 0, 0, 1, NULL, NULL, NULL),
                             arr(&p, 2, 0, 0, 3, NULL, off, "abcde"));
  struct tstream t = {root, {b}, 1, 0};
  char path[512];
  test_temp_path("ipcw_badcol.arrows", path, sizeof path);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path, "arrows", &t, NULL, NULL, &error), EINVAL);
  assert_non_null(strstr(error.message, "'name'"));
  // A batch shorter than the struct says.
  b->length = 5;
  b->children[0]->offset = 0;
  assert_int_equal(write_path(path, "arrows", &t, NULL, NULL, &error), EINVAL);
  assert_non_null(strstr(error.message, "'name'"));
}

static void test_allocation_failures(void** state) {
  (void)state;
  static struct pool p;
  memset(&p, 0, sizeof p);
  struct ArrowSchema* root;
  struct ArrowArray* b;
  build_all_types(&p, &root, &b);
  struct tstream t = {root, {b, b}, 2, 0};
  char path[512];
  test_temp_path("ipcw_alloc.arrow", path, sizeof path);
  int failures = 0, succeeded = 0;
  for (long long n = 1; n < 2000 && !succeeded; n++) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    ta.fail_at = n;
    struct sluice_error error = {0, {0}};
    int rc = write_path(path, "arrow", &t, "zstd", &ta.base, &error);
    assert_int_equal(ta.live_bytes, 0);
    succeeded = rc == 0;
    if (!succeeded) {
      assert_int_equal(rc, ENOMEM);
      failures++;
    }
  }
  assert_true(succeeded);  // every allocation point was failed once
  assert_true(failures > 5);
  unlink(path);
}

/// Writes `path_a` from the hand-built batches, reads it back with sluice's
/// IPC reader, writes that to `path_b`. The first file is canonical (offsets
/// rebased, bitmaps realigned, empty validity where nothing is null), so a
/// faithful reader + writer reproduce it byte for byte.
static void round_trip(const char* format, const char* compression) {
  static struct pool p;
  memset(&p, 0, sizeof p);
  struct ArrowSchema* root;
  struct ArrowArray* b;
  build_all_types(&p, &root, &b);
  struct tstream t = {root, {b, b}, 2, 0};
  char path_a[512], path_b[512];
  test_temp_path("ipcw_rt_a", path_a, sizeof path_a);
  test_temp_path("ipcw_rt_b", path_b, sizeof path_b);
  struct sluice_error error = {0, {0}};
  assert_int_equal(write_path(path_a, format, &t, compression, NULL, &error), 0);

  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.format = format;
  options.threads = 1;
  struct sluice_dataset* ds = NULL;
  int rc = sluice_dataset_open(path_a, &options, &ds, &error);
  if (rc != 0) fprintf(stderr, "open: %s\n", error.message);
  assert_int_equal(rc, 0);
  struct ArrowArrayStream scan;
  assert_int_equal(sluice_dataset_scan(ds, &scan, &error), 0);
  const struct sl_format_writer* w =
      strcmp(format, "arrow") == 0 ? sl_ipc_file_writer() : sl_ipc_stream_writer();
  struct sl_sink* sink = NULL;
  assert_int_equal(sl_sink_open(path_b, NULL, &sink, &error), 0);
  struct sl_write_args args = {.alloc = NULL, .compression = compression};
  rc = w->write(&scan, sink, &args, &error);
  if (rc != 0) fprintf(stderr, "rewrite: %s\n", error.message);
  assert_int_equal(rc, 0);
  assert_int_equal(sl_sink_commit(sink, &error), 0);
  scan.release(&scan);
  sluice_dataset_close(ds);

  test_assert_same_files(path_a, path_b);
  unlink(path_a);
  unlink(path_b);
}

static void test_round_trip_stream(void** state) {
  (void)state;
  round_trip("arrows", NULL);
}

static void test_round_trip_file_zstd(void** state) {
  (void)state;
  round_trip("arrow", "zstd");
}

static void test_round_trip_stream_lz4(void** state) {
  (void)state;
  round_trip("arrows", "lz4");
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--emit") == 0) return emit_all(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fb_builder_roundtrip),
      cmocka_unit_test(test_stream_framing),
      cmocka_unit_test(test_file_layout),
      cmocka_unit_test(test_file_dictionary_change),
      cmocka_unit_test(test_dictionary_ignores_bitmap_padding),
      cmocka_unit_test(test_bad_compression),
      cmocka_unit_test(test_bad_batch_names_column),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_round_trip_stream),
      cmocka_unit_test(test_round_trip_file_zstd),
      cmocka_unit_test(test_round_trip_stream_lz4),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
