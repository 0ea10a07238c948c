// Avro reader tests: the arrow-testing corpus (every file opens and decodes),
// codecs, projection, forward-only sources, crafted bad input with exact
// messages, truncations and byte flips of real files (error or data, never a
// crash), allocation-failure injection.
//
// Also a driver for the Python interop tests (until the registry lists the
// reader): `test_avro --to-ipc IN.avro OUT.arrows [FORMAT_OPTIONS]` writes an
// IPC stream.
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libdeflate.h>
#include <lzma.h>
#include <snappy-c.h>
#include <zstd.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_validate.h"
#include "format/avro/avro_reader.h"
#include "format/ipc/ipc_writer.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"
#include "io/sl_source_file.h"
#include "scan/sl_scan.h"
#include "test_util.h"

/* ---- helpers -------------------------------------------------------------- */

/// Everything read from one file: its schema and batches (in plan order).
struct result {
  struct ArrowSchema schema;
  struct ArrowArray batches[4096];
  int64_t n_batches;
  int64_t rows;
};

static void result_release(struct result* r) {
  if (r->schema.release) r->schema.release(&r->schema);
  for (int64_t i = 0; i < r->n_batches; ++i)
    if (r->batches[i].release) r->batches[i].release(&r->batches[i]);
  r->n_batches = r->rows = 0;
}

/// Reads a source through the reader table, splits in order, one thread.
static int read_source_with(struct sl_source* src, const struct sluice_allocator* alloc,
                            const int64_t* columns, int64_t n_columns, int64_t batch_size,
                            const char* format_options, struct result* out,
                            struct sluice_error* error) {
  const struct sl_format_reader* fmt = sl_avro_reader();
  memset(out, 0, sizeof *out);
  struct sl_reader_args args = {.source = src, .alloc = alloc, .batch_size = batch_size,
                                .format_options = format_options};
  void* reader;
  int rc = fmt->open(&args, &reader, error);
  if (rc != 0) return rc;
  rc = fmt->schema(reader, &out->schema, error);
  struct sl_split* splits = NULL;
  int64_t n = 0;
  if (rc == 0) rc = fmt->plan_splits(reader, &splits, &n, error);
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    void* st;
    int projected;
    rc = fmt->split_open(reader, &splits[i], columns, n_columns, &st, &projected, error);
    if (rc != 0) break;
    for (;;) {
      struct ArrowArray b;
      rc = fmt->split_next(st, &b, error);
      if (rc != 0 || b.release == NULL) break;
      // Whatever the reader accepts must be valid Arrow, UTF-8 included.
      struct ArrowSchema* sch = &out->schema;
      struct ArrowSchema proj = {0};
      if (columns != NULL) {
        rc = sl_schema_project(&out->schema, columns, n_columns, NULL, &proj, error);
        sch = &proj;
      }
      if (rc == 0) rc = sl_array_validate(sch, &b, SL_VALIDATE_FULL_UTF8, NULL, error);
      if (proj.release) proj.release(&proj);
      if (rc != 0) {
        fprintf(stderr, "INVALID BATCH: %s\n", error->message);
        b.release(&b);
        abort();
      }
      out->rows += b.length;
      if (out->n_batches < 4096) out->batches[out->n_batches++] = b;
      else b.release(&b);
    }
    fmt->split_close(st);
  }
  if (splits) sl_free(alloc, splits, (size_t)n * sizeof *splits);
  fmt->close(reader);
  if (rc != 0) result_release(out);
  return rc;
}

static int read_source(struct sl_source* src, const struct sluice_allocator* alloc,
                       const int64_t* columns, int64_t n_columns, int64_t batch_size,
                       struct result* out, struct sluice_error* error) {
  return read_source_with(src, alloc, columns, n_columns, batch_size, NULL, out, error);
}

static int read_path(const char* path, const struct sluice_allocator* alloc, const int64_t* columns,
                     int64_t n_columns, struct result* out, struct sluice_error* error) {
  struct sl_source* src;
  int rc = sl_source_open(path, alloc, &src, error);
  if (rc != 0) return rc;
  rc = read_source(src, alloc, columns, n_columns, 0, out, error);
  sl_source_close(src);
  return rc;
}

static int read_bytes(const uint8_t* data, size_t n, struct sluice_error* error) {
  char path[512];
  test_temp_path("crafted.avro", path, sizeof path);
  if (test_write_file(path, data, n) != 0) return EIO;
  struct result r;
  int rc = read_path(path, NULL, NULL, 0, &r, error);
  if (rc == 0) result_release(&r);
  unlink(path);
  return rc;
}

static const char* corpus(const char* name, char* buf, size_t cap) {
  char rel[256];
  snprintf(rel, sizeof rel, "arrow-testing/data/avro/%s", name);
  return test_corpus_path(rel, buf, cap);
}

static int corpus_available(void) {
  char p[512];
  return access(corpus("alltypes_plain.avro", p, sizeof p), R_OK) == 0;
}

static int64_t child_index(const struct ArrowSchema* s, const char* name) {
  for (int64_t i = 0; i < s->n_children; ++i)
    if (strcmp(s->children[i]->name, name) == 0) return i;
  return -1;
}

/* ---- a tiny Avro encoder for crafted input --------------------------------- */

struct enc {
  uint8_t buf[1 << 16];
  size_t n;
};

static void put(struct enc* e, const void* p, size_t n) {
  memcpy(e->buf + e->n, p, n);
  e->n += n;
}
static void put_long(struct enc* e, int64_t v) {
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  while (z >= 0x80) {
    e->buf[e->n++] = (uint8_t)(z | 0x80);
    z >>= 7;
  }
  e->buf[e->n++] = (uint8_t)z;
}
static void put_str(struct enc* e, const char* s) {
  put_long(e, (int64_t)strlen(s));
  put(e, s, strlen(s));
}

