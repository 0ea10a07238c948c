// Parquet metadata (pq_meta.h, pq_thrift.h): every footer of the
// parquet-testing corpus parses, writes back and parses again to the same
// structs; page headers of every column chunk round-trip too; truncated and
// bit-flipped footers give EILSEQ or a parse, never a crash (run under ASan);
// allocation failures leak nothing; crafted Thrift (deep nesting, lying
// counts, overflowing varints) is refused; statistics merge with the right
// sort order per type.
//
// Also a driver for tests/py/test_parquet_meta.py:
// `test_parquet_meta --rewrite-footer IN OUT` rewrites IN's footer with
// sl_pq_file_meta_write, for pyarrow to read back.
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_buffer.h"
#include "core/sl_error.h"
#include "format/parquet/pq_meta.h"
#include "format/parquet/pq_thrift.h"
#include "test_util.h"

/* ---- helpers -------------------------------------------------------------- */

struct footer {
  uint8_t* file;
  size_t file_size;
  const uint8_t* data;  ///< the FileMetaData bytes inside file
  int64_t size;
  int encrypted;        ///< "PARE" magic
};

/// Reads a whole file and locates its footer; 0 if it is not a Parquet file.
static int footer_load(const char* path, struct footer* f) {
  memset(f, 0, sizeof *f);
  f->file = test_read_file(path, &f->file_size);
  if (f->file == NULL || f->file_size < 12) return 0;
  const uint8_t* end = f->file + f->file_size;
  if (memcmp(end - 4, "PARE", 4) == 0) f->encrypted = 1;
  else if (memcmp(end - 4, "PAR1", 4) != 0) return 0;
  uint32_t len = (uint32_t)end[-8] | (uint32_t)end[-7] << 8 | (uint32_t)end[-6] << 16 |
                 (uint32_t)end[-5] << 24;
  if ((size_t)len > f->file_size - 8) return 0;
  f->data = end - 8 - len;
  f->size = len;
  return 1;
}

static void footer_free(struct footer* f) {
  free(f->file);
  memset(f, 0, sizeof *f);
}

static const char* data_dir(char* out, size_t cap) {
  return test_corpus_path("parquet-testing/data", out, cap);
}

/// Calls fn(path, name) for every *.parquet of the corpus; returns the count.
static int for_each_corpus_file(void (*fn)(const char* path, const char* name)) {
  char dir[512];
  data_dir(dir, sizeof dir);
  DIR* d = opendir(dir);
  if (d == NULL) return -1;
  int n = 0;
  struct dirent* ent;
  while ((ent = readdir(d)) != NULL) {
    size_t len = strlen(ent->d_name);
    int plain = len >= 8 && strcmp(ent->d_name + len - 8, ".parquet") == 0;
    int encrypted = len >= 18 && strcmp(ent->d_name + len - 18, ".parquet.encrypted") == 0;
    if (!plain && !encrypted) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    fn(path, ent->d_name);
    ++n;
  }
  closedir(d);
  return n;
}

static int bytes_equal(const struct pq_bytes* a, const struct pq_bytes* b) {
  if (a->present != b->present || a->size != b->size) return 0;
  return a->size == 0 || memcmp(a->data, b->data, (size_t)a->size) == 0;
}

