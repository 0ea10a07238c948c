// Parquet reader tests through the format vtable: every corpus file opens and
// decodes to valid Arrow (or fails cleanly), values of alltypes_plain known
// from its published content, projection, options, stored statistics,
// corrupt checksums, every bad_data file gives an error, and an
// allocation-failure sweep that must never leak.
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_validate.h"
#include "format/parquet/parquet_reader.h"
#include "format/parquet/pq_codec.h"
#include "format/parquet/pq_meta.h"
#include "io/sl_source.h"
#include "test_util.h"

struct result {
  struct ArrowSchema schema;
  struct ArrowArray batches[256];
  int64_t n_batches;
  int64_t rows;
};

static void result_release(struct result* r) {
  if (r->schema.release) r->schema.release(&r->schema);
  for (int64_t i = 0; i < r->n_batches; ++i)
    if (r->batches[i].release) r->batches[i].release(&r->batches[i]);
  r->n_batches = r->rows = 0;
}

/// Reads a file through the reader, split by split, validating every batch.
static int read_file(const char* path, const struct sluice_allocator* alloc, const int64_t* columns,
                     int64_t n_columns, const char* options, int64_t batch_size,
                     struct result* out, struct sluice_error* error) {
  const struct sl_format_reader* fmt = sl_parquet_reader();
  memset(out, 0, sizeof *out);
  struct sl_source* src;
  int rc = sl_source_open(path, alloc, &src, error);
  if (rc != 0) return rc;
  struct sl_reader_args args = {.source = src, .alloc = alloc, .batch_size = batch_size,
                                .format_options = options};
  void* reader;
  rc = fmt->open(&args, &reader, error);
  if (rc != 0) {
    sl_source_close(src);
    return rc;
  }
  rc = fmt->schema(reader, &out->schema, error);
  struct sl_split* splits = NULL;
  int64_t n = 0;
  if (rc == 0) rc = fmt->plan_splits(reader, &splits, &n, error);
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    void* st;
    int projected;
    rc = fmt->split_open(reader, &splits[i], columns, n_columns, &st, &projected, error);
    if (rc != 0) break;
    assert_int_equal(projected, 1);
    for (;;) {
      struct ArrowArray b;
      rc = fmt->split_next(st, &b, error);
      if (rc != 0 || b.release == NULL) break;
      struct ArrowSchema proj = {0};
      struct ArrowSchema* sch = &out->schema;
      if (columns != NULL) {
        rc = sl_schema_project(&out->schema, columns, n_columns, alloc, &proj, error);
        sch = &proj;
      }
      if (rc == 0) rc = sl_array_validate(sch, &b, SL_VALIDATE_FULL_UTF8, NULL, error);
      if (proj.release) proj.release(&proj);
      if (rc != 0) {
        fprintf(stderr, "INVALID BATCH from %s: %s\n", path, error->message);
        b.release(&b);
        abort();
      }
      out->rows += b.length;
      if (out->n_batches < 256) out->batches[out->n_batches++] = b;
      else b.release(&b);
    }
    fmt->split_close(st);
  }
  if (splits) sl_free(alloc, splits, (size_t)n * sizeof *splits);
  fmt->close(reader);
  sl_source_close(src);
  if (rc != 0) result_release(out);
  return rc;
}

static const char* data_path(const char* name, char* buf, size_t cap) {
  char rel[256];
  snprintf(rel, sizeof rel, "parquet-testing/data/%s", name);
  return test_corpus_path(rel, buf, cap);
}

static int corpus_available(void) {
  char p[512];
  return access(data_path("alltypes_plain.parquet", p, sizeof p), R_OK) == 0;
}

/* ---- tests ----------------------------------------------------------------- */

/// Every plain corpus file either decodes to valid Arrow or fails with a
/// message naming the file (the few that pyarrow refuses too, or that carry
/// corrupt checksums).
static void test_corpus_all_files(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char dir[512];
  data_path("", dir, sizeof dir);
  DIR* d = opendir(dir);
  assert_non_null(d);
  struct dirent* e;
  int ok = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 8 || strcmp(e->d_name + n - 8, ".parquet") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct result* r = malloc(sizeof *r);
    struct sluice_error err = {0};
    int rc = read_file(path, NULL, NULL, 0, NULL, 0, r, &err);
    if (rc == 0) {
      ++ok;
      result_release(r);
    } else {
      assert_non_null(strstr(err.message, e->d_name));
    }
    free(r);
  }
  closedir(d);
  assert_true(ok >= 50);
}