static const uint8_t k_sync[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void put_header(struct enc* e, const char* schema, const char* codec) {
  put(e, "Obj\x01", 4);
  put_long(e, codec ? 2 : 1);
  put_str(e, "avro.schema");
  put_str(e, schema);
  if (codec) {
    put_str(e, "avro.codec");
    put_str(e, codec);
  }
  put_long(e, 0);
  put(e, k_sync, 16);
}

/// One block whose data is `data` (n bytes) holding `count` objects.
static void put_block(struct enc* e, int64_t count, const uint8_t* data, size_t n) {
  put_long(e, count);
  put_long(e, (int64_t)n);
  put(e, data, n);
  put(e, k_sync, 16);
}

static const char k_schema_ls[] =
    "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"long\"},"
    "{\"name\":\"s\",\"type\":\"string\"},{\"name\":\"d\",\"type\":{\"type\":\"array\","
    "\"items\":\"double\"}},{\"name\":\"n\",\"type\":[\"null\",\"int\"]}]}";

/// Rows (a = i, s = "x", d = [i, i + 0.5], n = null for odd i).
static size_t encode_rows(uint8_t* out, int64_t rows) {
  struct enc* e = calloc(1, sizeof *e);
  for (int64_t i = 0; i < rows; ++i) {
    put_long(e, i);
    put_str(e, "x");
    put_long(e, 2);
    double d[2] = {(double)i, (double)i + 0.5};
    put(e, d, 16);
    put_long(e, 0);
    if (i % 2) {
      put_long(e, 0);
    } else {
      put_long(e, 1);
      put_long(e, i * 3);
    }
  }
  size_t n = e->n;
  memcpy(out, e->buf, n);
  free(e);
  return n;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_corpus_all_files(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const struct {
    const char* name;
    int64_t rows;
  } k_files[] = {
      {"alltypes_dictionary.avro", 2},   {"alltypes_nulls_plain.avro", 1},
      {"alltypes_plain.avro", 8},        {"alltypes_plain.bzip2.avro", 8},
      {"alltypes_plain.snappy.avro", 8}, {"alltypes_plain.xz.avro", 8},
      {"alltypes_plain.zstandard.avro", 8}, {"binary.avro", 12},
      {"datapage_v2.snappy.avro", 5},    {"dict-page-offset-zero.avro", 39},
      {"duration_uuid.avro", -1},        {"fixed256_decimal.avro", -1},
      {"fixed_length_decimal.avro", 24}, {"fixed_length_decimal_legacy.avro", 24},
      {"fixed_length_decimal_legacy_32.avro", -1}, {"int128_decimal.avro", -1},
      {"int256_decimal.avro", -1},       {"int32_decimal.avro", 24},
      {"int64_decimal.avro", 24},        {"list_columns.avro", 3},
      {"nested_lists.snappy.avro", 3},   {"nested_records.avro", -1},
      {"nonnullable.impala.avro", 1},    {"nullable.impala.avro", 7},
      {"nulls.snappy.avro", 8},          {"repeated_no_annotation.avro", 6},
      {"simple_enum.avro", -1},          {"simple_fixed.avro", -1},
      {"single_nan.avro", 1},            {"timestamp_logical_types.avro", -1},
      {"zero_byte.avro", -1},
  };
  for (size_t i = 0; i < sizeof k_files / sizeof k_files[0]; ++i) {
    char path[512];
    struct result r;
    struct sluice_error err = {0};
    int rc = read_path(corpus(k_files[i].name, path, sizeof path), NULL, NULL, 0, &r, &err);
    if (rc != 0) fail_msg("%s: %s", k_files[i].name, err.message);
    if (k_files[i].rows >= 0 && r.rows != k_files[i].rows)
      fail_msg("%s: %lld rows, want %lld", k_files[i].name, (long long)r.rows,
               (long long)k_files[i].rows);
    assert_non_null(r.schema.metadata);
    result_release(&r);
  }
}

static void check_alltypes_ids(const struct result* r) {
  static const int32_t want[8] = {4, 5, 6, 7, 2, 3, 0, 1};
  int64_t id = child_index(&r->schema, "id");
  assert_true(id >= 0);
  assert_string_equal(r->schema.children[id]->format, "i");
  int64_t k = 0;
  for (int64_t b = 0; b < r->n_batches; ++b) {
    const struct ArrowArray* col = r->batches[b].children[id];
    const int32_t* v = col->buffers[1];
    for (int64_t i = 0; i < col->length; ++i) assert_int_equal(v[i], want[k++]);
  }
  assert_int_equal(k, 8);
}

static void test_corpus_codecs_values(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const char* const k_names[] = {"alltypes_plain.avro", "alltypes_plain.bzip2.avro",
                                        "alltypes_plain.snappy.avro", "alltypes_plain.xz.avro",
                                        "alltypes_plain.zstandard.avro"};
  for (size_t i = 0; i < 5; ++i) {
    char path[512];
    struct result r;
    struct sluice_error err = {0};
    assert_int_equal(read_path(corpus(k_names[i], path, sizeof path), NULL, NULL, 0, &r, &err), 0);
    check_alltypes_ids(&r);
    result_release(&r);
  }
}

static void test_projection_skips(void** state) {
  (void)state;
  uint8_t* data = malloc(1 << 16);
  struct enc* e = calloc(1, sizeof *e);
  put_header(e, k_schema_ls, NULL);
  size_t n = encode_rows(data, 100);
  put_block(e, 100, data, n);
  char path[512];
  test_temp_path("proj.avro", path, sizeof path);
  assert_int_equal(test_write_file(path, e->buf, e->n), 0);
  struct result r;
  struct sluice_error err = {0};
  int64_t cols[2] = {3, 0};  // n, a: s and d are skipped
  int rc = read_path(path, NULL, cols, 2, &r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r.rows, 100);
  const struct ArrowArray* b = &r.batches[0];
  assert_int_equal(b->n_children, 2);
  assert_int_equal(b->children[0]->null_count, 50);
  const int32_t* nv = b->children[0]->buffers[1];
  const int64_t* av = b->children[1]->buffers[1];
  assert_int_equal(nv[4], 12);
  assert_int_equal(av[99], 99);
  result_release(&r);
  // All columns, small batches: the list column carries the doubles.
  struct sl_source* src;
  assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
  assert_int_equal(read_source(src, NULL, NULL, 0, 7, &r, &err), 0);
  sl_source_close(src);
  assert_int_equal(r.rows, 100);
  assert_int_equal(r.n_batches, 15);
  const struct ArrowArray* d = r.batches[1].children[2];
  const double* dv = d->children[0]->buffers[1];
  const int32_t* off = d->buffers[1];
  assert_true(dv[off[0] + 1] == 7.5);
  result_release(&r);
  // A forward-only source (a descriptor, no ranged reads) reads the same.
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(sl_fd_source_open(fd, 1, "pipe.avro", NULL, &src, &err), 0);
  rc = read_source(src, NULL, cols, 2, 0, &r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  sl_source_close(src);
  assert_int_equal(r.rows, 100);
  result_release(&r);
  unlink(path);
  free(e);
  free(data);
}

static void expect_error(const uint8_t* data, size_t n, const char* needle) {
  struct sluice_error err = {0};
  int rc = read_bytes(data, n, &err);
  if (rc == 0) fail_msg("no error, wanted '%s'", needle);
  if (strstr(err.message, needle) == NULL) fail_msg("message '%s' lacks '%s'", err.message, needle);
}

static void test_reader_schema(void** state) {
  (void)state;
  uint8_t* data = malloc(1 << 16);
  struct enc* e = calloc(1, sizeof *e);
  put_header(e, k_schema_ls, NULL);
  size_t n = encode_rows(data, 10);
  put_block(e, 10, data, n);
  char path[512], rs[512], opts[600];
  test_temp_path("resolve.avro", path, sizeof path);
  test_temp_path("reader.avsc", rs, sizeof rs);
  assert_int_equal(test_write_file(path, e->buf, e->n), 0);
  static const char k_reader[] =
      "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
      "{\"name\":\"n\",\"type\":[\"null\",\"long\"]},"
      "{\"name\":\"a2\",\"aliases\":[\"a\"],\"type\":\"double\"},"
      "{\"name\":\"s\",\"type\":\"bytes\"},"
      "{\"name\":\"extra\",\"type\":\"string\",\"default\":\"dflt\"},"
      "{\"name\":\"arr\",\"type\":{\"type\":\"array\",\"items\":\"int\"},\"default\":[1,2]}]}";
  assert_int_equal(test_write_file(rs, k_reader, strlen(k_reader)), 0);
  snprintf(opts, sizeof opts, "reader_schema=%s", rs);
  struct sl_source* src;
  struct sluice_error err = {0};
  assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
  const struct sl_format_reader* fmt = sl_avro_reader();
  struct sl_reader_args args = {.source = src, .format_options = opts};
  void* reader;
  if (fmt->open(&args, &reader, &err) != 0) fail_msg("%s", err.message);
  struct sl_split* splits;
  int64_t ns;
  assert_int_equal(fmt->plan_splits(reader, &splits, &ns, &err), 0);
  void* st;
  int projected;
  assert_int_equal(fmt->split_open(reader, &splits[0], NULL, 0, &st, &projected, &err), 0);
  struct ArrowArray b;
  if (fmt->split_next(st, &b, &err) != 0) fail_msg("%s", err.message);
  assert_int_equal(b.length, 10);
  assert_int_equal(b.n_children, 5);
  assert_int_equal(((const int64_t*)b.children[0]->buffers[1])[2], 6);  // n = i * 3, promoted
  assert_int_equal(b.children[0]->null_count, 5);
  assert_true(((const double*)b.children[1]->buffers[1])[7] == 7.0);  // a → a2, long → double
  assert_memory_equal((const char*)b.children[3]->buffers[2], "dfltdflt", 8);
  const struct ArrowArray* arr = b.children[4];
  assert_int_equal(arr->children[0]->length, 20);
  assert_int_equal(((const int32_t*)arr->children[0]->buffers[1])[3], 2);
  b.release(&b);
  fmt->split_close(st);
  // Projection by reader column: extra and n only.
  int64_t cols[2] = {3, 0};
  assert_int_equal(fmt->split_open(reader, &splits[0], cols, 2, &st, &projected, &err), 0);
  assert_int_equal(fmt->split_next(st, &b, &err), 0);
  assert_int_equal(b.n_children, 2);
  assert_int_equal(b.children[1]->null_count, 5);
  b.release(&b);
  fmt->split_close(st);
  sl_free(NULL, splits, (size_t)ns * sizeof *splits);
  fmt->close(reader);
  // Unresolvable: a reader field without default, a type that cannot promote.
  // ...and a record of another name (the writer's is "r") without that alias.
  static const char* const k_bad[] = {
      "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"zz\",\"type\":\"int\"}]}",
      "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}",
      "{\"type\":\"record\",\"name\":\"other\",\"fields\":[{\"name\":\"a\",\"type\":\"long\"}]}",
  };
  static const char* const k_msgs[] = {"no default", "cannot read the writer's long as int",
                                       "named 'r', the reader's 'other'"};
  for (int i = 0; i < 3; ++i) {
    assert_int_equal(test_write_file(rs, k_bad[i], strlen(k_bad[i])), 0);
    void* r2;
    int rc = fmt->open(&args, &r2, &err);
    assert_int_not_equal(rc, 0);
    if (strstr(err.message, k_msgs[i]) == NULL) fail_msg("%s", err.message);
  }
  // The writer's name among the reader record's aliases (plain or with a
  // namespace) resolves.
  static const char* const k_aliased[] = {
      "{\"type\":\"record\",\"name\":\"other\",\"aliases\":[\"r\"],\"fields\":[{\"name\":\"a\",\"type\":\"long\"}]}",
      "{\"type\":\"record\",\"name\":\"other\",\"aliases\":[\"x.y.r\"],\"fields\":[{\"name\":\"a\",\"type\":\"long\"}]}",
  };
  for (int i = 0; i < 2; ++i) {
    assert_int_equal(test_write_file(rs, k_aliased[i], strlen(k_aliased[i])), 0);
    void* r2;
    if (fmt->open(&args, &r2, &err) != 0) fail_msg("%s", err.message);
    fmt->close(r2);
  }
  sl_source_close(src);
  unlink(path);
  unlink(rs);
  free(e);
  free(data);
}

/// Writes `rows` rows compressed with `codec` in two blocks (plus a zero-row
/// block) and returns the file size.
static size_t codec_file(struct enc* e, const char* codec, int64_t rows, int corrupt_crc) {
  uint8_t* raw = malloc(1 << 16);
  uint8_t* z = malloc(1 << 17);
  size_t n = encode_rows(raw, rows);
  e->n = 0;
  put_header(e, k_schema_ls, codec);
  for (int blk = 0; blk < 2; ++blk) {
    size_t zn = 0;
    if (strcmp(codec, "deflate") == 0) {
      struct libdeflate_compressor* c = libdeflate_alloc_compressor(6);
      zn = libdeflate_deflate_compress(c, raw, n, z, 1 << 17);
      libdeflate_free_compressor(c);
    } else if (strcmp(codec, "snappy") == 0) {
      zn = 1 << 17;
      assert_int_equal(snappy_compress((const char*)raw, n, (char*)z, &zn), SNAPPY_OK);
      uint32_t crc = libdeflate_crc32(0, raw, n) ^ (corrupt_crc ? 1u : 0u);
      uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
      memcpy(z + zn, be, 4);
      zn += 4;
    } else if (strcmp(codec, "lzma") == 0) {
      // avro-c's codec: one raw LZMA2 stream, preset 6, as avro-c writes it.
      lzma_options_lzma opt;
      assert_false(lzma_lzma_preset(&opt, 6));
      lzma_filter filters[2] = {{LZMA_FILTER_LZMA2, &opt}, {LZMA_VLI_UNKNOWN, NULL}};
      assert_int_equal(lzma_raw_buffer_encode(filters, NULL, raw, n, z, &zn, 1 << 17), LZMA_OK);
    } else {
      zn = ZSTD_compress(z, 1 << 17, raw, n, 3);
    }
    assert_true(zn > 0);
    put_block(e, rows, z, zn);
    put_block(e, 0, z, 0);  // zero rows, no data: nothing to decompress
  }
  free(raw);
  free(z);
  return e->n;
}

static void test_codecs_crafted(void** state) {
  (void)state;
  static const char* const k_codecs[] = {"deflate", "snappy", "zstandard", "lzma"};
  struct enc* e = calloc(1, sizeof *e);
  for (size_t i = 0; i < 4; ++i) {
    size_t n = codec_file(e, k_codecs[i], 40, 0);
    char path[512];
    test_temp_path("codec.avro", path, sizeof path);
    assert_int_equal(test_write_file(path, e->buf, n), 0);
    struct result r;
    struct sluice_error err = {0};
    if (read_path(path, NULL, NULL, 0, &r, &err) != 0) fail_msg("%s: %s", k_codecs[i], err.message);
    assert_int_equal(r.rows, 80);
    const int64_t* a = r.batches[0].children[0]->buffers[1];
    assert_int_equal(a[39], 39);
    result_release(&r);
    // Truncated and damaged compressed data: an error naming the block.
    for (size_t cut = n - 17; cut > n - 80; cut -= 7) {
      uint8_t save = e->buf[cut];
      e->buf[cut] ^= 0x5A;
      struct sluice_error err2 = {0};
      if (read_bytes(e->buf, n, &err2) != 0) assert_non_null(strstr(err2.message, "block"));
      e->buf[cut] = save;
    }
    unlink(path);
  }
  size_t n = codec_file(e, "snappy", 10, 1);
  expect_error(e->buf, n, "CRC mismatch");
  free(e);
}

/// A block larger than the forward reader's chunk (16 MiB), through a ranged
/// and a forward-only source; then the same block truncated.
static void test_big_block(void** state) {
  (void)state;
  const int64_t n = 2300000;  // doubles: 18.4 MB
  size_t cap = (size_t)n * 8 + 4096;
  uint8_t* blk = malloc(cap);
  uint8_t* file = malloc(cap + 4096);
  struct enc* e = calloc(1, sizeof *e);
  put_header(e, "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":"
                "{\"type\":\"array\",\"items\":\"double\"}}]}", NULL);
  size_t hn = e->n;
  memcpy(file, e->buf, hn);
  e->n = 0;
  put_long(e, -n);  // a negative count carries the block's byte size
  put_long(e, n * 8);
  size_t pn = e->n;
  memcpy(blk, e->buf, pn);
  for (int64_t i = 0; i < n; ++i) {
    double v = (double)i;
    memcpy(blk + pn + (size_t)i * 8, &v, 8);
  }
  size_t bn = pn + (size_t)n * 8;
  blk[bn++] = 0;
  e->n = 0;
  put_long(e, 1);
  put_long(e, (int64_t)bn);
  memcpy(file + hn, e->buf, e->n);
  size_t fn = hn + e->n;
  memcpy(file + fn, blk, bn);
  fn += bn;
  memcpy(file + fn, k_sync, 16);
  fn += 16;
  char path[512];
  test_temp_path("big.avro", path, sizeof path);
  for (int trunc = 0; trunc < 2; ++trunc) {
    assert_int_equal(test_write_file(path, file, trunc ? fn - 100 : fn), 0);
    for (int forward = 0; forward < 2; ++forward) {
      struct sl_source* src;
      struct sluice_error err = {0};
      struct result r;
      if (forward) {
        int fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(sl_fd_source_open(fd, 1, "big.avro", NULL, &src, &err), 0);
      } else {
        assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
      }
      int rc = read_source(src, NULL, NULL, 0, 0, &r, &err);
      sl_source_close(src);
      if (trunc) {
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err.message, "truncated"));
        continue;
      }
      if (rc != 0) fail_msg("%s", err.message);
      assert_int_equal(r.rows, 1);
      const struct ArrowArray* d = r.batches[0].children[0]->children[0];
      assert_int_equal(d->length, n);
      assert_true(((const double*)d->buffers[1])[n - 1] == (double)(n - 1));
      result_release(&r);
    }
  }
  unlink(path);
  free(e);
  free(file);
  free(blk);
}

static void test_bad_input_messages(void** state) {
  (void)state;
  struct enc* e = calloc(1, sizeof *e);
  uint8_t rows[4096];
  size_t n = encode_rows(rows, 10);
  // Wrong magic.
  put(e, "Obj\x02", 4);
  expect_error(e->buf, e->n, "bad magic");
  // Bad sync after the second block.
  e->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_block(e, 10, rows, n);
  put_block(e, 10, rows, n);
  e->buf[e->n - 3] ^= 0xFF;
  expect_error(e->buf, e->n, "bad sync marker after block 1 at byte");
  // A string length past the block end.
  e->n = 0;
  put_header(e, k_schema_ls, NULL);
  struct enc* blk = calloc(1, sizeof *blk);
  put_long(blk, 1);
  put_long(blk, 9999999);
  put(blk, "abc", 3);
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "block 0 at byte");
  expect_error(e->buf, e->n, "length 9999999 exceeds block end");
  // Invalid UTF-8 in a string.
  e->n = 0;
  blk->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_long(blk, 1);
  put_str(blk, "\xC0\xAF");  // an overlong '/'
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "not valid UTF-8");
  // A 11-byte varint.
  e->n = 0;
  blk->n = 0;
  put_header(e, k_schema_ls, NULL);
  for (int i = 0; i < 11; ++i) blk->buf[blk->n++] = 0xFF;
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "varint longer than 10 bytes");
  // Invalid union index.
  e->n = 0;
  blk->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_long(blk, 1);
  put_str(blk, "x");
  put_long(blk, 0);
  put_long(blk, 5);
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "invalid union index 5");
  // A huge array count is refused before any memory is reserved.
  e->n = 0;
  blk->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_long(blk, 1);
  put_str(blk, "x");
  put_long(blk, INT64_C(1) << 60);
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "exceeds block end");
  // Forged counts of byte-less values (array<null>, rows of empty records).
  e->n = 0;
  blk->n = 0;
  put_header(e, "{\"type\":\"array\",\"items\":\"null\"}", NULL);
  put_long(blk, INT64_C(1) << 40);
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "take no bytes");
  e->n = 0;
  put_header(e, "{\"type\":\"record\",\"name\":\"r\",\"fields\":[]}", NULL);
  put_block(e, INT64_C(1) << 40, blk->buf, 0);
  expect_error(e->buf, e->n, "block 0 at byte 75: 1099511627776 objects that take no bytes (the "
                             "schema holds only nulls and empty records) pass the limit of "
                             "268435456 such values per split");
  // A top-level "long" (wrapped in a record of one column): its values take
  // a byte at least, so a forged count is the count that cannot fit (it was
  // taken for values of no bytes, and charged to that limit).
  e->n = 0;
  blk->n = 0;
  put_header(e, "\"long\"", NULL);
  put_long(blk, 5);
  put_block(e, INT64_C(1) << 30, blk->buf, blk->n);
  expect_error(e->buf, e->n, "1073741824 objects cannot fit in 1 bytes");
  // Truncated block, too many objects for the bytes, left-over bytes.
  e->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_block(e, 10, rows, n);
  expect_error(e->buf, e->n - 20, "truncated block");
  expect_error(e->buf, e->n - 5, "ends inside the block's sync marker");
  e->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_block(e, 1 << 20, rows, n);
  expect_error(e->buf, e->n, "cannot fit");
  e->n = 0;
  put_header(e, k_schema_ls, NULL);
  put_block(e, 9, rows, n);
  expect_error(e->buf, e->n, "left over");
  // Schemas that are not valid Avro.
  static const struct {
    const char* schema;
    const char* msg;
  } k_bad[] = {
      {"{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"x\",\"type\":\"r\"}]}", "recursive"},
      {"{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"x\",\"type\":\"nope\"}]}", "unknown type"},
      {"[\"int\",\"int\"]", "same type twice"},
      {"{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[\"a\",\"a\"]}", "duplicate enum symbol"},
      {"{not json", "not valid JSON"},
      {"{\"type\":\"fixed\",\"name\":\"f\"}", "size"},
      {"{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"x\",\"type\":\"int\"},"
       "{\"name\":\"x\",\"type\":\"int\"}]}", "duplicate field"},
  };
  for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; ++i) {
    e->n = 0;
    put_header(e, k_bad[i].schema, NULL);
    expect_error(e->buf, e->n, k_bad[i].msg);
  }
  e->n = 0;
  put_header(e, k_schema_ls, "brotli");
  expect_error(e->buf, e->n, "unsupported Avro codec 'brotli'");
  // A decimal with more digits than its precision (8388607 in decimal(3, 0))
  // would make an array Arrow's validation refuses.
  e->n = 0;
  blk->n = 0;
  put_header(e, "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":3}", NULL);
  put_long(blk, 3);
  put(blk, "\x7f\xff\xff", 3);
  put_block(e, 1, blk->buf, blk->n);
  expect_error(e->buf, e->n, "more digits than its precision 3");
  // A fixed too small for its precision (2 bytes hold 4 digits): the
  // logical type is invalid, so the values stay fixed-size binary.
  e->n = 0;
  blk->n = 0;
  put_header(e, "{\"type\":\"fixed\",\"name\":\"d\",\"size\":2,\"logicalType\":\"decimal\","
             "\"precision\":10}", NULL);
  put(blk, "\x01\x00", 2);
  put_block(e, 1, blk->buf, blk->n);
  {
    char path[512];
    test_temp_path("dec_fixed.avro", path, sizeof path);
    assert_int_equal(test_write_file(path, e->buf, e->n), 0);
    struct result* r = calloc(1, sizeof *r);
    struct sluice_error derr = {0};
    assert_int_equal(read_path(path, NULL, NULL, 0, r, &derr), 0);
    assert_int_equal(r->schema.n_children, 1);  // a top-level non-record: one column
    assert_string_equal(r->schema.children[0]->format, "w:2");
    result_release(r);
    free(r);
    unlink(path);
  }
  // An empty record name (polars) is accepted, with a note in the metadata.
  e->n = 0;
  put_header(e, "{\"type\":\"record\",\"name\":\"\",\"fields\":[{\"name\":\"x\",\"type\":\"int\"}]}", NULL);
  struct sluice_error err = {0};
  assert_int_equal(read_bytes(e->buf, e->n, &err), 0);
  free(blk);
  free(e);
}