#define CHECK(cond, ...)                                    \
  do {                                                      \
    if (!(cond)) {                                          \
      fail_msg("%s: %s (" #cond ")", name, __VA_ARGS__);    \
    }                                                       \
  } while (0)

static void compare_stats(const char* name, const struct pq_statistics* a,
                          const struct pq_statistics* b) {
  CHECK(a->present == b->present, "statistics present");
  CHECK(bytes_equal(&a->min, &b->min) && bytes_equal(&a->max, &b->max), "legacy min/max");
  CHECK(bytes_equal(&a->min_value, &b->min_value), "min_value");
  CHECK(bytes_equal(&a->max_value, &b->max_value), "max_value");
  CHECK(a->null_count == b->null_count && a->distinct_count == b->distinct_count, "counts");
  CHECK(a->is_min_value_exact == b->is_min_value_exact, "is_min_value_exact");
  CHECK(a->is_max_value_exact == b->is_max_value_exact, "is_max_value_exact");
}

static void compare_key_values(const char* name, const struct pq_key_value* a, int64_t na,
                               const struct pq_key_value* b, int64_t nb) {
  CHECK(na == nb, "key_value_metadata count");
  for (int64_t i = 0; i < na; ++i) {
    CHECK(bytes_equal(&a[i].key, &b[i].key) && bytes_equal(&a[i].value, &b[i].value),
          "key_value_metadata entry");
  }
}

/// Field-by-field equality of an original and its re-parsed copy.
static void compare_meta(const char* name, const struct pq_file_meta* a,
                         const struct pq_file_meta* b) {
  CHECK(a->version == b->version, "version");
  CHECK(a->num_rows == b->num_rows, "num_rows");
  CHECK(a->no_column_orders == b->no_column_orders, "column_orders");
  CHECK(a->n_column_orders == b->n_column_orders, "column_orders count");
  for (int64_t i = 0; i < a->n_column_orders; ++i) {
    CHECK(a->column_orders[i] == b->column_orders[i] || a->column_orders[i] == 0, "column order");
  }
  CHECK(bytes_equal(&a->created_by, &b->created_by), "created_by");
  compare_key_values(name, a->key_value_metadata, a->n_key_value_metadata,
                     b->key_value_metadata, b->n_key_value_metadata);
  CHECK(a->n_schema == b->n_schema, "schema size");
  for (int64_t i = 0; i < a->n_schema; ++i) {
    const struct pq_schema_element *x = &a->schema[i], *y = &b->schema[i];
    CHECK(x->has_type == y->has_type && x->type == y->type, "schema type");
    CHECK(x->type_length == y->type_length || x->type != PQ_FIXED_LEN_BYTE_ARRAY, "type_length");
    CHECK(x->has_repetition == y->has_repetition && x->repetition == y->repetition, "repetition");
    CHECK(bytes_equal(&x->name, &y->name), "schema name");
    CHECK(x->num_children == y->num_children, "num_children");
    // The writer adds the ConvertedType of a LogicalType where the original had none.
    if (x->converted_type != PQ_CONVERTED_NONE) {
      CHECK(x->converted_type == y->converted_type, "converted_type");
      if (x->converted_type == PQ_CT_DECIMAL) {
        CHECK(x->scale == y->scale && x->precision == y->precision, "scale/precision");
      }
    }
    CHECK(x->has_field_id == y->has_field_id && x->field_id == y->field_id, "field_id");
    if (x->logical.kind == PQ_LOGICAL_UNKNOWN_MEMBER) {
      CHECK(y->logical.kind == PQ_LOGICAL_NONE, "unknown logical type dropped");
    } else {
      CHECK(memcmp(&x->logical, &y->logical, sizeof x->logical) == 0, "logical type");
    }
  }
  CHECK(a->n_row_groups == b->n_row_groups, "row group count");
  for (int64_t g = 0; g < a->n_row_groups; ++g) {
    const struct pq_row_group *x = &a->row_groups[g], *y = &b->row_groups[g];
    CHECK(x->n_columns == y->n_columns && x->num_rows == y->num_rows, "row group shape");
    CHECK(x->total_byte_size == y->total_byte_size && x->file_offset == y->file_offset &&
              x->total_compressed_size == y->total_compressed_size && x->ordinal == y->ordinal,
          "row group fields");
    for (int64_t c = 0; c < x->n_columns; ++c) {
      const struct pq_column_chunk *cx = &x->columns[c], *cy = &y->columns[c];
      CHECK(bytes_equal(&cx->file_path, &cy->file_path) && cx->file_offset == cy->file_offset,
            "column chunk");
      CHECK(cx->has_meta_data == cy->has_meta_data, "has_meta_data");
      const struct pq_column_meta *mx = &cx->meta_data, *my = &cy->meta_data;
      CHECK(mx->type == my->type && mx->codec == my->codec && mx->num_values == my->num_values,
            "column meta");
      CHECK(mx->total_uncompressed_size == my->total_uncompressed_size &&
                mx->total_compressed_size == my->total_compressed_size,
            "column sizes");
      CHECK(mx->data_page_offset == my->data_page_offset &&
                mx->index_page_offset == my->index_page_offset &&
                mx->dictionary_page_offset == my->dictionary_page_offset,
            "page offsets");
      CHECK(mx->n_encodings == my->n_encodings, "encodings count");
      for (int64_t i = 0; i < mx->n_encodings; ++i) {
        CHECK(mx->encodings[i] == my->encodings[i], "encoding");
      }
      CHECK(mx->n_path == my->n_path, "path length");
      for (int64_t i = 0; i < mx->n_path; ++i) {
        CHECK(bytes_equal(&mx->path_in_schema[i], &my->path_in_schema[i]), "path element");
      }
      compare_key_values(name, mx->key_value_metadata, mx->n_key_value_metadata,
                         my->key_value_metadata, my->n_key_value_metadata);
      compare_stats(name, &mx->statistics, &my->statistics);
    }
  }
}

static int64_t count_leaves(const struct pq_file_meta* m) {
  int64_t n = 0;
  for (int64_t i = 1; i < m->n_schema; ++i) n += m->schema[i].has_type != 0;
  return n;
}

/// Walks the pages of every column chunk: parse, write, parse again, compare.
static void check_pages(const char* name, const struct footer* f, const struct pq_file_meta* m) {
  for (int64_t g = 0; g < m->n_row_groups; ++g) {
    for (int64_t c = 0; c < m->row_groups[g].n_columns; ++c) {
      const struct pq_column_meta* cm = &m->row_groups[g].columns[c].meta_data;
      // The chunk starts at the lower of the two offsets (some writers leave
      // data_page_offset 0 in a chunk of only a dictionary page).
      int64_t start = cm->data_page_offset, dict = cm->dictionary_page_offset;
      if (dict >= 4 && (dict < start || start < 4)) start = dict;
      int64_t end = start + cm->total_compressed_size, pos = start;
      int64_t values = 0;
      if (end > (int64_t)f->file_size || end < start) continue;  // a lying footer: not ours to test
      for (int pages = 0; pos < end && pages < 100000; ++pages) {
        struct pq_page_header h, h2;
        int64_t used, used2;
        struct sluice_error err;
        int rc = sl_pq_page_header_parse(f->file + pos, end - pos, &h, &used, &err);
        if (rc != 0) fail_msg("%s rg %lld col %lld page at %lld: %s", name, (long long)g,
                              (long long)c, (long long)pos, err.message);
        if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) values += h.num_values;
        if (h.type <= PQ_PAGE_DATA_V2 && h.type != PQ_PAGE_INDEX) {
          struct sl_buffer buf;
          sl_buffer_init(&buf, NULL);
          assert_int_equal(sl_pq_page_header_write(&h, &buf, &err), 0);
          assert_int_equal(sl_pq_page_header_parse(buf.data, buf.size, &h2, &used2, &err), 0);
          assert_int_equal(used2, buf.size);
          assert_int_equal(h.type, h2.type);
          assert_int_equal(h.compressed_page_size, h2.compressed_page_size);
          assert_int_equal(h.uncompressed_page_size, h2.uncompressed_page_size);
          assert_int_equal(h.has_crc, h2.has_crc);
          assert_int_equal(h.crc, h2.crc);
          assert_int_equal(h.num_values, h2.num_values);
          assert_int_equal(h.encoding, h2.encoding);
          assert_int_equal(h.num_nulls, h2.num_nulls);
          assert_int_equal(h.num_rows, h2.num_rows);
          assert_int_equal(h.definition_levels_byte_length, h2.definition_levels_byte_length);
          assert_int_equal(h.repetition_levels_byte_length, h2.repetition_levels_byte_length);
          assert_int_equal(h.is_compressed, h2.is_compressed);
          assert_int_equal(h.is_sorted, h2.is_sorted);
          if (h.type == PQ_PAGE_DATA) {
            assert_int_equal(h.definition_level_encoding, h2.definition_level_encoding);
            assert_int_equal(h.repetition_level_encoding, h2.repetition_level_encoding);
          }
          if (h.type != PQ_PAGE_DICTIONARY) compare_stats(name, &h.statistics, &h2.statistics);
          sl_buffer_reset(&buf);
        }
        pos += used + h.compressed_page_size;
      }
      // The pages of a chunk add up to its num_values.
      if (values != cm->num_values) {
        fail_msg("%s rg %lld col %lld: pages hold %lld values, metadata says %lld", name,
                 (long long)g, (long long)c, (long long)values, (long long)cm->num_values);
      }
    }
  }
}

