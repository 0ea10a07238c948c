// Arrow IPC reader tests: every integration file of arrow-testing opens and
// decodes with the right row counts; mutated inputs (truncated, bit-flipped,
// corrupted lengths) end in an error or in valid data, never a crash;
// allocation failures are reported and leak nothing; dictionary deltas;
// concurrent splits; zero-copy views.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_ref.h"
#include "core/sl_validate.h"
#include "format/ipc/ipc_reader.h"
#include "format/sl_format.h"
#include "io/sl_source.h"
#include "ipc_read_helpers.h"
#include "test_util.h"

/* ---- Expected row counts from the integration JSON ----------------------- */

/// Row counts of "batches"[i]["count"] in a .json.gz (decompressed by gzip),
/// or -1 if the file cannot be read.
static int64_t json_batch_counts(const char* path, int64_t* counts, int64_t cap) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
  FILE* p = popen(cmd, "r");
  if (p == NULL) return -1;
  // A tiny scanner: track nesting depth and the key of the current value;
  // "count" keys directly inside objects of the top-level "batches" array.
  int depth = 0, in_string = 0, escape = 0, in_batches = 0, batches_depth = 0;
  char key[64];
  size_t key_len = 0;
  char last_key[64] = "";
  int64_t n = 0;
  int ch;
  while ((ch = fgetc(p)) != EOF) {
    if (in_string) {
      if (escape) escape = 0;
      else if (ch == '\\') escape = 1;
      else if (ch == '"') {
        in_string = 0;
        key[key_len] = 0;
      } else if (key_len + 1 < sizeof key) key[key_len++] = (char)ch;
      continue;
    }
    switch (ch) {
      case '"': in_string = 1; key_len = 0; break;
      case ':': snprintf(last_key, sizeof last_key, "%s", key); break;
      case '[':
        depth++;
        if (depth == 2 && strcmp(last_key, "batches") == 0) { in_batches = 1; batches_depth = depth; }
        break;
      case ']':
        if (in_batches && depth == batches_depth) in_batches = 0;
        depth--;
        break;
      case '{': depth++; break;
      case '}': depth--; break;
      default:
        if (in_batches && depth == batches_depth + 1 && strcmp(last_key, "count") == 0 &&
            ch >= '0' && ch <= '9') {
          int64_t v = ch - '0';
          while ((ch = fgetc(p)) != EOF && ch >= '0' && ch <= '9') v = v * 10 + (ch - '0');
          if (n < cap) counts[n] = v;
          n++;
          last_key[0] = 0;
          if (ch == '}') depth--;
          if (ch == ']') { if (in_batches && depth == batches_depth) in_batches = 0; depth--; }
        }
        break;
    }
  }
  pclose(p);
  return n;
}

static const char* const k_integration_dirs[] = {
  "arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian",
  "arrow-testing/data/arrow-ipc-stream/integration/2.0.0-compression",
};

static void check_integration_file(const char* dir, const char* base, int* n_checked) {
  char path[2048], json[2048];
  int64_t expect[MAX_BATCHES];
  snprintf(json, sizeof json, "%s/%s.json.gz", dir, base);
  int64_t n_expect = json_batch_counts(json, expect, MAX_BATCHES);
  assert_true(n_expect >= 0);
  static const char* const kinds[] = {"stream", "arrow_file"};
  for (int k = 0; k < 2; ++k) {
    snprintf(path, sizeof path, "%s/%s.%s", dir, base, kinds[k]);
    size_t size;
    uint8_t* data = test_read_file(path, &size);
    if (data == NULL) continue;
    const struct sl_format_reader* fmt = k == 0 ? sl_ipc_stream_reader() : sl_ipc_file_reader();
    for (int mode = 0; mode < (k == 0 ? 3 : 1); ++mode) {
      // Streams also go through a forward-only source, and one that recycles
      // its buffer between reads (owner-less views).
      struct test_allocator ta;
      test_allocator_init(&ta);
      struct read_result res;
      struct sluice_error err = {0};
      int rc = read_bytes(fmt, path, data, size, mode >= 1, mode == 2, &ta.base, &res, &err);
      if (rc != 0) fail_msg("%s: %s", path, err.message);
      if (res.n_batches != n_expect) fail_msg("%s: %lld batches, JSON has %lld", path,
                                              (long long)res.n_batches, (long long)n_expect);
      for (int64_t i = 0; i < n_expect && i < MAX_BATCHES; ++i)
        if (res.rows[i] != expect[i])
          fail_msg("%s: batch %lld has %lld rows, JSON says %lld", path, (long long)i,
                   (long long)res.rows[i], (long long)expect[i]);
      assert_int_equal(atomic_load(&ta.live_bytes), 0);
      ++*n_checked;
    }
    free(data);
  }
}