/// Reads `data` and discards the result: only "no crash, no leak" matters.
/// Objects that take no bytes: a valid file of 80 million rows of a null
/// field reads, as fastavro reads it (a limit of 2^26 a split refused it,
/// saying "40000000 objects cannot fit in 0 bytes").
static void test_null_rows(void** state) {
  (void)state;
  struct enc* e = calloc(1, sizeof *e);
  put_header(e, "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"n\","
                "\"type\":\"null\"}]}", NULL);
  static const uint8_t k_none[1] = {0};
  put_block(e, 40000000, k_none, 0);
  put_block(e, 40000000, k_none, 0);
  char path[512];
  test_temp_path("nullrows.avro", path, sizeof path);
  assert_int_equal(test_write_file(path, e->buf, e->n), 0);
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  int rc = read_path(path, NULL, NULL, 0, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, 80000000);
  result_release(r);
  free(r);
  free(e);
  unlink(path);
}

static void read_any(const uint8_t* data, size_t n, const char* path) {
  struct test_allocator ta;
  test_allocator_init(&ta);
  if (test_write_file(path, data, n) != 0) fail_msg("cannot write %s", path);
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  if (read_path(path, &ta.base, NULL, 0, r, &err) == 0) result_release(r);
  free(r);
  assert_int_equal(ta.live_bytes, 0);
}