/* ---- corpus --------------------------------------------------------------- */

static int g_parsed, g_plaintext_footer;  // test bookkeeping only (one thread)

static void round_trip_file(const char* path, const char* name) {
  struct footer f;
  if (!footer_load(path, &f) || f.encrypted) {
    footer_free(&f);
    return;
  }
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct pq_file_meta m, m2;
  struct sluice_error err;
  int rc = sl_pq_file_meta_parse(f.data, f.size, &ta.base, &m, &err);
  if (rc != 0) fail_msg("%s: %s", name, err.message);
  ++g_parsed;
  struct sl_buffer buf, buf2;
  sl_buffer_init(&buf, &ta.base);
  sl_buffer_init(&buf2, &ta.base);
  if (m.encrypted) {  // plaintext footer of an encrypted file: not writable
    ++g_plaintext_footer;
    int64_t encrypted_chunks = 0;
    for (int64_t g = 0; g < m.n_row_groups; ++g) {
      for (int64_t c = 0; c < m.row_groups[g].n_columns; ++c) {
        encrypted_chunks += m.row_groups[g].columns[c].encrypted;
      }
    }
    CHECK(encrypted_chunks > 0, "plaintext footer without encrypted column chunks");
    assert_int_equal(sl_pq_file_meta_write(&m, &buf, &err), ENOTSUP);
    sl_pq_file_meta_free(&m);
    sl_buffer_reset(&buf);
    footer_free(&f);
    return;
  }
  rc = sl_pq_file_meta_write(&m, &buf, &err);
  if (rc != 0) fail_msg("%s: write: %s", name, err.message);
  rc = sl_pq_file_meta_parse(buf.data, buf.size, &ta.base, &m2, &err);
  if (rc != 0) fail_msg("%s: re-parse: %s", name, err.message);
  compare_meta(name, &m, &m2);
  // Writing the copy again gives the same bytes.
  assert_int_equal(sl_pq_file_meta_write(&m2, &buf2, &err), 0);
  if (buf.size != buf2.size || memcmp(buf.data, buf2.data, (size_t)buf.size) != 0) {
    fail_msg("%s: second write differs", name);
  }
  // Merged statistics agree between the original and the copy.
  for (int64_t leaf = 0; leaf < count_leaves(&m); ++leaf) {
    struct pq_merged_stats s1, s2;
    assert_int_equal(sl_pq_merge_column_stats(&m, leaf, &s1, &err), 0);
    assert_int_equal(sl_pq_merge_column_stats(&m2, leaf, &s2, &err), 0);
    CHECK(s1.null_count == s2.null_count && s1.has_min_max == s2.has_min_max, "merged stats");
    CHECK(bytes_equal(&s1.min, &s2.min) && bytes_equal(&s1.max, &s2.max), "merged bounds");
  }
  check_pages(name, &f, &m);
  sl_pq_file_meta_free(&m);
  sl_pq_file_meta_free(&m2);
  sl_buffer_reset(&buf);
  sl_buffer_reset(&buf2);
  if (ta.live_bytes != 0) fail_msg("%s: %lld bytes leaked", name, (long long)ta.live_bytes);
  footer_free(&f);
}

