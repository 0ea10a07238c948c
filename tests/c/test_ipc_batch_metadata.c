// Custom metadata on record batch messages: written through
// sluice_write_options.batch_metadata, read back through
// sluice_batch_tag.metadata, for the stream and the file format. (pyarrow's
// reading of the tags `sluice cat --unordered` writes is checked in
// tests/py/test_ipc_batch_metadata.py.)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sluice.h"
#include "test_util.h"

#define CORPUS_FILE \
  "arrow-testing/data/arrow-ipc-stream/integration/1.0.0-littleendian/generated_primitive.stream"

/// The callback's state: a counter and the blob it hands out.
struct tagger {
  int64_t batches;
  char blob[64];
};

static int tag_batch(void* user, const struct ArrowArray* batch, const char** metadata) {
  (void)batch;
  struct tagger* t = user;
  char value[24];
  int vlen = snprintf(value, sizeof value, "batch-%lld", (long long)t->batches++);
  int32_t count = 1, klen = 3;
  memcpy(t->blob, &count, 4);
  memcpy(t->blob + 4, &klen, 4);
  memcpy(t->blob + 8, "pos", 3);
  memcpy(t->blob + 11, &vlen, 4);
  memcpy(t->blob + 15, value, (size_t)vlen);
  // Every other batch carries none: NULL must mean "no custom_metadata".
  *metadata = (t->batches % 2 == 0) ? NULL : t->blob;
  return 0;
}

static int refuse(void* user, const struct ArrowArray* batch, const char** metadata) {
  (void)user;
  (void)batch;
  (void)metadata;
  return EPERM;
}

/// Copies the corpus file to `out_path` in `format`, tagging batches.
static int64_t write_tagged(const char* format, const char* out_path,
                            int (*callback)(void*, const struct ArrowArray*, const char**),
                            int expect_rc) {
  char in_path[1024];
  test_corpus_path(CORPUS_FILE, in_path, sizeof in_path);
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (sluice_dataset_open(in_path, NULL, &ds, &error) != 0) {
    if (error.code == ENOENT) skip();
    fail_msg("open %s: %s", in_path, error.message);
  }
  struct ArrowArrayStream stream;
  assert_int_equal(sluice_dataset_scan(ds, &stream, &error), 0);
  struct tagger tagger = {0, {0}};
  struct sluice_write_options options;
  sluice_write_options_init(&options);
  options.format = format;
  options.batch_metadata = callback;
  options.batch_metadata_user = &tagger;
  int rc = sluice_write(&stream, out_path, &options, &error);
  assert_int_equal(rc, expect_rc);
  if (rc != 0) assert_non_null(strstr(error.message, "metadata"));
  stream.release(&stream);
  sluice_dataset_close(ds);
  return tagger.batches;
}

static void check_tags(const char* path, int64_t written) {
  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  assert_int_equal(sluice_dataset_open(path, NULL, &ds, &error), 0);
  struct sluice_scanner* scanner = NULL;
  assert_int_equal(sluice_scanner_open(ds, &scanner, &error), 0);
  int64_t seen = 0;
  for (;;) {
    struct ArrowArray batch;
    struct sluice_batch_tag tag;
    assert_int_equal(sluice_scanner_next(scanner, &batch, &tag, &error), 0);
    if (batch.release == NULL) break;
    if (seen % 2 == 1) {
      assert_null(tag.metadata);
    } else {
      assert_non_null(tag.metadata);
      int32_t count, klen, vlen;
      memcpy(&count, tag.metadata, 4);
      memcpy(&klen, tag.metadata + 4, 4);
      assert_int_equal(count, 1);
      assert_int_equal(klen, 3);
      assert_memory_equal(tag.metadata + 8, "pos", 3);
      memcpy(&vlen, tag.metadata + 11, 4);
      char expected[24];
      int n = snprintf(expected, sizeof expected, "batch-%lld", (long long)seen);
      assert_int_equal(vlen, n);
      assert_memory_equal(tag.metadata + 15, expected, (size_t)n);
    }
    batch.release(&batch);
    seen++;
  }
  assert_int_equal(seen, written);
  assert_true(seen >= 2);
  sluice_scanner_close(scanner);
  sluice_dataset_close(ds);
}

static void test_stream_round_trip(void** state) {
  (void)state;
  char path[512];
  test_temp_path("tagged.arrows", path, sizeof path);
  check_tags(path, write_tagged("arrows", path, tag_batch, 0));
  remove(path);
}

static void test_file_round_trip(void** state) {
  (void)state;
  char path[512];
  test_temp_path("tagged.arrow", path, sizeof path);
  check_tags(path, write_tagged("arrow", path, tag_batch, 0));
  remove(path);
}

static void test_callback_error_fails_write(void** state) {
  (void)state;
  char path[512];
  test_temp_path("refused.arrows", path, sizeof path);
  write_tagged("arrows", path, refuse, EPERM);
  FILE* f = fopen(path, "rb");
  assert_null(f);  // nothing committed
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stream_round_trip),
      cmocka_unit_test(test_file_round_trip),
      cmocka_unit_test(test_callback_error_fails_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