/// alltypes_plain.parquet: 8 rows whose content the parquet-testing README
/// and every reader agree on (ids 4,5,6,7,2,3,0,1; bools alternate; the
/// timestamps are the first of a month at 00:00 / 00:01).
static void test_alltypes_plain_values(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const char* const k_files[] = {"alltypes_plain.parquet", "alltypes_dictionary.parquet",
                                        "alltypes_plain.snappy.parquet"};
  for (size_t k = 0; k < 3; ++k) {
    char path[512];
    struct result* r = malloc(sizeof *r);
    struct sluice_error err;
    int rc = read_file(data_path(k_files[k], path, sizeof path), NULL, NULL, 0, NULL, 0, r, &err);
    if (rc != 0) fail_msg("%s", err.message);
    assert_int_equal(r->schema.n_children, 11);
    assert_string_equal(r->schema.children[0]->format, "i");
    assert_string_equal(r->schema.children[1]->format, "b");
    assert_string_equal(r->schema.children[9]->format, "z");
    assert_string_equal(r->schema.children[10]->format, "tsn:");
    static const int32_t k_ids[] = {4, 5, 6, 7, 2, 3, 0, 1};
    int64_t row = 0;
    for (int64_t b = 0; b < r->n_batches; ++b) {
      const struct ArrowArray* a = &r->batches[b];
      const int32_t* id = a->children[0]->buffers[1];
      const uint8_t* bools = a->children[1]->buffers[1];
      const int32_t* so = a->children[9]->buffers[1];
      const char* sd = a->children[9]->buffers[2];
      const int64_t* ts = a->children[10]->buffers[1];
      const double* dbl = a->children[7]->buffers[1];
      for (int64_t i = 0; i < a->length; ++i, ++row) {
        if (k == 0) assert_int_equal(id[i], k_ids[row]);
        int even = (id[i] % 2) == 0;
        assert_int_equal((bools[i >> 3] >> (i & 7)) & 1, even);
        assert_int_equal(so[i + 1] - so[i], 1);
        assert_int_equal(sd[so[i]], even ? '0' : '1');
        assert_true(dbl[i] == (even ? 0.0 : 10.1));
        // 2009-MM-01 00:00 or 00:01 UTC, in nanoseconds
        int64_t secs = ts[i] / 1000000000;
        assert_int_equal(secs % 86400, even ? 0 : 60);
        assert_true(secs >= 1230768000 && secs < 1262304000);
      }
    }
    assert_int_equal(row, k == 0 ? 8 : 2);
    result_release(r);
    free(r);
  }
}

static void test_projection(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char path[512];
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  const int64_t cols[] = {9, 0};
  int rc = read_file(data_path("alltypes_plain.parquet", path, sizeof path), NULL, cols, 2, NULL, 0,
                     r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->batches[0].n_children, 2);
  const int32_t* id = r->batches[0].children[1]->buffers[1];
  assert_int_equal(id[0], 4);
  assert_int_equal(r->rows, 8);
  result_release(r);
  // nested columns: one list column out of a nested file
  const int64_t nested[] = {1};
  rc = read_file(data_path("nullable.impala.parquet", path, sizeof path), NULL, nested, 1, NULL, 0,
                 r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, 7);
  assert_string_equal(r->schema.children[1]->format, "+l");
  result_release(r);
  free(r);
}

static void test_small_batches(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char path[512];
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  // 7300 rows in one row group, > 1M? no: batch slicing only applies past
  // 1M rows, so this checks that a small batch_size keeps one batch per
  // row group and all rows.
  int rc = read_file(data_path("alltypes_tiny_pages.parquet", path, sizeof path), NULL, NULL, 0,
                     NULL, 1000, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, 7300);
  result_release(r);
  free(r);
}