static void test_corpus_round_trip(void** state) {
  (void)state;
  g_parsed = g_plaintext_footer = 0;
  int n = for_each_corpus_file(round_trip_file);
  if (n < 0) skip();
  print_message("parsed %d footers of %d files (%d encrypted with a plaintext footer)\n",
                g_parsed, n, g_plaintext_footer);
  assert_true(g_parsed > 40);
  assert_true(g_plaintext_footer >= 1);
}

/* ---- hostile input -------------------------------------------------------- */

static uint64_t lcg(uint64_t* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

static void parse_any(const uint8_t* data, int64_t size) {
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct pq_file_meta m;
  struct sluice_error err;
  int rc = sl_pq_file_meta_parse(data, size, &ta.base, &m, &err);
  if (rc != 0) {
    assert_int_equal(rc, EILSEQ);
    assert_true(strstr(err.message, "byte") != NULL || strstr(err.message, "FileMetaData") != NULL);
  } else {
    struct sl_buffer buf;
    sl_buffer_init(&buf, &ta.base);
    (void)sl_pq_file_meta_write(&m, &buf, &err);
    sl_buffer_reset(&buf);
    for (int64_t leaf = 0; leaf < count_leaves(&m); ++leaf) {
      struct pq_merged_stats s;
      assert_int_equal(sl_pq_merge_column_stats(&m, leaf, &s, &err), 0);
    }
    sl_pq_file_meta_free(&m);
  }
  assert_int_equal(ta.live_bytes, 0);
}

static void test_truncations_and_flips(void** state) {
  (void)state;
  static const char* const k_names[] = {"alltypes_plain.parquet", "nested_lists.snappy.parquet",
                                        "datapage_v2.snappy.parquet"};
  for (size_t k = 0; k < sizeof k_names / sizeof k_names[0]; ++k) {
    char dir[512], path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir(dir, sizeof dir), k_names[k]);
    struct footer f;
    if (!footer_load(path, &f)) {
      footer_free(&f);
      skip();
    }
    uint8_t* copy = malloc((size_t)f.size);
    assert_non_null(copy);
    // Every strict prefix lacks the final STOP: always EILSEQ.
    for (int64_t n = 0; n < f.size; ++n) {
      memcpy(copy, f.data, (size_t)n);
      struct pq_file_meta m;
      struct sluice_error err;
      int rc = sl_pq_file_meta_parse(copy, n, NULL, &m, &err);
      if (rc != EILSEQ) fail_msg("%s: prefix of %lld bytes gave %d", k_names[k], (long long)n, rc);
    }
    uint64_t seed = 42 + k;
    for (int iter = 0; iter < 3000; ++iter) {
      memcpy(copy, f.data, (size_t)f.size);
      int flips = 1 + (int)(lcg(&seed) % 4);
      for (int i = 0; i < flips; ++i) {
        uint64_t at = lcg(&seed) % (uint64_t)f.size;
        if (lcg(&seed) % 3 == 0) copy[at] = (uint8_t)lcg(&seed);  // a random byte
        else copy[at] ^= (uint8_t)(1u << (lcg(&seed) % 8));
      }
      parse_any(copy, f.size);
    }
    // Page headers of the first column chunk, flipped the same way.
    struct pq_file_meta m;
    struct sluice_error err;
    assert_int_equal(sl_pq_file_meta_parse(f.data, f.size, NULL, &m, &err), 0);
    const struct pq_column_meta* cm = &m.row_groups[0].columns[0].meta_data;
    int64_t start = cm->dictionary_page_offset > 0 ? cm->dictionary_page_offset
                                                   : cm->data_page_offset;
    int64_t len = 64;
    if (start + len > (int64_t)f.file_size) len = (int64_t)f.file_size - start;
    uint8_t page[64];
    for (int iter = 0; iter < 3000; ++iter) {
      memcpy(page, f.file + start, (size_t)len);
      page[lcg(&seed) % (uint64_t)len] ^= (uint8_t)(1u << (lcg(&seed) % 8));
      struct pq_page_header h;
      int64_t used;
      int64_t size = (int64_t)(lcg(&seed) % (uint64_t)(len + 1));
      int rc = sl_pq_page_header_parse(page, size, &h, &used, &err);
      if (rc != 0) assert_int_equal(rc, EILSEQ);
      else assert_true(used > 0 && used <= len && h.compressed_page_size >= 0);
    }
    sl_pq_file_meta_free(&m);
    free(copy);
    footer_free(&f);
  }
}