static void test_mutations(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const char* const k_names[] = {"alltypes_plain.avro", "alltypes_plain.snappy.avro",
                                        "nested_lists.snappy.avro", "nullable.impala.avro",
                                        "alltypes_plain.zstandard.avro", "simple_enum.avro",
                                        "alltypes_plain.xz.avro", "alltypes_plain.bzip2.avro"};
  char tmp[512];
  test_temp_path("mutant.avro", tmp, sizeof tmp);
  for (size_t f = 0; f < sizeof k_names / sizeof k_names[0]; ++f) {
    char path[512];
    size_t n;
    uint8_t* data = test_read_file(corpus(k_names[f], path, sizeof path), &n);
    if (data == NULL) continue;
    size_t step = n / 97 + 1;
    for (size_t cut = 0; cut < n; cut += step) read_any(data, cut, tmp);
    uint8_t* copy = malloc(n);
    for (size_t at = 0; at < n; at += step) {
      static const uint8_t k_flips[] = {0x01, 0x80, 0xFF};
      for (size_t k = 0; k < 3; ++k) {
        memcpy(copy, data, n);
        copy[at] ^= k_flips[k];
        read_any(copy, n, tmp);
      }
    }
    free(copy);
    free(data);
  }
  unlink(tmp);
}

static void test_allocation_failures(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const char* const k_names[] = {"alltypes_plain.snappy.avro", "nested_records.avro",
                                        "simple_enum.avro", "alltypes_plain.zstandard.avro",
                                        "alltypes_plain.avro", "alltypes_plain.xz.avro",
                                        "alltypes_plain.bzip2.avro"};
  for (size_t f = 0; f < sizeof k_names / sizeof k_names[0]; ++f) {
    char path[512];
    corpus(k_names[f], path, sizeof path);
    for (long long fail = 1; fail < 5000; ++fail) {
      struct test_allocator ta;
      test_allocator_init(&ta);
      ta.fail_at = fail;
      struct result* r = malloc(sizeof *r);
      struct sluice_error err;
      int rc = read_path(path, &ta.base, NULL, 0, r, &err);
      if (rc == 0) result_release(r);
      free(r);
      if (ta.live_bytes != 0)
        fail_msg("%s: leak of %lld bytes after failing allocation %lld (%s)", k_names[f],
                 (long long)ta.live_bytes, fail, rc ? err.message : "");
      if (rc != 0 && rc != ENOMEM)  // a failed allocation is reported as one
        fail_msg("%s: failing allocation %lld gave error %d (%s), not ENOMEM", k_names[f], fail,
                 rc, err.message);
      if (rc == 0) break;
    }
  }
}