static void test_integration_corpus(void** state) {
  (void)state;
  int n_checked = 0;
  for (size_t d = 0; d < sizeof k_integration_dirs / sizeof *k_integration_dirs; ++d) {
    char dir[1024];
    test_corpus_path(k_integration_dirs[d], dir, sizeof dir);
    DIR* h = opendir(dir);
    if (h == NULL) continue;
    struct dirent* e;
    while ((e = readdir(h)) != NULL) {
      if (!ends_with(e->d_name, ".json.gz")) continue;
      char base[512];
      snprintf(base, sizeof base, "%.*s", (int)(strlen(e->d_name) - 8), e->d_name);
      check_integration_file(dir, base, &n_checked);
    }
    closedir(h);
  }
  if (n_checked == 0) skip();
  assert_true(n_checked >= 40);
}

static uint8_t* corpus_file(const char* name, size_t* size) {
  char rel[512], path[1024];
  snprintf(rel, sizeof rel, "%s/%s", k_integration_dirs[strncmp(name, "generated_lz4", 13) == 0 ||
                                                        strncmp(name, "generated_zstd", 14) == 0 ||
                                                        strncmp(name, "generated_uncompressible", 24) == 0],
           name);
  test_corpus_path(rel, path, sizeof path);
  return test_read_file(path, size);
}

/// memmem over an encoded metadata blob.
static int metadata_has(const char* metadata, const char* needle) {
  if (metadata == NULL) return 0;
  int64_t n = sl_metadata_size(metadata);
  size_t k = strlen(needle);
  for (int64_t i = 0; i + (int64_t)k <= n; ++i)
    if (memcmp(metadata + i, needle, k) == 0) return 1;
  return 0;
}

static void test_schema_details(void** state) {
  (void)state;
  size_t size;
  uint8_t* data = corpus_file("generated_extension.arrow_file", &size);
  if (data == NULL) skip();
  struct read_result res;
  struct sluice_error err = {0};
  struct sl_source* src = mem_source_new("ext.arrow", data, size, 0, 0);
  int rc = read_all(sl_ipc_file_reader(), src, NULL, NULL, 0, 1, &res, &err);
  sl_source_close(src);
  free(data);
  assert_int_equal(rc, 0);
  int found = 0;
  for (int64_t i = 0; i < res.schema.n_children; ++i)
    found |= metadata_has(res.schema.children[i]->metadata, "ARROW:extension:name");
  assert_true(found);
  read_result_reset(&res);

  data = corpus_file("generated_custom_metadata.stream", &size);
  assert_non_null(data);
  src = mem_source_new("meta.arrows", data, size, 0, 0);
  rc = read_all(sl_ipc_stream_reader(), src, NULL, NULL, 0, 1, &res, &err);
  sl_source_close(src);
  free(data);
  assert_int_equal(rc, 0);
  assert_non_null(res.schema.metadata);
  read_result_reset(&res);

  data = corpus_file("generated_datetime.arrow_file", &size);
  assert_non_null(data);
  src = mem_source_new("dt.arrow", data, size, 0, 0);
  rc = read_all(sl_ipc_file_reader(), src, NULL, NULL, 0, 1, &res, &err);
  sl_source_close(src);
  free(data);
  assert_int_equal(rc, 0);
  int has_tz = 0;
  for (int64_t i = 0; i < res.schema.n_children; ++i)
    has_tz |= strncmp(res.schema.children[i]->format, "ts", 2) == 0 &&
              strlen(res.schema.children[i]->format) > 4;
  assert_true(has_tz);
  read_result_reset(&res);
}