static void expect_einval(const uint8_t* data, int64_t size, const char* needle) {
  struct pq_file_meta m;
  struct sluice_error err;
  int rc = sl_pq_file_meta_parse(data, size, NULL, &m, &err);
  assert_int_equal(rc, EILSEQ);
  if (strstr(err.message, needle) == NULL) fail_msg("message '%s' lacks '%s'", err.message, needle);
}

static void test_crafted_thrift(void** state) {
  (void)state;
  // 200 nested structs in an unknown field (id 15): refused, not recursed.
  uint8_t deep[402];
  for (int i = 0; i < 200; ++i) deep[i] = 0xfc;  // delta 15, STRUCT
  memset(deep + 200, 0, 202);
  expect_einval(deep, sizeof deep, "nested too deeply");
  // A list claiming 2^31-1 elements with 3 bytes left.
  const uint8_t big_list[] = {0x29, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 0, 0};
  expect_einval(big_list, sizeof big_list, "more elements than bytes left");
  // i32 version as an 11-byte varint.
  const uint8_t long_varint[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0x01, 0};
  expect_einval(long_varint, sizeof long_varint, "varint overflows");
  // A string longer than the buffer (unknown field 9: still checked when skipped).
  const uint8_t long_string[] = {0x98, 0x7f, 'a', 'b', 0};
  expect_einval(long_string, sizeof long_string, "past the end");
  // version 1, empty schema list, num_rows 0, empty row groups.
  const uint8_t empty_schema[] = {0x15, 0x02, 0x19, 0x0c, 0x16, 0x00, 0x19, 0x0c, 0x00};
  expect_einval(empty_schema, sizeof empty_schema, "empty schema");
  // A schema whose root announces 2 children but has 1 (a leaf INT32 "a").
  const uint8_t short_schema[] = {
      0x15, 0x02,                                  // version = 1
      0x19, 0x2c,                                  // schema: list of 2 structs
      0x48, 0x01, 'r', 0x15, 0x04, 0x00,           //   root: name "r", num_children 2
      0x15, 0x02, 0x38, 0x01, 'a', 0x00,           //   leaf: type INT32, name "a"
      0x16, 0x00,                                  // num_rows = 0
      0x19, 0x0c,                                  // row_groups: empty
      0x00};
  expect_einval(short_schema, sizeof short_schema, "num_children");
  // Unknown physical type 9.
  const uint8_t bad_type[] = {0x15, 0x02, 0x19, 0x2c, 0x48, 0x01, 'r', 0x15, 0x02, 0x00,
                              0x15, 0x12, 0x38, 0x01, 'a', 0x00, 0x16, 0x00, 0x19, 0x0c, 0x00};
  expect_einval(bad_type, sizeof bad_type, "unknown physical type");
  // The same file with type INT32 parses; an unknown LogicalType member (id 30)
  // becomes PQ_LOGICAL_UNKNOWN_MEMBER.
  const uint8_t good[] = {0x15, 0x02, 0x19, 0x2c, 0x48, 0x01, 'r', 0x15, 0x02, 0x00,
                          0x15, 0x02, 0x38, 0x01, 'a',
                          0x6c, 0x0c, 0x3c, 0x00, 0x00,  // logicalType { 30: {} }
                          0x00, 0x16, 0x00, 0x19, 0x0c, 0x00};
  struct pq_file_meta m;
  struct sluice_error err;
  int rc = sl_pq_file_meta_parse(good, sizeof good, NULL, &m, &err);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(m.n_schema, 2);
  assert_int_equal(m.schema[1].logical.kind, PQ_LOGICAL_UNKNOWN_MEMBER);
  sl_pq_file_meta_free(&m);
}