static const char k_schema_flat[] =
    "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"i\",\"type\":\"int\"},"
    "{\"name\":\"l\",\"type\":\"long\"},{\"name\":\"f\",\"type\":\"float\"},"
    "{\"name\":\"d\",\"type\":\"double\"}]}";

static void put_flat_row(struct enc* e, int32_t i, int64_t l, float f, double d) {
  put_long(e, i);
  put_long(e, l);
  put(e, &f, 4);
  put(e, &d, 8);
}

/// Records of numbers only take a faster path (sl_avro_decode_flat_rows): the
/// same values, including extreme varints at the end of a block where fewer
/// than ten bytes are left, and the same errors with the object's index.
static void test_flat_rows(void** state) {
  (void)state;
  struct enc* e = calloc(1, sizeof *e);
  struct enc* blk = calloc(1, sizeof *blk);
  const int64_t n = 300;
  for (int64_t k = 0; k < n; ++k) {
    int32_t i = k == 1 ? INT32_MIN : k == 2 ? INT32_MAX : (int32_t)(k * 7 - 1000);
    int64_t l = k == n - 1 ? INT64_MIN : k == n - 2 ? INT64_MAX : k * k * 1000003;
    put_flat_row(blk, i, l, (float)k / 4, (double)k / 3);
  }
  put_header(e, k_schema_flat, NULL);
  put_block(e, n, blk->buf, blk->n);
  char path[512];
  test_temp_path("flat.avro", path, sizeof path);
  assert_int_equal(test_write_file(path, e->buf, e->n), 0);
  struct result* r = malloc(sizeof *r);
  struct sluice_error err = {0};
  if (read_path(path, NULL, NULL, 0, r, &err) != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, n);
  int64_t k = 0;
  for (int64_t b = 0; b < r->n_batches; ++b) {
    struct ArrowArray** c = r->batches[b].children;
    for (int64_t j = 0; j < r->batches[b].length; ++j, ++k) {
      int32_t i = k == 1 ? INT32_MIN : k == 2 ? INT32_MAX : (int32_t)(k * 7 - 1000);
      int64_t l = k == n - 1 ? INT64_MIN : k == n - 2 ? INT64_MAX : k * k * 1000003;
      assert_int_equal(((const int32_t*)c[0]->buffers[1])[j], i);
      assert_true(((const int64_t*)c[1]->buffers[1])[j] == l);
      assert_true(((const float*)c[2]->buffers[1])[j] == (float)k / 4);
      assert_true(((const double*)c[3]->buffers[1])[j] == (double)k / 3);
    }
  }
  result_release(r);
  free(r);
  unlink(path);
  // An int past 32 bits in object 5; a double cut by the block's end.
  blk->n = 0;
  for (int64_t k2 = 0; k2 < 10; ++k2) {
    put_flat_row(blk, 1, 2, 3, 4);
    if (k2 == 5) {
      blk->n -= 1 + 1 + 4 + 8;
      put_long(blk, INT64_C(1) << 40);
      put_long(blk, 2);
      float f = 3;
      double d = 4;
      put(blk, &f, 4);
      put(blk, &d, 8);
    }
  }
  e->n = 0;
  put_header(e, k_schema_flat, NULL);
  put_block(e, 10, blk->buf, blk->n);
  expect_error(e->buf, e->n, "object 5: field 'i': int value 1099511627776 out of the 32-bit range");
  blk->n = 0;
  // Wide varints, so the rows still look as if they fit the block.
  for (int64_t k2 = 0; k2 < 10; ++k2) put_flat_row(blk, 1, INT64_C(1) << 60, 3, 4);
  e->n = 0;
  put_header(e, k_schema_flat, NULL);
  put_block(e, 10, blk->buf, blk->n - 3);
  expect_error(e->buf, e->n, "object 9: field 'd': truncated double");
  // An 11-byte varint in object 3, with whole rows' worth of bytes after it
  // (the unchecked path).
  blk->n = 0;
  for (int64_t k2 = 0; k2 < 10; ++k2) {
    if (k2 == 3) {
      put_long(blk, 1);
      put(blk, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
      float f = 3;
      double d = 4;
      put(blk, &f, 4);
      put(blk, &d, 8);
    } else {
      put_flat_row(blk, 1, 2, 3, 4);
    }
  }
  e->n = 0;
  put_header(e, k_schema_flat, NULL);
  put_block(e, 10, blk->buf, blk->n);
  expect_error(e->buf, e->n, "object 3: field 'l': varint longer than 10 bytes");
  free(blk);
  free(e);
}

/* ---- byte-range splits ------------------------------------------------------- */

/// A growable byte buffer for files larger than struct enc holds.
struct big {
  uint8_t* buf;
  size_t n, cap;
};

static void big_put(struct big* b, const void* p, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->buf = realloc(b->buf, b->cap);
    assert_non_null(b->buf);
  }
  memcpy(b->buf + b->n, p, n);
  b->n += n;
}