/// Buffers of an uncompressed file are views into the source's bytes.
static void test_zero_copy(void** state) {
  (void)state;
  size_t size;
  uint8_t* data = corpus_file("generated_primitive.arrow_file", &size);
  if (data == NULL) skip();
  struct sl_source* src = mem_source_new("prim.arrow", data, size, 0, 0);
  const uint8_t* base = ((struct mem_source*)src)->data;
  struct read_result res;
  struct sluice_error err = {0};
  int rc = read_all(sl_ipc_file_reader(), src, NULL, NULL, 0, 1, &res, &err);
  assert_int_equal(rc, 0);
  assert_true(res.n_kept > 0);
  int views = 0;
  const struct ArrowArray* b = &res.batches[0];
  for (int64_t c = 0; c < b->n_children; ++c)
    for (int64_t i = 0; i < b->children[c]->n_buffers; ++i) {
      const uint8_t* p = b->children[c]->buffers[i];
      if (p != NULL && p >= base && p < base + size) views++;
    }
  assert_true(views > 0);
  // Arrays keep the bytes alive after the source is closed.
  sl_source_close(src);
  free(data);
  read_result_reset(&res);
}

/// Projection decodes only the asked-for columns, in the asked-for order.
static void test_projection(void** state) {
  (void)state;
  size_t size;
  uint8_t* data = corpus_file("generated_nested_dictionary.arrow_file", &size);
  if (data == NULL) skip();
  struct read_result all, some;
  struct sluice_error err = {0};
  struct sl_source* src = mem_source_new("nd.arrow", data, size, 0, 0);
  assert_int_equal(read_all(sl_ipc_file_reader(), src, NULL, NULL, 0, 0, &all, &err), 0);
  assert_true(all.n_fields >= 2);
  int64_t cols[2] = {all.n_fields - 1, 0};
  assert_int_equal(read_all(sl_ipc_file_reader(), src, NULL, cols, 2, 0, &some, &err), 0);
  assert_int_equal(some.n_batches, all.n_batches);
  int64_t bad_col = 99;
  assert_int_equal(read_all(sl_ipc_file_reader(), src, NULL, &bad_col, 1, 0, &some, &err), EINVAL);
  sl_source_close(src);
  free(data);
}

#include "test_ipc_read_delta.inc"

static void check_delta(const struct read_result* res) {
  assert_int_equal(res->n_batches, 2);
  const struct ArrowArray* s1 = res->batches[1].children[0];
  assert_non_null(s1->dictionary);
  assert_int_equal(s1->dictionary->length, 4);
  const int32_t* off = s1->dictionary->buffers[1];
  const char* chars = s1->dictionary->buffers[2];
  assert_int_equal(off[4] - off[3], 2);
  assert_memory_equal(chars + off[3], "dd", 2);
  const struct ArrowArray* l1 = res->batches[1].children[1];
  assert_int_equal(l1->dictionary->length, 3);
  const struct ArrowArray* items = l1->dictionary->children[0];
  assert_int_equal(items->length, 6);
  assert_int_equal(((const int64_t*)items->buffers[1])[items->offset + 5], 6);
  // The first batch still sees the dictionary it was sent with.
  assert_int_equal(res->batches[0].children[0]->dictionary->length, 2);
}