static void test_allocation_failures(void** state) {
  (void)state;
  static const char* const k_names[] = {"alltypes_plain.parquet", "nested_maps.snappy.parquet"};
  for (size_t k = 0; k < sizeof k_names / sizeof k_names[0]; ++k) {
    char dir[512], path[1024];
    snprintf(path, sizeof path, "%s/%s", data_dir(dir, sizeof dir), k_names[k]);
    struct footer f;
    if (!footer_load(path, &f)) {
      footer_free(&f);
      skip();
    }
    int succeeded = 0;
    for (long long fail = 1; fail < 10000 && !succeeded; ++fail) {
      struct test_allocator ta;
      test_allocator_init(&ta);
      ta.fail_at = fail;
      struct pq_file_meta m;
      struct sluice_error err;
      int rc = sl_pq_file_meta_parse(f.data, f.size, &ta.base, &m, &err);
      if (rc == 0) {
        struct sl_buffer buf;
        sl_buffer_init(&buf, &ta.base);
        rc = sl_pq_file_meta_write(&m, &buf, &err);
        sl_buffer_reset(&buf);
        sl_pq_file_meta_free(&m);
        succeeded = rc == 0;
      }
      if (rc != 0) assert_int_equal(rc, ENOMEM);
      if (ta.live_bytes != 0) {
        fail_msg("%s: %lld bytes leaked after failing allocation %lld", k_names[k],
                 (long long)ta.live_bytes, fail);
      }
    }
    assert_true(succeeded);
    footer_free(&f);
  }
}

/* ---- statistics merge ----------------------------------------------------- */