static void big_put_long(struct big* b, int64_t v) {
  struct enc* e = calloc(1, sizeof *e);
  put_long(e, v);
  big_put(b, e->buf, e->n);
  free(e);
}

static const char k_schema_as[] =
    "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"long\"},"
    "{\"name\":\"s\",\"type\":\"string\"}]}";

/// Starts `f` with a container header for k_schema_as; returns its size.
static size_t big_header(struct big* f) {
  struct enc* h = calloc(1, sizeof *h);
  assert_non_null(h);
  put_header(h, k_schema_as, NULL);
  big_put(f, h->buf, h->n);
  size_t n = h->n;
  free(h);
  return n;
}

/// Appends a block of rows first..first+count-1: a = i, s = `len(i)` bytes
/// of 'a' + i % 26 (a longer string for the row `long_row`, of `long_len`).
/// Returns the offset of the block's string bytes of `long_row` (or 0).
static size_t big_block(struct big* f, int64_t first, int64_t count, int64_t long_row,
                        size_t long_len) {
  struct big data = {0};
  size_t long_at = 0;
  for (int64_t i = first; i < first + count; ++i) {
    size_t len = i == long_row ? long_len : (size_t)(i % 97);
    big_put_long(&data, i);
    big_put_long(&data, (int64_t)len);
    if (i == long_row) long_at = data.n;
    char* text = malloc(len + 1);
    memset(text, 'a' + (int)(i % 26), len);
    big_put(&data, text, len);
    free(text);
  }
  big_put_long(f, count);
  big_put_long(f, (int64_t)data.n);
  size_t base = f->n;
  big_put(f, data.buf, data.n);
  big_put(f, k_sync, 16);
  free(data.buf);
  return long_row >= first && long_row < first + count ? base + long_at : 0;
}

/// An Avro file opened and planned through the reader table.
struct planned {
  const struct sl_format_reader* fmt;
  struct sl_source* src;
  void* reader;
  struct sl_split* splits;
  int64_t n;
};

static void plan_file(const char* path, struct planned* p) {
  struct sluice_error err = {0};
  p->fmt = sl_avro_reader();
  assert_int_equal(sl_source_open(path, NULL, &p->src, &err), 0);
  struct sl_reader_args args = {.source = p->src};
  assert_int_equal(p->fmt->open(&args, &p->reader, &err), 0);
  p->splits = NULL;
  p->n = 0;
  assert_int_equal(p->fmt->plan_splits(p->reader, &p->splits, &p->n, &err), 0);
}

static void planned_close(struct planned* p) {
  sl_free(NULL, p->splits, (size_t)p->n * sizeof *p->splits);
  p->fmt->close(p->reader);
  sl_source_close(p->src);
}

static void check_splits_last_first(const char* path, int64_t rows);

/// count_split_rows gives each split the rows that decoding it yields.
/// Returns the number of splits.
static int64_t check_counted_split_rows(const char* path) {
  struct planned p;
  plan_file(path, &p);
  struct sluice_error err = {0};
  for (int64_t i = 0; i < p.n; ++i) assert_int_equal(p.splits[i].est_rows, -1);
  assert_int_equal(p.fmt->count_split_rows(p.reader, p.splits, p.n, &err), 0);
  int64_t empty = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    void* st;
    int projected;
    assert_int_equal(p.fmt->split_open(p.reader, &p.splits[i], NULL, 0, &st, &projected, &err),
                     0);
    int64_t rows = 0;
    for (;;) {
      struct ArrowArray b;
      if (p.fmt->split_next(st, &b, &err) != 0) fail_msg("%s", err.message);
      if (b.release == NULL) break;
      rows += b.length;
      b.release(&b);
    }
    p.fmt->split_close(st);
    assert_int_equal(p.splits[i].est_rows, rows);
    empty += rows == 0;
  }
  assert_true(empty >= 1);  // the 2.5 MiB block covers a split
  int64_t n = p.n;
  planned_close(&p);
  return n;
}