static void test_dictionary_delta(void** state) {
  (void)state;
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct read_result res;
  struct sluice_error err = {0};
  struct sl_source* src = mem_source_new("delta.arrows", k_delta_stream, sizeof k_delta_stream, 1, 1);
  int rc = read_all(sl_ipc_stream_reader(), src, &ta.base, NULL, 0, 1, &res, &err);
  sl_source_close(src);
  if (rc != 0) fail_msg("%s", err.message);
  check_delta(&res);
  read_result_reset(&res);

  src = mem_source_new("delta.arrow", k_delta_file, sizeof k_delta_file, 0, 0);
  rc = read_all(sl_ipc_file_reader(), src, &ta.base, NULL, 0, 1, &res, &err);
  sl_source_close(src);
  if (rc != 0) fail_msg("%s", err.message);
  assert_int_equal(res.n_batches, 2);
  // The file format has all dictionaries (deltas applied) before any batch.
  assert_int_equal(res.batches[0].children[0]->dictionary->length, 4);
  read_result_reset(&res);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

/* ---- Hostile input ------------------------------------------------------- */

static const char* const k_mutation_files[] = {
  "generated_primitive.stream",         "generated_primitive.arrow_file",
  "generated_nested_dictionary.stream", "generated_nested_dictionary.arrow_file",
  "generated_union.arrow_file",         "generated_map.stream",
  "generated_zstd.arrow_file",          "generated_lz4.stream",
  "generated_nested.arrow_file",        "generated_decimal.stream",
  "generated_dictionary.arrow_file",    "generated_recursive_nested.stream",
};

static void read_mutant(const char* name, const uint8_t* data, size_t size, int* n_ok, int* n_err) {
  const struct sl_format_reader* fmt =
      ends_with(name, ".stream") ? sl_ipc_stream_reader() : sl_ipc_file_reader();
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct read_result res;
  struct sluice_error err = {0};
  int rc = read_bytes(fmt, name, data, size, 0, 0, &ta.base, &res, &err);
  if (rc == 0) {
    ++*n_ok;
  } else {
    ++*n_err;
    // Every error names the object.
    if (strstr(err.message, name) == NULL) fail_msg("error without the object name: %s", err.message);
  }
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void test_truncated(void** state) {
  (void)state;
  int ok = 0, errs = 0;
  for (size_t f = 0; f < sizeof k_mutation_files / sizeof *k_mutation_files; ++f) {
    size_t size;
    uint8_t* data = corpus_file(k_mutation_files[f], &size);
    if (data == NULL) continue;
    size_t step = size / 400 + 1;
    for (size_t n = 0; n < size; n += step) read_mutant(k_mutation_files[f], data, n, &ok, &errs);
    free(data);
  }
  if (ok + errs == 0) skip();
  assert_true(errs > 0);
}

static void test_bit_flips(void** state) {
  (void)state;
  int ok = 0, errs = 0;
  static const uint8_t masks[] = {0xFF, 0x80, 0x01, 0x10};
  for (size_t f = 0; f < sizeof k_mutation_files / sizeof *k_mutation_files; ++f) {
    size_t size;
    uint8_t* data = corpus_file(k_mutation_files[f], &size);
    if (data == NULL) continue;
    size_t step = size / 600 + 1;
    for (size_t pos = 0; pos < size; pos += step) {
      uint8_t saved = data[pos];
      data[pos] ^= masks[pos % 4];
      read_mutant(k_mutation_files[f], data, size, &ok, &errs);
      data[pos] = saved;
    }
    free(data);
  }
  if (ok + errs == 0) skip();
  assert_true(errs > 0);
}

/// Overwrites 4- and 8-byte words with extreme values: how lengths, offsets
/// and counts get corrupted.
static void test_corrupt_words(void** state) {
  (void)state;
  int ok = 0, errs = 0;
  static const int64_t values[] = {-1, INT32_MAX, INT32_MIN, INT64_MAX, 0, 1 << 20, -8};
  for (size_t f = 0; f < sizeof k_mutation_files / sizeof *k_mutation_files; ++f) {
    size_t size;
    uint8_t* data = corpus_file(k_mutation_files[f], &size);
    if (data == NULL) continue;
    uint8_t* copy = malloc(size);
    assert_non_null(copy);
    size_t step = size / 250 + 1;
    for (size_t pos = 0; pos + 8 <= size; pos += step) {
      for (size_t v = 0; v < sizeof values / sizeof *values; ++v) {
        memcpy(copy, data, size);
        size_t width = (pos / step + v) % 2 ? 8 : 4;
        if (width == 8) memcpy(copy + (pos & ~(size_t)7), &values[v], 8);
        else { int32_t w = (int32_t)values[v]; memcpy(copy + (pos & ~(size_t)3), &w, 4); }
        read_mutant(k_mutation_files[f], copy, size, &ok, &errs);
      }
    }
    free(copy);
    free(data);
  }
  if (ok + errs == 0) skip();
  assert_true(errs > 0);
}

static void test_bad_magic_and_empty(void** state) {
  (void)state;
  struct read_result res;
  struct sluice_error err = {0};
  static const uint8_t junk[64] = "ARROW1\0\0 this is not an arrow file at all ....ARROW1";
  assert_int_equal(read_bytes(sl_ipc_file_reader(), "junk.arrow", junk, sizeof junk, 0, 0, NULL,
                              &res, &err), EILSEQ);
  assert_non_null(strstr(err.message, "junk.arrow"));
  assert_int_equal(read_bytes(sl_ipc_file_reader(), "empty.arrow", junk, 0, 0, 0, NULL, &res, &err),
                   EILSEQ);
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "empty.arrows", junk, 0, 0, 0, NULL, &res, &err),
                   EILSEQ);
  static const uint8_t eos[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};
  assert_int_equal(read_bytes(sl_ipc_stream_reader(), "eos.arrows", eos, 8, 0, 0, NULL, &res, &err),
                   EILSEQ);
  // probe
  assert_int_equal(sl_ipc_file_reader()->probe((const uint8_t*)"ARROW1\0\0", 8), 100);
  assert_int_equal(sl_ipc_file_reader()->probe((const uint8_t*)"PAR1", 4), 0);
  size_t size;
  uint8_t* data = corpus_file("generated_primitive.stream", &size);
  if (data != NULL) {
    assert_true(sl_ipc_stream_reader()->probe(data, (int64_t)size) >= 80);
    assert_true(sl_ipc_stream_reader()->probe(data, 16) > 0);
    // A whole Schema message behind the continuation marker is proof: a
    // stream named like a file (or like anything) is read as a stream.
    assert_ptr_equal(sl_format_reader_detect("misnamed.arrow", data, (int64_t)size),
                     sl_ipc_stream_reader());
    assert_ptr_equal(sl_format_reader_detect("misnamed.csv", data, (int64_t)size),
                     sl_ipc_stream_reader());
    assert_int_equal(sl_ipc_file_reader()->probe(data, (int64_t)size), 0);
    free(data);
  }
  data = corpus_file("generated_primitive.arrow_file", &size);
  if (data != NULL) {
    assert_int_equal(sl_ipc_stream_reader()->probe(data, (int64_t)size), 0);
    free(data);
  }
}