static void test_checksums(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char path[512];
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  int rc = read_file(data_path("datapage_v1-corrupt-checksum.parquet", path, sizeof path), NULL,
                     NULL, 0, NULL, 0, r, &err);
  assert_int_equal(rc, EILSEQ);
  assert_non_null(strstr(err.message, "datapage_v1-corrupt-checksum.parquet"));
  assert_non_null(strstr(err.message, "row group 0"));
  assert_non_null(strstr(err.message, "CRC"));
  rc = read_file(path, NULL, NULL, 0, "verify_checksums=false", 0, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, 5120);
  result_release(r);
  rc = read_file(data_path("datapage_v1-snappy-compressed-checksum.parquet", path, sizeof path), NULL,
                 NULL, 0, NULL, 0, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  result_release(r);
  rc = read_file(path, NULL, NULL, 0, "verify_checksums=maybe", 0, r, &err);
  assert_int_equal(rc, EINVAL);
  free(r);
}

static void test_dictionary_option(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char path[512];
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  int rc = read_file(data_path("alltypes_tiny_pages.parquet", path, sizeof path), NULL, NULL, 0,
                     "dictionary=true", 0, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  const struct ArrowSchema* s = r->schema.children[9];
  assert_string_equal(s->name, "string_col");
  assert_string_equal(s->format, "i");
  assert_non_null(s->dictionary);
  assert_string_equal(s->dictionary->format, "u");
  assert_int_equal(r->rows, 7300);
  result_release(r);
  // A row group cut into several batches (max_binary_batch_bytes): its
  // dictionary is built once per column chunk and every batch of the chunk
  // shares that one array (the same buffers), never a copy per batch.
  rc = read_file(path, NULL, NULL, 0, "dictionary=true,max_binary_batch_bytes=20000", 0, r, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, 7300);
  assert_true(r->n_batches > 2);
  const struct ArrowArray* d0 = r->batches[0].children[9]->dictionary;
  assert_non_null(d0);
  for (int64_t i = 1; i < r->n_batches; ++i) {
    const struct ArrowArray* d = r->batches[i].children[9]->dictionary;
    assert_non_null(d);
    assert_ptr_equal(d->buffers[1], d0->buffers[1]);
    assert_ptr_equal(d->buffers[2], d0->buffers[2]);
    assert_int_equal(d->length, d0->length);
  }
  result_release(r);
  free(r);
}

/// max_binary_batch_bytes: a dictionary column whose values expand past the
/// limit (the chunk sizes said less, so the row group is not cut) switches
/// to 64-bit offsets mid-chunk; batches of batch_rows rows then come out as
/// binary arrays within the limit, and one batch for the whole row group is
/// refused with EOVERFLOW, never overflowing.
static void test_binary_limit(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char path[512];
  data_path("plain-dict-uncompressed-checksum.parquet", path, sizeof path);
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  int rc = read_file(path, NULL, NULL, 0, "max_binary_batch_bytes=10000,batch_rows=200", 0, r,
                     &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(r->rows, 1000);
  assert_int_equal(r->n_batches, 5);
  int64_t col = -1;
  for (int64_t i = 0; i < r->schema.n_children; ++i)
    if (strcmp(r->schema.children[i]->name, "binary_field") == 0) col = i;
  assert_true(col >= 0);
  assert_string_equal(r->schema.children[col]->format, "z");
  for (int64_t b = 0; b < r->n_batches; ++b) {
    const struct ArrowArray* c = r->batches[b].children[col];
    const int32_t* o = c->buffers[1];
    assert_int_equal(c->length, 200);
    assert_true(o[c->offset + c->length] - o[c->offset] <= 10000);
  }
  result_release(r);
  rc = read_file(path, NULL, NULL, 0, "max_binary_batch_bytes=10000", 0, r, &err);
  assert_int_equal(rc, EOVERFLOW);
  assert_non_null(strstr(err.message, "binary_field"));
  free(r);
}

static void test_stored_stats(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  char path[512];
  const struct sl_format_reader* fmt = sl_parquet_reader();
  struct sl_source* src;
  struct sluice_error err;
  assert_int_equal(sl_source_open(data_path("int32_decimal.parquet", path, sizeof path), NULL, &src, &err), 0);
  struct sl_reader_args args = {.source = src};
  void* reader;
  assert_int_equal(fmt->open(&args, &reader, &err), 0);
  int64_t rows;
  struct sl_stored_column_stats st[1];
  struct ArrowArray mm;
  assert_int_equal(fmt->stored_stats(reader, NULL, 0, &rows, st, &mm, &err), 0);
  assert_int_equal(rows, 24);
  assert_int_equal(st[0].null_count, 0);
  assert_int_equal(st[0].has_min_max, 1);
  // decimal(4,2) values 1.00 .. 24.00: unscaled 100 and 2400
  const int64_t* v = mm.children[0]->buffers[1];
  assert_int_equal(v[0], 100);
  assert_int_equal(v[2], 2400);
  mm.release(&mm);
  fmt->close(reader);
  sl_source_close(src);
}

static void test_encrypted(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const char* const k_names[] = {"uniform_encryption.parquet.encrypted",
                                        "encrypt_columns_plaintext_footer.parquet.encrypted"};
  for (size_t i = 0; i < 2; ++i) {
    char path[512];
    struct result* r = malloc(sizeof *r);
    struct sluice_error err;
    int rc = read_file(data_path(k_names[i], path, sizeof path), NULL, NULL, 0, NULL, 0, r, &err);
    assert_int_equal(rc, ENOTSUP);
    assert_non_null(strstr(err.message, "encrypted Parquet is not supported"));
    free(r);
  }
}

/// Every fuzzer-found file gives an error, never a crash. ARROW-GH-43605 (a
/// dictionary index page of bit width 0, i.e. all indices 0) is read by
/// pyarrow and DuckDB alike, so it is allowed to succeed.
static void test_bad_data(void** state) {
  (void)state;
  char dir[512];
  test_corpus_path("parquet-testing/bad_data", dir, sizeof dir);
  DIR* d = opendir(dir);
  if (d == NULL) skip();
  struct dirent* e;
  int seen = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 8 || strcmp(e->d_name + n - 8, ".parquet") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct result* r = malloc(sizeof *r);
    struct sluice_error err = {0};
    int rc = read_file(path, NULL, NULL, 0, NULL, 0, r, &err);
    if (rc == 0) {
      result_release(r);
      if (strcmp(e->d_name, "ARROW-GH-43605.parquet") != 0) fail_msg("%s: no error", e->d_name);
    } else {
      assert_non_null(strstr(err.message, e->d_name));
    }
    free(r);
    ++seen;
  }
  closedir(d);
  assert_true(seen >= 5);
}

/// Truncations and byte flips of a real file: error or data, never a crash.
static void test_mutations(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  static const char* const k_names[] = {"alltypes_plain.snappy.parquet", "nullable.impala.parquet",
                                        "delta_byte_array.parquet", "datapage_v2.snappy.parquet"};
  for (size_t f = 0; f < sizeof k_names / sizeof *k_names; ++f) {
    char path[512], tmp[512];
    size_t size;
    uint8_t* data = test_read_file(data_path(k_names[f], path, sizeof path), &size);
    assert_non_null(data);
    test_temp_path("mutated.parquet", tmp, sizeof tmp);
    uint8_t* copy = malloc(size);
    unsigned seed = 12345;
    for (int round = 0; round < 150; ++round) {
      memcpy(copy, data, size);
      seed = seed * 1103515245u + 12345u;
      size_t at = 4 + (seed >> 8) % (size - 12);
      copy[at] ^= (uint8_t)(1u + (seed & 0x7f));
      assert_int_equal(test_write_file(tmp, copy, size), 0);
      struct result* r = malloc(sizeof *r);
      struct sluice_error err;
      if (read_file(tmp, NULL, NULL, 0, "verify_checksums=false", 0, r, &err) == 0) result_release(r);
      free(r);
    }
    free(copy);
    free(data);
    unlink(tmp);
  }
}

/// A crafted file of one int32 column "a": n_groups row groups of `rows`
/// rows, each one PLAIN data page of `bsize` bytes at `body` whose header
/// says `num_values` values and `usize` uncompressed bytes (the column's
/// definition levels, if optional, are the caller's part of the body).
struct crafted {
  enum pq_codec codec;
  enum pq_repetition repetition;
  int n_groups;
  int64_t rows, num_values;
  int32_t usize;
  const uint8_t* body;
  int32_t bsize;
};

static void write_crafted(const char* path, const struct crafted* c) {
  struct sl_buffer out;
  sl_buffer_init(&out, NULL);
  struct sluice_error err;
  assert_int_equal(sl_buffer_append(&out, "PAR1", 4), 0);
  struct pq_row_group groups[8];
  struct pq_column_chunk chunks[8];
  int32_t encodings[2] = {PQ_ENC_PLAIN, PQ_ENC_RLE};
  struct pq_bytes name = {(const uint8_t*)"a", 1, 1};
  assert_true(c->n_groups <= 8);
  for (int g = 0; g < c->n_groups; ++g) {
    int64_t at = out.size;
    struct pq_page_header h;
    sl_pq_page_header_init(&h);
    h.type = PQ_PAGE_DATA;
    h.uncompressed_page_size = c->usize;
    h.compressed_page_size = c->bsize;
    h.num_values = (int32_t)c->num_values;
    h.encoding = PQ_ENC_PLAIN;
    h.definition_level_encoding = h.repetition_level_encoding = PQ_ENC_RLE;
    assert_int_equal(sl_pq_page_header_write(&h, &out, &err), 0);
    assert_int_equal(sl_buffer_append(&out, c->body, c->bsize), 0);
    struct pq_column_meta m;
    sl_pq_column_meta_init(&m);
    m.type = PQ_INT32;
    m.encodings = encodings;
    m.n_encodings = 2;
    m.path_in_schema = &name;
    m.n_path = 1;
    m.codec = c->codec;
    m.num_values = c->rows;
    m.total_compressed_size = m.total_uncompressed_size = out.size - at;
    m.data_page_offset = at;
    chunks[g] = (struct pq_column_chunk){.file_offset = at, .has_meta_data = 1, .meta_data = m};
    groups[g] = (struct pq_row_group){.columns = &chunks[g], .n_columns = 1,
                                      .total_byte_size = out.size - at, .num_rows = c->rows,
                                      .file_offset = -1, .total_compressed_size = -1,
                                      .ordinal = -1};
  }
  struct pq_schema_element schema[2];
  sl_pq_schema_element_init(&schema[0]);
  schema[0].name = (struct pq_bytes){(const uint8_t*)"schema", 6, 1};
  schema[0].num_children = 1;
  sl_pq_schema_element_init(&schema[1]);
  schema[1].has_type = 1;
  schema[1].type = PQ_INT32;
  schema[1].has_repetition = 1;
  schema[1].repetition = c->repetition;
  schema[1].name = name;
  struct pq_file_meta meta = {.version = 1, .schema = schema, .n_schema = 2,
                              .num_rows = c->rows * c->n_groups, .row_groups = groups,
                              .n_row_groups = c->n_groups};
  int64_t footer = out.size;
  assert_int_equal(sl_pq_file_meta_write(&meta, &out, &err), 0);
  uint32_t len = (uint32_t)(out.size - footer);
  assert_int_equal(sl_buffer_append(&out, &len, 4), 0);
  assert_int_equal(sl_buffer_append(&out, "PAR1", 4), 0);
  assert_int_equal(test_write_file(path, out.data, (size_t)out.size), 0);
  sl_buffer_reset(&out);
}

/// Reads a crafted file through the counting allocator: the error (which
/// must be one) and the peak of live bytes.
static long long read_crafted(const struct crafted* c, const char* options,
                              struct sluice_error* err) {
  char path[512];
  test_temp_path("crafted.parquet", path, sizeof path);
  write_crafted(path, c);
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct result* r = malloc(sizeof *r);
  int rc = read_file(path, &ta.base, NULL, 0, options, 0, r, err);
  if (rc == 0) result_release(r);
  free(r);
  unlink(path);
  assert_int_not_equal(rc, 0);
  assert_int_equal(ta.live_bytes, 0);
  return (long long)ta.peak_bytes;
}

/// A page header's uncompressed size is a claim: one its compressed bytes
/// cannot make is refused before anything is allocated for it (it was
/// reserved and mapped first: 2 GiB per worker for a 274-byte file),
/// naming the page and both sizes. pyarrow: "Corrupt snappy compressed
/// data", at 127 MB.
static void test_declared_page_size_bounded(void** state) {
  (void)state;
  const int32_t claim = 1 << 28;
  struct pq_codec_ctx* ctx;
  struct sluice_error err;
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  int32_t values[16];
  for (int i = 0; i < 16; ++i) values[i] = i;
  static const enum pq_codec k_codecs[] = {PQ_CODEC_SNAPPY, PQ_CODEC_GZIP, PQ_CODEC_BROTLI,
                                           PQ_CODEC_ZSTD, PQ_CODEC_LZ4_RAW};
  for (size_t i = 0; i <= sizeof k_codecs / sizeof *k_codecs; ++i) {
    struct sl_buffer page;
    sl_buffer_init(&page, NULL);
    enum pq_codec codec = PQ_CODEC_SNAPPY;
    const char* why = "more than the codec can expand";
    if (i < sizeof k_codecs / sizeof *k_codecs) {
      // A real page of 16 values under a header claiming 256 MiB.
      codec = k_codecs[i];
      assert_int_equal(sl_pq_compress(ctx, codec, PQ_LEVEL_DEFAULT, (const uint8_t*)values,
                                      sizeof values, &page, &err), 0);
      if (codec == PQ_CODEC_SNAPPY) why = "page decompresses to 64 bytes, header says 268435456";
      if (codec == PQ_CODEC_ZSTD) why = "make at most 64";
    } else {
      // The snappy length header agrees with the claim; one byte follows.
      static const uint8_t k_body[] = {0x80, 0x80, 0x80, 0x80, 0x01, 0x00};
      assert_int_equal(sl_buffer_append(&page, k_body, sizeof k_body), 0);
    }
    struct crafted c = {.codec = codec, .repetition = PQ_REQUIRED, .n_groups = 4, .rows = 16,
                        .num_values = 16, .usize = claim, .body = page.data,
                        .bsize = (int32_t)page.size};
    long long peak = read_crafted(&c, NULL, &err);
    print_message("%s: peak %lld bytes: %s\n", sl_pq_codec_name(codec), peak, err.message);
    assert_int_equal(err.code, EILSEQ);
    assert_non_null(strstr(err.message, "row group 0, column a: page at byte 4: "));
    assert_non_null(strstr(err.message, why));
    assert_true(peak < (1 << 20));
    sl_buffer_reset(&page);
  }
  sl_pq_codec_ctx_free(ctx);
}

/// A page's value count is a claim too: a required PLAIN page of n int32
/// values needs 4n bytes, and one that has fewer is refused before the
/// row group's slots are reserved and the page's mapped (a 124-byte file
/// made 1 GB resident before "PLAIN values past the page end"; with
/// 2^31-1 rows, 8 GiB and a bare "out of memory").
static void test_declared_value_count_bounded(void** state) {
  (void)state;
  struct pq_codec_ctx* ctx;
  struct sluice_error err;
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  const int32_t values[5] = {1, 2, 3, 4, 5};
  for (int compressed = 0; compressed <= 1; ++compressed) {
    struct sl_buffer page;
    sl_buffer_init(&page, NULL);
    assert_int_equal(sl_pq_compress(ctx, compressed ? PQ_CODEC_SNAPPY : PQ_CODEC_UNCOMPRESSED,
                                    PQ_LEVEL_DEFAULT, (const uint8_t*)values, sizeof values, &page,
                                    &err), 0);
    struct crafted c = {.codec = compressed ? PQ_CODEC_SNAPPY : PQ_CODEC_UNCOMPRESSED,
                        .repetition = PQ_REQUIRED, .n_groups = 1, .rows = 1 << 28,
                        .num_values = 1 << 28, .usize = sizeof values, .body = page.data,
                        .bsize = (int32_t)page.size};
    long long peak = read_crafted(&c, NULL, &err);
    print_message("peak %lld bytes: %s\n", peak, err.message);
    assert_true(peak < (1 << 20));
    assert_int_equal(err.code, EILSEQ);
    assert_non_null(strstr(err.message, "row group 0, column a: page at byte 4: the page says "
                                        "268435456 values, which need 1073741824 bytes or more; "
                                        "it has 20"));
    sl_buffer_reset(&page);
  }
  sl_pq_codec_ctx_free(ctx);
}

/// An allocator that refuses any block over 64 MiB (the rest: malloc).
static void* capped_allocate(void* ctx, size_t size, size_t alignment) {
  (void)ctx;
  if (size > ((size_t)64 << 20)) return NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
static void capped_deallocate(void* ctx, void* ptr, size_t size) {
  (void)ctx;
  (void)size;
  free(ptr);
}

/// A page of `rows` nulls of an optional int32 column: its definition
/// levels one RLE run (the v1 length first), no values.
static int null_run_page(uint8_t body[16], int64_t rows) {
  int n = 4;
  uint64_t v = (uint64_t)rows << 1;
  for (; v >= 0x80; v >>= 7) body[n++] = (uint8_t)(v | 0x80);
  body[n++] = (uint8_t)v;
  body[n++] = 0;
  uint32_t len = (uint32_t)(n - 4);
  memcpy(body, &len, 4);
  return n;
}

/// Running out of memory names the row group, column and page, and what
/// was asked for (it said "file: out of memory"). A valid page: 2^28 nulls
/// of an optional int32 column in one RLE run, its row group decoded whole
/// (slice_bytes above it: pyarrow's read_table needs 1 GiB too).
static void test_out_of_memory_names_the_page(void** state) {
  (void)state;
  uint8_t body[16];
  int n = null_run_page(body, (int64_t)1 << 28);
  struct crafted c = {.codec = PQ_CODEC_UNCOMPRESSED, .repetition = PQ_OPTIONAL, .n_groups = 1,
                      .rows = 1 << 28, .num_values = 1 << 28, .usize = n, .body = body,
                      .bsize = n};
  char path[512];
  test_temp_path("nulls.parquet", path, sizeof path);
  write_crafted(path, &c);
  struct sluice_allocator capped = {capped_allocate, capped_deallocate, NULL};
  struct result* r = malloc(sizeof *r);
  struct sluice_error err;
  int rc = read_file(path, &capped, NULL, 0, "slice_bytes=4G", 0, r, &err);
  if (rc == 0) result_release(r);
  free(r);
  unlink(path);
  print_message("%s\n", err.message);
  assert_int_equal(rc, ENOMEM);
  assert_non_null(strstr(err.message, "nulls.parquet: row group 0, column a: page at byte 4: "
                                      "out of memory (1073741824 bytes for the row group's values)"));
}

/// A row group read a batch at a time decodes a page a batch's share at a
/// time: a page of 2^31 - 1 nulls in 13 bytes (17 GB decoded whole; it was
/// refused, or read whole for 10^8 of them) comes out in batches of 65536
/// rows with a few MiB live, every row null. Also with the page's rows
/// split over two row groups' worth of batches that do not line up.
static void test_null_run_read_in_pieces(void** state) {
  (void)state;
  static const int64_t k_rows[] = {INT32_MAX, 100000000};
  static const int64_t k_batch[] = {65536, 1000003};
  for (int t = 0; t < 2; ++t) {
    uint8_t body[16];
    int n = null_run_page(body, k_rows[t]);
    struct crafted c = {.codec = PQ_CODEC_UNCOMPRESSED, .repetition = PQ_OPTIONAL,
                        .n_groups = 1, .rows = k_rows[t], .num_values = k_rows[t], .usize = n,
                        .body = body, .bsize = n};
    char path[512];
    test_temp_path("nulls.parquet", path, sizeof path);
    write_crafted(path, &c);
    struct test_allocator ta;
    test_allocator_init(&ta);
    const struct sl_format_reader* fmt = sl_parquet_reader();
    struct sluice_error err;
    struct sl_source* src;
    assert_int_equal(sl_source_open(path, &ta.base, &src, &err), 0);
    struct sl_reader_args args = {.source = src, .alloc = &ta.base, .batch_size = k_batch[t]};
    void* reader;
    assert_int_equal(fmt->open(&args, &reader, &err), 0);
    struct sl_split* splits = NULL;
    int64_t n_splits = 0;
    assert_int_equal(fmt->plan_splits(reader, &splits, &n_splits, &err), 0);
    assert_int_equal(n_splits, 1);
    void* st;
    int projected;
    assert_int_equal(fmt->split_open(reader, &splits[0], NULL, 0, &st, &projected, &err), 0);
    int64_t rows = 0, nulls = 0, batches = 0;
    // 10^8 rows are enough to show the pages decode in pieces; 2^31 - 1
    // take a while: the first 64 batches of them.
    while (t == 1 || batches < 64) {
      struct ArrowArray b;
      int rc = fmt->split_next(st, &b, &err);
      if (rc != 0) fail_msg("%s", err.message);
      if (b.release == NULL) break;
      assert_int_equal(b.n_children, 1);
      assert_true(b.length == k_batch[t] || rows + b.length == k_rows[t]);
      rows += b.length;
      nulls += b.children[0]->null_count;
      ++batches;
      b.release(&b);
    }
    assert_int_equal(nulls, rows);
    if (t == 1) assert_int_equal(rows, k_rows[t]);
    fmt->split_close(st);
    sl_free(&ta.base, splits, (size_t)n_splits * sizeof *splits);
    fmt->close(reader);
    sl_source_close(src);
    unlink(path);
    print_message("%" PRId64 " rows of %" PRId64 " in batches of %" PRId64 ": peak %lld bytes\n",
                  rows, k_rows[t], k_batch[t], (long long)ta.peak_bytes);
    // A batch: 4 bytes a row and its validity, its levels, and the slack.
    assert_true(ta.peak_bytes < k_batch[t] * 16 + (4 << 20));
    assert_int_equal(ta.live_bytes, 0);
  }
}

static void test_allocation_failures(void** state) {
  (void)state;
  if (!corpus_available()) skip();
  // list_columns carries an ARROW:schema; the last case builds dictionaries
  static const char* const k_names[] = {"alltypes_plain.snappy.parquet", "nullable.impala.parquet",
                                        "list_columns.parquet", "datapage_v2.snappy.parquet",
                                        "alltypes_tiny_pages.parquet",
                                        "alltypes_tiny_pages.parquet"};
  static const char* const k_options[] = {NULL, NULL, NULL, NULL, "dictionary=true",
                                          "max_binary_batch_bytes=20000"};
  for (size_t f = 0; f < sizeof k_names / sizeof *k_names; ++f) {
    char path[512];
    data_path(k_names[f], path, sizeof path);
    long long fail;
    for (fail = 1; fail < 20000; ++fail) {
      struct test_allocator ta;
      test_allocator_init(&ta);
      ta.fail_at = fail;
      struct result* r = malloc(sizeof *r);
      struct sluice_error err;
      int rc = read_file(path, &ta.base, NULL, 0, k_options[f], 0, r, &err);
      if (rc == 0) result_release(r);
      free(r);
      if (ta.live_bytes != 0)
        fail_msg("%s: leak of %lld bytes after failing allocation %lld (%s)", k_names[f],
                 (long long)ta.live_bytes, fail, rc ? err.message : "");
      if (rc == 0) break;
      assert_int_equal(rc, ENOMEM);
    }
    assert_true(fail < 20000);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus_all_files),
      cmocka_unit_test(test_alltypes_plain_values),
      cmocka_unit_test(test_projection),
      cmocka_unit_test(test_small_batches),
      cmocka_unit_test(test_checksums),
      cmocka_unit_test(test_dictionary_option),
      cmocka_unit_test(test_binary_limit),
      cmocka_unit_test(test_stored_stats),
      cmocka_unit_test(test_encrypted),
      cmocka_unit_test(test_bad_data),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_declared_page_size_bounded),
      cmocka_unit_test(test_declared_value_count_bounded),
      cmocka_unit_test(test_out_of_memory_names_the_page),
    cmocka_unit_test(test_null_run_read_in_pieces),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