/// A file of ~4.5 MiB (1 MiB splits): small blocks, a 2.5 MiB block that
/// covers whole splits (which then own no block), and small blocks again.
/// Every row comes back once, in order, whichever split finds it.
static void test_byte_range_splits(void** state) {
  (void)state;
  struct big f = {0};
  big_header(&f);
  int64_t rows = 0;
  for (int k = 0; k < 40; ++k, rows += 700) big_block(&f, rows, 700, -1, 0);
  big_block(&f, rows, 3, rows + 1, (size_t)5 << 19);  // 2.5 MiB string
  rows += 3;
  for (int k = 0; k < 30; ++k, rows += 1 + k * 37) big_block(&f, rows, 1 + (k + 1) * 37, -1, 0);
  char path[512];
  test_temp_path("splits.avro", path, sizeof path);
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  assert_true(check_counted_split_rows(path) >= 4);
  check_splits_last_first(path, rows);
  // A bad sync marker found while counting: an error, and no counts.
  uint8_t saved = f.buf[f.n - 1];
  f.buf[f.n - 1] ^= 0xFF;
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  struct planned p;
  plan_file(path, &p);
  struct sluice_error err = {0};
  assert_int_equal(p.fmt->count_split_rows(p.reader, p.splits, p.n, &err), EILSEQ);
  assert_non_null(strstr(err.message, "bad sync marker after block"));
  for (int64_t i = 0; i < p.n; ++i) assert_int_equal(p.splits[i].est_rows, -1);
  planned_close(&p);
  f.buf[f.n - 1] = saved;
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  struct result* r = malloc(sizeof *r);
  memset(&err, 0, sizeof err);
  int rc = read_path(path, NULL, NULL, 0, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, rows);
  int64_t want = 0;
  for (int64_t b = 0; b < r->n_batches; ++b) {
    const struct ArrowArray* a = r->batches[b].children[0];
    const struct ArrowArray* s = r->batches[b].children[1];
    const int32_t* offs = s->buffers[1];
    const char* chars = s->buffers[2];
    for (int64_t i = 0; i < a->length; ++i, ++want) {
      assert_int_equal(((const int64_t*)a->buffers[1])[a->offset + i], want);
      int64_t len = offs[s->offset + i + 1] - offs[s->offset + i];
      int64_t expect_len = want == 40 * 700 + 1 ? (int64_t)5 << 19 : want % 97;
      assert_int_equal(len, expect_len);
      if (len > 0) assert_int_equal(chars[offs[s->offset + i]], 'a' + want % 26);
    }
  }
  assert_int_equal(want, rows);
  result_release(r);
  free(r);
  unlink(path);
  free(f.buf);
}

/// FNV-1a over the rows of a k_schema_as result (a, then s's length and bytes).
static uint64_t result_digest(const struct result* r) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t i = 0; i < r->n_batches; ++i) {
    const struct ArrowArray* a = r->batches[i].children[0];
    const struct ArrowArray* str = r->batches[i].children[1];
    const int64_t* av = (const int64_t*)a->buffers[1] + a->offset;
    const int32_t* off = (const int32_t*)str->buffers[1] + str->offset;
    const uint8_t* bytes = str->buffers[2];
    for (int64_t k = 0; k < r->batches[i].length; ++k) {
      uint64_t words[2] = {(uint64_t)av[k], (uint64_t)(off[k + 1] - off[k])};
      const uint8_t* parts[2] = {(const uint8_t*)words, bytes + off[k]};
      size_t lens[2] = {sizeof words, (size_t)(off[k + 1] - off[k])};
      for (int p = 0; p < 2; ++p) {
        for (size_t j = 0; j < lens[p]; ++j) h = (h ^ parts[p][j]) * 1099511628211ULL;
      }
    }
  }
  return h;
}

/// Reads `path` in byte-range splits and through a forward-only source (one
/// pass, no splits): both must give the same rows. Returns the split read's
/// status (its error in *err).
static int read_both_ways(const char* path, int64_t* rows, struct sluice_error* err) {
  struct result* split = malloc(sizeof *split);
  struct result* serial = malloc(sizeof *serial);
  assert_non_null(split);
  assert_non_null(serial);
  int rc = read_path(path, NULL, NULL, 0, split, err);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  struct sl_source* src;
  struct sluice_error err2 = {0};
  assert_int_equal(sl_fd_source_open(fd, 1, "serial.avro", NULL, &src, &err2), 0);
  int rc2 = read_source(src, NULL, NULL, 0, 0, serial, &err2);
  sl_source_close(src);
  if (rc2 != 0) fail_msg("%s", err2.message);
  if (rc == 0) {
    assert_int_equal(split->rows, serial->rows);
    assert_true(result_digest(split) == result_digest(serial));
    *rows = split->rows;
    result_release(split);
  }
  result_release(serial);
  free(split);
  free(serial);
  return rc;
}

/// Decodes the splits of `path` last first (so that each finds its first
/// block before the splits ahead of it have run) and checks that together,
/// in plan order, they hold rows a = 0..rows-1 once each.
static void check_splits_last_first(const char* path, int64_t rows) {
  struct planned p;
  plan_file(path, &p);
  assert_true(p.n >= 2);
  struct sluice_error err = {0};
  int64_t* first = calloc((size_t)p.n, sizeof *first);
  int64_t* count = calloc((size_t)p.n, sizeof *count);
  assert_non_null(first);
  assert_non_null(count);
  for (int64_t i = p.n - 1; i >= 0; --i) {
    void* st;
    int projected;
    assert_int_equal(p.fmt->split_open(p.reader, &p.splits[i], NULL, 0, &st, &projected, &err),
                     0);
    for (;;) {
      struct ArrowArray b;
      if (p.fmt->split_next(st, &b, &err) != 0) fail_msg("split %lld: %s", (long long)i, err.message);
      if (b.release == NULL) break;
      const struct ArrowArray* a = b.children[0];
      const int64_t* av = (const int64_t*)a->buffers[1] + a->offset;
      for (int64_t k = 0; k < b.length; ++k, ++count[i]) {
        if (count[i] == 0) first[i] = av[k];
        if (av[k] != first[i] + count[i]) fail_msg("split %lld: row %lld", (long long)i, (long long)av[k]);
      }
      b.release(&b);
    }
    p.fmt->split_close(st);
  }
  int64_t next = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    if (count[i] == 0) continue;
    if (first[i] != next) fail_msg("split %lld starts at row %lld, not %lld", (long long)i,
                                   (long long)first[i], (long long)next);
    next += count[i];
  }
  assert_int_equal(next, rows);
  free(first);
  free(count);
  planned_close(&p);
}