/// A one-leaf file with `n` row groups whose statistics the test fills.
struct stats_fixture {
  struct pq_schema_element schema[2];
  struct pq_row_group groups[3];
  struct pq_column_chunk chunks[3];
  struct pq_file_meta meta;
};

static void fixture_init(struct stats_fixture* fx, enum pq_physical_type type, int n) {
  memset(fx, 0, sizeof *fx);
  sl_pq_schema_element_init(&fx->schema[0]);
  fx->schema[0].num_children = 1;
  sl_pq_schema_element_init(&fx->schema[1]);
  fx->schema[1].has_type = 1;
  fx->schema[1].type = type;
  for (int g = 0; g < n; ++g) {
    sl_pq_column_meta_init(&fx->chunks[g].meta_data);
    fx->chunks[g].has_meta_data = 1;
    fx->chunks[g].meta_data.type = type;
    fx->chunks[g].meta_data.num_values = 10;
    fx->chunks[g].meta_data.statistics.present = 1;
    fx->chunks[g].meta_data.statistics.null_count = g;
    fx->groups[g].columns = &fx->chunks[g];
    fx->groups[g].n_columns = 1;
    fx->groups[g].num_rows = 10;
  }
  fx->meta.schema = fx->schema;
  fx->meta.n_schema = 2;
  fx->meta.row_groups = fx->groups;
  fx->meta.n_row_groups = n;
}

static struct pq_bytes bytes_of(const void* p, int64_t n) {
  struct pq_bytes b = {p, n, 1};
  return b;
}

static void test_merge_stats(void** state) {
  (void)state;
  struct stats_fixture fx;
  struct pq_merged_stats s;
  struct sluice_error err;
  // INT32 signed vs UINT_32: -1 (0xffffffff) is the min when signed, the max when unsigned.
  const uint8_t minus_one[4] = {0xff, 0xff, 0xff, 0xff}, five[4] = {5, 0, 0, 0};
  fixture_init(&fx, PQ_INT32, 2);
  fx.chunks[0].meta_data.statistics.min_value = bytes_of(five, 4);
  fx.chunks[0].meta_data.statistics.max_value = bytes_of(five, 4);
  fx.chunks[1].meta_data.statistics.min_value = bytes_of(minus_one, 4);
  fx.chunks[1].meta_data.statistics.max_value = bytes_of(minus_one, 4);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);
  assert_int_equal(s.null_count, 1);
  assert_ptr_equal(s.min.data, minus_one);
  assert_ptr_equal(s.max.data, five);
  assert_true(s.min_exact && s.max_exact);
  fx.schema[1].converted_type = PQ_CT_UINT_32;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_ptr_equal(s.min.data, five);
  assert_ptr_equal(s.max.data, minus_one);
  // Unsigned: the legacy fields are not trusted.
  fx.chunks[1].meta_data.statistics.min_value.present = 0;
  fx.chunks[1].meta_data.statistics.min = bytes_of(minus_one, 4);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 0);
  // Signed: they are.
  fx.schema[1].converted_type = PQ_CONVERTED_NONE;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);
  assert_ptr_equal(s.min.data, minus_one);

  // BYTE_ARRAY: unsigned bytes ("\xe9" > "z"), inexact unless said otherwise.
  const char* z = "z";
  const uint8_t e_acute[1] = {0xe9};
  fixture_init(&fx, PQ_BYTE_ARRAY, 2);
  fx.chunks[0].meta_data.statistics.min_value = bytes_of(z, 1);
  fx.chunks[0].meta_data.statistics.max_value = bytes_of(z, 1);
  fx.chunks[0].meta_data.statistics.is_min_value_exact = 1;
  fx.chunks[1].meta_data.statistics.min_value = bytes_of(e_acute, 1);
  fx.chunks[1].meta_data.statistics.max_value = bytes_of(e_acute, 1);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_ptr_equal(s.min.data, z);
  assert_ptr_equal(s.max.data, e_acute);
  assert_int_equal(s.min_exact, 1);
  assert_int_equal(s.max_exact, 0);
  // A decimal in BYTE_ARRAY: 0xe9 is negative, so it is the min; but only
  // under a TypeDefinedOrder (before column_orders, writers compared the
  // bytes unsigned: PARQUET-1065).
  fx.schema[1].logical.kind = PQ_LOGICAL_DECIMAL;
  fx.schema[1].logical.decimal_precision = 4;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 0);
  int32_t type_defined = PQ_ORDER_TYPE_DEFINED;
  fx.meta.column_orders = &type_defined;
  fx.meta.n_column_orders = 1;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);
  assert_ptr_equal(s.min.data, e_acute);
  assert_ptr_equal(s.max.data, z);
  // A row group that is all null needs no bounds; one without stats spoils both.
  fx.chunks[1].meta_data.statistics.null_count = 10;
  fx.chunks[1].meta_data.statistics.min_value.present = 0;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);
  assert_int_equal(s.null_count, 10);
  fx.chunks[1].meta_data.statistics.present = 0;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 0);
  assert_int_equal(s.null_count, -1);

  // DOUBLE: NaN bounds are unusable; a zero min becomes -0.0 (inexact).
  double nan = NAN, zero = 0.0, two = 2.0;
  fixture_init(&fx, PQ_DOUBLE, 2);
  fx.chunks[0].meta_data.statistics.min_value = bytes_of(&zero, 8);
  fx.chunks[0].meta_data.statistics.max_value = bytes_of(&two, 8);
  fx.chunks[1].meta_data.statistics.min_value = bytes_of(&two, 8);
  fx.chunks[1].meta_data.statistics.max_value = bytes_of(&two, 8);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);
  double got;
  memcpy(&got, s.min.data, 8);
  assert_true(got == 0.0 && signbit(got));
  assert_int_equal(s.min_exact, 0);
  assert_int_equal(s.max_exact, 1);
  fx.chunks[1].meta_data.statistics.max_value = bytes_of(&nan, 8);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 0);

  // A column order sluice does not know: its bounds are not comparable.
  int32_t orders[1] = {7};
  fx.chunks[1].meta_data.statistics.max_value = bytes_of(&two, 8);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);
  fx.meta.column_orders = orders;
  fx.meta.n_column_orders = 1;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 0);
  orders[0] = PQ_ORDER_IEEE754_TOTAL;
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 1);

  // INT96: no order.
  const uint8_t twelve[12] = {0};
  fixture_init(&fx, PQ_INT96, 1);
  fx.chunks[0].meta_data.statistics.min_value = bytes_of(twelve, 12);
  fx.chunks[0].meta_data.statistics.max_value = bytes_of(twelve, 12);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 0, &s, &err), 0);
  assert_int_equal(s.has_min_max, 0);
  assert_int_equal(sl_pq_merge_column_stats(&fx.meta, 1, &s, &err), EINVAL);
}