/* ---- Allocation failures ------------------------------------------------- */

/// Reads `data` failing the 1st, 2nd, ... allocation until a read succeeds:
/// each failure is ENOMEM naming the object, with nothing left allocated.
/// Returns how many failures were tried.
static int sweep_allocation_failures(const struct sl_format_reader* fmt, const char* name,
                                     const uint8_t* data, size_t size) {
  int tested = 0;
  for (long long fail_at = 1;; ++fail_at) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, fail_at);
    struct read_result res;
    struct sluice_error err = {0};
    int rc = read_bytes(fmt, name, data, size, 0, 0, &ta.base, &res, &err);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
    if (rc == 0) return tested;
    if (rc != ENOMEM) fail_msg("%s: allocation %lld failed with %d: %s", name, fail_at, rc, err.message);
    if (strstr(err.message, name) == NULL) fail_msg("error without the object name: %s", err.message);
    assert_true(fail_at < 100000);
    tested++;
  }
}

static void test_allocation_failures(void** state) {
  (void)state;
  static const char* const files[] = {"generated_nested_dictionary.arrow_file",
                                      "generated_nested_dictionary.stream",
                                      "generated_zstd.stream", "generated_lz4.arrow_file"};
  int tested = 0;
  for (size_t f = 0; f < sizeof files / sizeof *files; ++f) {
    size_t size;
    uint8_t* data = corpus_file(files[f], &size);
    if (data == NULL) continue;
    const struct sl_format_reader* fmt =
        ends_with(files[f], ".stream") ? sl_ipc_stream_reader() : sl_ipc_file_reader();
    tested += sweep_allocation_failures(fmt, files[f], data, size);
    free(data);
  }
  // Dictionary deltas: the first one copies the dictionary into growable
  // buffers, each batch gets a view of them.
  assert_true(sweep_allocation_failures(sl_ipc_stream_reader(), "delta.arrows", k_delta_stream,
                                        sizeof k_delta_stream) > 0);
  assert_true(sweep_allocation_failures(sl_ipc_file_reader(), "delta.arrow", k_delta_file,
                                        sizeof k_delta_file) > 0);
  if (tested == 0) skip();
}