/// The sync marker's bytes inside the data of a block that crosses a split
/// boundary: the next split skips them (no block follows) and the split read
/// equals the serial one. A forged block after such a copy, whose objects do
/// not fit it, is not believed: the next split finds its first block by
/// walking the blocks from the first, and the read still equals the serial
/// one (it was an error). A forged block that holds its objects and ends
/// where the real one does, so that real blocks follow, is believed by a
/// search for the marker: a mapped file's splits walk to their first block,
/// so the read still equals the serial one, in any order of the splits
/// (it was an error); where a walk would be a request per block (a remote
/// object, read here as one that is not mapped) it is an error naming the
/// offset, not rows read twice or lost. `mib`: the boundary's MiB (8 for
/// the split boundary of an object that is not mapped).
static void sync_marker_in_data(size_t mib) {
  struct big f = {0};
  size_t data_start = big_header(&f);
  int64_t rows = 0;
  const size_t boundary = data_start + (mib << 20);
  while (f.n + 40000 < boundary) {
    big_block(&f, rows, 500, -1, 0);
    rows += 500;
  }
  // One row whose 128 KiB string starts before the boundary and ends after.
  size_t at = big_block(&f, rows, 1, rows, (size_t)128 << 10);
  assert_true(at < boundary && at + ((size_t)128 << 10) > boundary + 100);
  rows += 1;
  for (int k = 0; k < 60; ++k, rows += 500) big_block(&f, rows, 500, -1, 0);
  // 1.5 MiB past the boundary, so there are at least two splits.
  while (f.n < boundary + ((size_t)3 << 19)) {
    big_block(&f, rows, 500, -1, 0);
    rows += 500;
  }
  char path[512];
  test_temp_path("marker.avro", path, sizeof path);
  struct sluice_error err = {0};
  int64_t got = 0;
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  if (read_both_ways(path, &got, &err) != 0) fail_msg("%s", err.message);  // clean
  assert_int_equal(got, rows);
  // The marker's bytes in the long string, past the boundary.
  memcpy(f.buf + boundary + 100, k_sync, 16);
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  got = 0;
  if (read_both_ways(path, &got, &err) != 0) fail_msg("%s", err.message);
  assert_int_equal(got, rows);
  // Then a forged empty block after it: a header (count 1, size 0) and the
  // marker again, all inside the string.
  static const uint8_t forged[2] = {0x02, 0x00};
  memcpy(f.buf + boundary + 116, forged, sizeof forged);
  memcpy(f.buf + boundary + 118, k_sync, 16);
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  got = 0;
  if (read_both_ways(path, &got, &err) != 0) fail_msg("%s", err.message);
  assert_int_equal(got, rows);
  // A forged block of one object (a = 0, a string of 20 bytes) that ends
  // where the real block's data does, so that the real marker ends it and
  // real blocks follow: believed, and the next split would start there.
  memcpy(f.buf + boundary + 100, f.buf + boundary + 200, 34);  // the string again
  size_t data_end = at + ((size_t)128 << 10), marker = data_end - 40;
  static const uint8_t forged_block[4] = {0x02, 44, 0x00, 40};  // 1, 22 bytes; 0, 20 bytes
  memcpy(f.buf + marker, k_sync, 16);
  memcpy(f.buf + marker + 16, forged_block, sizeof forged_block);
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  got = 0;
  if (read_both_ways(path, &got, &err) != 0) fail_msg("%s", err.message);
  assert_int_equal(got, rows);
  check_splits_last_first(path, rows);
  if (mib != 8) {
    unlink(path);
    free(f.buf);
    return;
  }
  struct sl_source* src;
  assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
  src->mapped = 0;  // read_at still works: as a remote object reads
  struct result* r = malloc(sizeof *r);
  assert_non_null(r);
  assert_int_not_equal(read_source(src, NULL, NULL, 0, 0, r, &err), 0);
  sl_source_close(src);
  free(r);
  assert_non_null(strstr(err.message, "cannot be read in byte-range splits"));
  char where[64];
  snprintf(where, sizeof where, "byte %zu", marker);
  if (strstr(err.message, where) == NULL) fail_msg("%s (wanted %s)", err.message, where);
  // As the message says: one split of the whole object reads it, every row.
  char one_split[64];
  snprintf(one_split, sizeof one_split, "split_size=%zu", f.n);
  if (strstr(err.message, one_split) == NULL) fail_msg("%s (wanted %s)", err.message, one_split);
  assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
  src->mapped = 0;
  r = malloc(sizeof *r);
  assert_non_null(r);
  if (read_source_with(src, NULL, NULL, 0, 0, one_split, r, &err) != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, rows);
  result_release(r);
  sl_source_close(src);
  free(r);
  unlink(path);
  free(f.buf);
}

static void test_sync_marker_in_data(void** state) {
  (void)state;
  sync_marker_in_data(1);
  sync_marker_in_data(8);
}

/// Reads `path` in byte-range splits and through a forward-only source:
/// both must fail, the split read with a message holding `want`.
static void expect_error_both_ways(const char* path, const char* want) {
  struct result* r = malloc(sizeof *r);
  assert_non_null(r);
  struct sluice_error err = {0};
  int rc = read_path(path, NULL, NULL, 0, r, &err);
  if (rc == 0) fail_msg("%s: %lld rows and no error (wanted %s)", path, (long long)r->rows, want);
  if (strstr(err.message, want) == NULL) fail_msg("%s (wanted %s)", err.message, want);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  struct sl_source* src;
  struct sluice_error err2 = {0};
  assert_int_equal(sl_fd_source_open(fd, 1, "serial.avro", NULL, &src, &err2), 0);
  assert_int_not_equal(read_source(src, NULL, NULL, 0, 0, r, &err2), 0);
  sl_source_close(src);
  free(r);
}

/// A corrupt or truncated block right after a split boundary (the first
/// block the next split owns): the split that ends there checks that the
/// next one starts where it stopped, so it is the error it is in one pass,
/// not a block stepped over by the next split's search and its rows lost.
static void test_corrupt_block_after_boundary(void** state) {
  (void)state;
  struct big f = {0};
  size_t data_start = big_header(&f);
  const size_t boundary = data_start + ((size_t)1 << 20);
  int64_t rows = 0;
  size_t first = 0;  // the header of the first block at or past the boundary
  while (f.n < data_start + ((size_t)5 << 19)) {
    if (first == 0 && f.n >= boundary) first = f.n;
    big_block(&f, rows, 500, -1, 0);
    rows += 500;
  }
  assert_true(first > 0);
  char path[512];
  test_temp_path("boundary.avro", path, sizeof path);
  struct sluice_error err = {0};
  int64_t got = 0;
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  if (read_both_ways(path, &got, &err) != 0) fail_msg("%s", err.message);  // clean
  assert_int_equal(got, rows);
  // Its header: count 500 (two varint bytes), then the size.
  size_t data = first + 2, size = 0;
  for (int shift = 0;; shift += 7) {
    size |= (size_t)(f.buf[data] & 0x7f) << shift;
    if ((f.buf[data++] & 0x80) == 0) break;
  }
  size >>= 1;
  size_t sync_at = data + size;
  assert_memory_equal(f.buf + sync_at, k_sync, 16);
  char want[96];
  // A bad sync marker after it.
  f.buf[sync_at + 5] ^= 0xFF;
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  expect_error_both_ways(path, "bad sync marker after block");
  snprintf(want, sizeof want, "at byte %zu", sync_at);
  expect_error_both_ways(path, want);
  f.buf[sync_at + 5] ^= 0xFF;
  // A size one byte short (its sync is then not where it says).
  f.buf[data - 1] ^= 0x02;
  assert_int_equal(test_write_file(path, f.buf, f.n), 0);
  expect_error_both_ways(path, "bad sync marker after block");
  f.buf[data - 1] ^= 0x02;
  // The file cut inside it.
  assert_int_equal(test_write_file(path, f.buf, data + 100), 0);
  snprintf(want, sizeof want, "at byte %zu: truncated block", first);
  expect_error_both_ways(path, want);
  // Cut inside its sync marker, and inside its header.
  assert_int_equal(test_write_file(path, f.buf, sync_at + 3), 0);
  expect_error_both_ways(path, "the file ends inside the block's sync marker");
  assert_int_equal(test_write_file(path, f.buf, first + 1), 0);
  expect_error_both_ways(path, "truncated or overlong block header");
  unlink(path);
  free(f.buf);
}

#include "avro_driver.h"

int main(int argc, char** argv) {
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "--to-ipc") == 0)
    return to_ipc(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
  if (argc >= 3 && strcmp(argv[1], "--count") == 0)
    return count_rows(argv[2], argc > 3 ? atoi(argv[3]) : 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus_all_files),
      cmocka_unit_test(test_corpus_codecs_values),
      cmocka_unit_test(test_projection_skips),
      cmocka_unit_test(test_bad_input_messages),
      cmocka_unit_test(test_null_rows),
      cmocka_unit_test(test_big_block),
      cmocka_unit_test(test_byte_range_splits),
      cmocka_unit_test(test_flat_rows),
      cmocka_unit_test(test_sync_marker_in_data),
      cmocka_unit_test(test_corrupt_block_after_boundary),
      cmocka_unit_test(test_codecs_crafted),
      cmocka_unit_test(test_reader_schema),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