/// Driver for tests/py/test_parquet_meta.py: copies IN to OUT with its footer
/// re-serialised by sl_pq_file_meta_write, so that pyarrow can judge the writer.
static int rewrite_footer(const char* in, const char* out) {
  struct footer f;
  if (!footer_load(in, &f) || f.encrypted) {
    fprintf(stderr, "%s: not a Parquet file with a plaintext footer\n", in);
    footer_free(&f);
    return 1;
  }
  struct pq_file_meta m;
  struct sluice_error err;
  struct sl_buffer buf;
  sl_buffer_init(&buf, NULL);
  int rc = sl_pq_file_meta_parse(f.data, f.size, NULL, &m, &err);
  if (rc == 0) {
    size_t body = (size_t)(f.data - f.file);
    rc = sl_buffer_append(&buf, f.file, (int64_t)body);
    if (rc == 0) rc = sl_pq_file_meta_write(&m, &buf, &err);
    uint32_t len = (uint32_t)(buf.size - (int64_t)body);
    uint8_t tail[8] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                       (uint8_t)(len >> 24), 'P', 'A', 'R', '1'};
    if (rc == 0) rc = sl_buffer_append(&buf, tail, 8);
    if (rc == 0) rc = test_write_file(out, buf.data, (size_t)buf.size) == 0 ? 0 : EIO;
    sl_pq_file_meta_free(&m);
  }
  if (rc != 0) fprintf(stderr, "%s: %s\n", in, rc == EIO ? "cannot write" : err.message);
  sl_buffer_reset(&buf);
  footer_free(&f);
  return rc == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--rewrite-footer") == 0) {
    return rewrite_footer(argv[2], argv[3]);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_corpus_round_trip),
      cmocka_unit_test(test_truncations_and_flips),
      cmocka_unit_test(test_crafted_thrift),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_merge_stats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