/* ---- Concurrency --------------------------------------------------------- */

struct split_job {
  const struct sl_format_reader* fmt;
  void* reader;
  const struct sl_split* splits;
  int64_t n_splits;
  atomic_llong* rows;
  int rc;
};

static void* split_worker(void* arg) {
  struct split_job* job = arg;
  for (int round = 0; round < 20; ++round)
    for (int64_t s = 0; s < job->n_splits; ++s) {
      void* st;
      int projected;
      struct sluice_error err;
      if ((job->rc = job->fmt->split_open(job->reader, &job->splits[s], NULL, 0, &st, &projected, &err)))
        return NULL;
      struct ArrowArray b;
      while ((job->rc = job->fmt->split_next(st, &b, &err)) == 0 && b.release != NULL) {
        atomic_fetch_add(job->rows, b.length);
        b.release(&b);
      }
      job->fmt->split_close(st);
      if (job->rc) return NULL;
    }
  return NULL;
}

static void test_concurrent_splits(void** state) {
  (void)state;
  size_t size;
  uint8_t* data = corpus_file("generated_dictionary.arrow_file", &size);
  if (data == NULL) skip();
  struct sl_source* src = mem_source_new("dict.arrow", data, size, 0, 0);
  const struct sl_format_reader* fmt = sl_ipc_file_reader();
  struct sl_reader_args args = {.source = src};
  void* reader;
  struct sluice_error err;
  assert_int_equal(fmt->open(&args, &reader, &err), 0);
  struct sl_split* splits;
  int64_t n;
  assert_int_equal(fmt->plan_splits(reader, &splits, &n, &err), 0);
  assert_true(n > 0);
  atomic_llong rows;
  atomic_init(&rows, 0);
  struct split_job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; ++i) {
    jobs[i] = (struct split_job){fmt, reader, splits, n, &rows, 0};
    assert_int_equal(pthread_create(&th[i], NULL, split_worker, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    assert_int_equal(jobs[i].rc, 0);
  }
  int64_t expect[MAX_BATCHES];
  char json[1024], rel[512];
  snprintf(rel, sizeof rel, "%s/generated_dictionary.json.gz", k_integration_dirs[0]);
  int64_t nb = json_batch_counts(test_corpus_path(rel, json, sizeof json), expect, MAX_BATCHES);
  int64_t total = 0;
  for (int64_t i = 0; i < nb; ++i) total += expect[i];
  assert_int_equal(atomic_load(&rows), total * 4 * 20);
  sl_free(NULL, splits, (size_t)n * sizeof *splits);
  fmt->close(reader);
  sl_source_close(src);
  free(data);
}



int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_integration_corpus),
    cmocka_unit_test(test_schema_details),
    cmocka_unit_test(test_zero_copy),
    cmocka_unit_test(test_projection),
    cmocka_unit_test(test_dictionary_delta),
    cmocka_unit_test(test_bad_magic_and_empty),
    cmocka_unit_test(test_truncated),
    cmocka_unit_test(test_bit_flips),
    cmocka_unit_test(test_corrupt_words),
    cmocka_unit_test(test_allocation_failures),
    cmocka_unit_test(test_concurrent_splits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
