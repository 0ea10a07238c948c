// The CSV reader through its vtable: dialects, quoting, splits inside quotes,
// inference, errors with line numbers, allocation failures, number parsing
// against strtod.
//
// Run as `test_csv --dump FILE [OPTIONS [COLUMNS]]` it prints the table as
// text instead (first line: name:format|...; then one line per row, values as
// JSON), for tests/py/test_csv_interop.py.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_value_text.h"
#include "format/csv/csv_internal.h"
#include "format/csv/csv_reader.h"
#include "format/sl_format.h"
#include "io/sl_source.h"
#include "test_util.h"

// Reads `path` with `options` (all splits in plan order, columns projected
// when `cols` is given) and renders it into `out`. Returns 0 or the error.
static int read_to_text(const char* path, const char* options, const int64_t* cols,
                        int64_t n_cols, const struct sluice_allocator* alloc,
                        struct sl_text* out, struct sluice_error* error) {
  const struct sl_format_reader* fr = sl_csv_reader();
  struct sl_source* src = NULL;
  void* reader = NULL;
  struct sl_split* splits = NULL;
  int64_t n_splits = 0;
  struct ArrowSchema schema = {0}, proj = {0};
  struct sl_text_field field = {0};
  int field_ok = 0;
  int rc = sl_source_open(path, alloc, &src, error);
  if (rc == 0) {
    struct sl_reader_args args = {.source = src, .alloc = alloc, .format_options = options};
    rc = fr->open(&args, &reader, error);
  }
  if (rc == 0) rc = fr->schema(reader, &schema, error);
  if (rc == 0) {
    if (cols != NULL) rc = sl_schema_project(&schema, cols, n_cols, alloc, &proj, error);
    else rc = sl_schema_copy(&schema, alloc, &proj, error);
  }
  if (rc == 0) rc = sl_text_field_init(&field, &proj, alloc, error);
  if (rc == 0) field_ok = 1;
  for (int64_t c = 0; rc == 0 && c < proj.n_children; ++c) {
    if (c > 0) sl_text_append_char(out, '|');
    sl_text_append_str(out, proj.children[c]->name);
    sl_text_append_char(out, ':');
    sl_text_append_str(out, proj.children[c]->format);
  }
  if (rc == 0) sl_text_append_char(out, '\n');
  if (rc == 0) rc = fr->plan_splits(reader, &splits, &n_splits, error);
  for (int64_t i = 0; rc == 0 && i < n_splits; ++i) {
    void* st = NULL;
    int projected = 0;
    rc = fr->split_open(reader, &splits[i], cols, n_cols, &st, &projected, error);
    while (rc == 0) {
      struct ArrowArray batch = {0};
      rc = fr->split_next(st, &batch, error);
      if (rc != 0 || batch.release == NULL) break;
      for (int64_t r = 0; r < batch.length && rc == 0; ++r) {
        for (int64_t c = 0; c < batch.n_children && rc == 0; ++c) {
          if (c > 0) sl_text_append_char(out, ',');
          rc = sl_value_render(&field.children[c], batch.children[c], r, SL_TEXT_JSON, out, error);
        }
        sl_text_append_char(out, '\n');
      }
      batch.release(&batch);
    }
    if (st != NULL) fr->split_close(st);
  }
  if (field_ok) sl_text_field_reset(&field);
  if (proj.release != NULL) proj.release(&proj);
  if (schema.release != NULL) schema.release(&schema);
  sl_free(alloc, splits, (size_t)n_splits * sizeof *splits);
  if (reader != NULL) fr->close(reader);
  if (src != NULL) sl_source_close(src);
  return rc;
}

static char* write_temp(const char* name, const char* text) {
  static char path[512];  // test-only scratch (single-threaded tests)
  test_temp_path(name, path, sizeof path);
  assert_int_equal(test_write_file(path, text, strlen(text)), 0);
  return path;
}

// Reads `text` as CSV and compares the rendering with `expected`.
static void check_csv(const char* text, const char* options, const char* expected) {
  char* path = write_temp("t.csv", text);
  struct sl_text out;
  sl_text_init(&out, NULL);
  struct sluice_error err = {0};
  int rc = read_to_text(path, options, NULL, 0, NULL, &out, &err);
  if (rc != 0) fprintf(stderr, "error: %s\n", err.message);
  assert_int_equal(rc, 0);
  if (strcmp(sl_text_cstr(&out), expected) != 0) {
    fprintf(stderr, "input:\n%s\ngot:\n%s\nwant:\n%s\n", text, sl_text_cstr(&out), expected);
  }
  assert_string_equal(sl_text_cstr(&out), expected);
  // Every split size and both tokenizers must agree with the serial read.
  static const char* const extra[] = {"split_size=1", "split_size=7", "split_size=64",
                                      "simd=scalar,fastpath=false", "simd=sse2,split_size=3",
                                      "simd=avx2,split_size=9", "fastpath=false,split_size=5"};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; ++i) {
    char opts[512];
    snprintf(opts, sizeof opts, "%s%s%s", options != NULL ? options : "",
             options != NULL ? "," : "", extra[i]);
    struct sl_text again;
    sl_text_init(&again, NULL);
    assert_int_equal(read_to_text(path, opts, NULL, 0, NULL, &again, &err), 0);
    if (strcmp(sl_text_cstr(&again), expected) != 0) {
      fprintf(stderr, "with %s got:\n%s\n", opts, sl_text_cstr(&again));
    }
    assert_string_equal(sl_text_cstr(&again), expected);
    sl_text_reset(&again);
  }
  sl_text_reset(&out);
  remove(path);
}

static void check_error(const char* text, const char* options, const char* needle) {
  char* path = write_temp("e.csv", text);
  struct sl_text out;
  sl_text_init(&out, NULL);
  struct sluice_error err = {0};
  int rc = read_to_text(path, options, NULL, 0, NULL, &out, &err);
  if (rc == 0 || strstr(err.message, needle) == NULL) {
    fprintf(stderr, "rc %d message: %s\nwant: %s\n", rc, err.message, needle);
  }
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(err.message, needle));
  sl_text_reset(&out);
  remove(path);
}

static uint64_t rng_next_(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_basic(void** unused) {
  (void)unused;
  check_csv("a,b,c\n1,x,2.5\n2,y,3\n", NULL, "a:l|b:u|c:g\n1,\"x\",2.5\n2,\"y\",3.0\n");
  // CRLF, BOM, no final newline, blank lines, trailing delimiter
  check_csv("\xEF\xBB\xBF" "a,b\r\n1,2\r\n\r\n3,4", NULL, "a:l|b:l\n1,2\n3,4\n");
  check_csv("a,b,\n1,2,\n3,4,\n", NULL, "a:l|b:l\n1,2\n3,4\n");
  // ...unless a row has something there: then the header names a column ""
  // (as pyarrow does).
  check_csv("a,b,\n1,2,3\n4,5,\n", NULL, "a:l|b:l|:l\n1,2,3\n4,5,null\n");
  check_csv("a,b\n\n\n1,2\n\n", NULL, "a:l|b:l\n1,2\n");
  check_csv("a\n", NULL, "a:u\n");
  check_csv("", NULL, "\n");
}

static void test_quotes(void** unused) {
  (void)unused;
  check_csv("s,n\n\"a,b\",1\n\"line\nbreak\",2\n\"say \"\"hi\"\"\",3\n", NULL,
            "s:u|n:l\n\"a,b\",1\n\"line\\nbreak\",2\n\"say \\\"hi\\\"\",3\n");
  check_csv("s,n\n\"\",1\n,2\n\"x\",3\r\n", "header=true",
            "s:u|n:l\n\"\",1\nnull,2\n\"x\",3\n");
  check_csv("s\n\"1\"\n\"2\"\n", NULL, "s:l\n1\n2\n");
  check_csv("a;b\n'x;y';2\n", "delimiter=;,quote='", "a:u|b:l\n\"x;y\",2\n");
  check_csv("a,b\n\"x\\\"y\",1\n", "escape=backslash", "a:u|b:l\n\"x\\\"y\",1\n");
  // a split boundary inside a quoted field full of delimiters and newlines
  check_csv("k,v\n1,\"a\n,b,\n\"\"c\n,\n\"\n2,\"\n\"\n3,x\n", NULL,
            "k:l|v:u\n1,\"a\\n,b,\\n\\\"c\\n,\\n\"\n2,\"\\n\"\n3,\"x\"\n");
}

static void test_dialects(void** unused) {
  (void)unused;
  check_csv("a;b\n1;2,5\n", NULL, "a:l|b:u\n1,\"2,5\"\n");
  check_csv("a\tb\n1\t2\n", NULL, "a:l|b:l\n1,2\n");
  check_csv("a|b|c\n1|2|3\n", NULL, "a:l|b:l|c:l\n1,2,3\n");
  check_csv("1,2\n3,4\n", NULL, "f0:l|f1:l\n1,2\n3,4\n");
  check_csv("1,2\n3,4\n", "header=false,schema=x:int32|y:string", "x:i|y:u\n1,\"2\"\n3,\"4\"\n");
  // Only default names: they type those columns (pyarrow's column_types);
  // a positional name that is another column's default name is an error.
  check_csv("1,2,3\n", "header=false,schema=f1:string", "f0:l|f1:u|f2:l\n1,\"2\",3\n");
  check_csv("1,2,3\n", "header=false,schema=f2:int8|f0:string", "f0:u|f1:l|f2:c\n\"1\",2,3\n");
  check_csv("1,2,3\n", "header=false,schema=a:string|f1:int8", "a:u|f1:c|f2:l\n\"1\",2,3\n");
  check_error("1,2,3\n", "header=false,schema=a:string|f2:int8", "column 2's default name");
  check_csv("x,y\n1,2\n", "header=true", "x:l|y:l\n1,2\n");
  check_csv("x,y\n1,2\n", "header=false", "f0:u|f1:u\n\"x\",\"y\"\n\"1\",\"2\"\n");
  // The quote is sniffed: ' when the sample has '...' fields and no ".
  check_csv("a|b|c\n1|'x|y'|3\n2|'p'|4\n", NULL, "a:l|b:u|c:l\n1,\"x|y\",3\n2,\"p\",4\n");
  check_csv("a,b\n'x\ny',1\n'z',2\n", "split_size=4", "a:u|b:l\n\"x\\ny\",1\n\"z\",2\n");
  check_csv("n,m\nO'Brien,1\nD'Arcy,2\n", NULL, "n:u|m:l\n\"O'Brien\",1\n\"D'Arcy\",2\n");
  check_csv("a,b\n'x',1\n\"q\",2\n", NULL, "a:u|b:l\n\"'x'\",1\n\"q\",2\n");
  check_csv("a,b\n'x',1\n", "quote=\"", "a:u|b:l\n\"'x'\",1\n");
}

static void test_inference(void** unused) {
  (void)unused;
  check_csv("b,i,f,d,t,s\ntrue,1,1.5,2020-01-02,2020-01-02T03:04:05,x\n"
            "False,-2,NaN,1969-12-31,2020-01-02 03:04:05.5,\n"
            "NA,NULL,1e3,null,,\"\"\n",
            NULL,
            "b:b|i:l|f:g|d:tdD|t:tsu:|s:u\n"
            "true,1,1.5,\"2020-01-02\",\"2020-01-02 03:04:05.000000\",\"x\"\n"
            "false,-2,null,\"1969-12-31\",\"2020-01-02 03:04:05.500000\",null\n"
            "null,null,1000.0,null,null,\"\"\n");
  check_csv("t\n2020-01-02T03:04:05+01:00\n2020-01-02T03:04:05Z\n", NULL,
            "t:tsu:UTC\n\"2020-01-02 02:04:05.000000Z\"\n\"2020-01-02 03:04:05.000000Z\"\n");
  // times of day: microseconds, or nanoseconds when a value needs them
  check_csv("t,n\n12:34,00:00:00.000000001\n23:59:59.5,\n", NULL,
            "t:ttu|n:ttn\n\"12:34:00.000000\",\"00:00:00.000000001\"\n"
            "\"23:59:59.500000\",null\n");
  check_csv("t\n12:34\n24:00\n", NULL, "t:u\n\"12:34\"\n\"24:00\"\n");
  check_csv("t\n2020-01-02T03:04:05.1234567\n", NULL,
            "t:tsn:\n\"2020-01-02 03:04:05.123456700\"\n");
  check_csv("a\n1\n2.5\nx\n", NULL, "a:u\n\"1\"\n\"2.5\"\n\"x\"\n");
  // Digits past the microsecond need [ns], which spans 1677-09-21 to
  // 2262-04-11 only: a sampled value out of that range with them, or one
  // beside them, makes the column text (as pyarrow infers it), not a type
  // its own sample fails (DuckDB and polars cut the digits to [us]).
  check_csv("t\n2024-01-01 00:00:00.000000000\n9999-12-31 23:59:59.999999999\n", NULL,
            "t:u\n\"2024-01-01 00:00:00.000000000\"\n\"9999-12-31 23:59:59.999999999\"\n");
  check_csv("t\n1500-01-01 00:00:00.123456789\n", NULL,
            "t:u\n\"1500-01-01 00:00:00.123456789\"\n");
  check_csv("t\n1677-09-21 00:12:43.145224191\n", NULL,
            "t:u\n\"1677-09-21 00:12:43.145224191\"\n");
  check_csv("t\n9999-12-31 23:59:59\n2024-01-01 00:00:00.000000001\n", NULL,
            "t:u\n\"9999-12-31 23:59:59\"\n\"2024-01-01 00:00:00.000000001\"\n");
  check_csv("t\n9999-12-31 23:59:59.999999\n", NULL, "t:tsu:\n\"9999-12-31 23:59:59.999999\"\n");
  check_csv("t\n9999-12-31 23:59:59+01:00\n0001-01-01 00:00:00.000001Z\n", NULL,
            "t:tsu:UTC\n\"9999-12-31 22:59:59.000000Z\"\n\"0001-01-01 00:00:00.000001Z\"\n");
  // timestamp[ns]'s ends, INT64_MIN and INT64_MAX nanoseconds, read (the
  // seconds before 1677-09-21 00:12:44 times 10^9 pass INT64_MIN, though
  // the value with its fraction does not; polars reads them too).
  check_csv("t\n1677-09-21 00:12:43.145224192\n2262-04-11 23:47:16.854775807\n", NULL,
            "t:tsn:\n\"1677-09-21 00:12:43.145224192\"\n\"2262-04-11 23:47:16.854775807\"\n");
  check_csv("t\n1677-09-21 00:12:43.145224193\n", "schema=t:timestamp[ns]",
            "t:tsn:\n\"1677-09-21 00:12:43.145224193\"\n");
  check_error("t\n1677-09-21 00:12:43.145224191\n", "schema=t:timestamp[ns]",
              "out of range: '1677-09-21 00:12:43.145224191' as timestamp[ns]");
  check_error("t\n2262-04-11 23:47:16.854775808\n", "schema=t:timestamp[ns]",
              "out of range: '2262-04-11 23:47:16.854775808' as timestamp[ns]");
  check_csv("a\n1\n9223372036854775808\n", NULL, "a:g\n1.0\n9.223372036854776e+18\n");
}

/// The schema inferred for `text` (the first line read_to_text gives),
/// without scanning (rows the scan would refuse may be in it).
static void check_inferred(const char* text, const char* options, const char* header) {
  char* path = write_temp("inferred.csv", text);
  const struct sl_format_reader* fr = sl_csv_reader();
  struct sl_source* src = NULL;
  void* reader = NULL;
  struct ArrowSchema schema = {0};
  struct sluice_error err = {0};
  assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
  struct sl_reader_args args = {.source = src, .format_options = options};
  assert_int_equal(fr->open(&args, &reader, &err), 0);
  assert_int_equal(fr->schema(reader, &schema, &err), 0);
  char got[256] = "";
  size_t used = 0;
  for (int64_t c = 0; c < schema.n_children; ++c) {
    used += (size_t)snprintf(got + used, sizeof got - used, "%s%s:%s", c ? "|" : "",
                             schema.children[c]->name, schema.children[c]->format);
  }
  assert_string_equal(got, header);
  schema.release(&schema);
  fr->close(reader);
  sl_source_close(src);
  remove(path);
}

/// Past the head sample, stretches spread to the end of a whole file widen
/// types; rows with another field count, CRLF ends, a last line without a
/// line feed and stretches holding quotes are handled; a small infer_bytes
/// turns the stretches off.
static void test_inference_stretches(void** unused) {
  (void)unused;
  size_t rows = 150000, cap = rows * 24 + 256, n = 0;
  char* text = malloc(cap);
  assert_non_null(text);
  n += (size_t)snprintf(text + n, cap - n, "a,b,c\n");
  for (size_t i = 0; i < rows; ++i) n += (size_t)snprintf(text + n, cap - n, "%zu,%zu,x\n", i, i);
  size_t tail = n;
  n += (size_t)snprintf(text + n, cap - n, "1,2,3,4,5\n5.5,1,q\r\n7,8,9");
  check_inferred(text, NULL, "a:g|b:l|c:u");
  check_inferred(text, "infer_bytes=64k", "a:l|b:l|c:u");
  // The same tail after a quote in the last stretch: not sampled.
  text[tail - 2] = '"';  // ...,"\n  (an unterminated quote the scan would report)
  check_inferred(text, NULL, "a:l|b:l|c:u");
  free(text);
}

// Random bytes from a CSV-hostile alphabet: any split size must give exactly
// the serial result (rows, or the same error).
static void test_random_splits(void** unused) {
  (void)unused;
  static const char alphabet[] = {'a', '1', ',', ',', '"', '"', '\n', '\n', '\r', ';',
                                  '2', '.', '5', 'e', '-', '1', '3', ',', '\n'};
  uint64_t seed = 12345;
  char text[300];
  for (int iter = 0; iter < 300; ++iter) {
    size_t n = (size_t)(rng_next_(&seed) % (sizeof text - 1));
    for (size_t i = 0; i < n; ++i) text[i] = alphabet[rng_next_(&seed) % sizeof alphabet];
    text[n] = '\0';
    char* path = write_temp("r.csv", text);
    struct sl_text want;
    sl_text_init(&want, NULL);
    struct sluice_error err0 = {0};
    int rc0 = read_to_text(path, "header=true", NULL, 0, NULL, &want, &err0);
    for (int k = 1; k <= 40; k += 3) {
      char opts[64];
      snprintf(opts, sizeof opts, "header=true,split_size=%d%s", k,
               k % 2 ? ",simd=scalar,fastpath=false" : "");
      struct sl_text got;
      sl_text_init(&got, NULL);
      struct sluice_error err = {0};
      int rc = read_to_text(path, opts, NULL, 0, NULL, &got, &err);
      assert_int_equal(rc, rc0);
      if (rc == 0) assert_string_equal(sl_text_cstr(&got), sl_text_cstr(&want));
      else assert_string_equal(err.message, err0.message);
      sl_text_reset(&got);
    }
    sl_text_reset(&want);
    remove(path);
  }
}

static void test_projection(void** unused) {
  (void)unused;
  char* path = write_temp("p.csv", "a,b,c\n1,x,2.5\n2,y,bad\n");
  struct sl_text out;
  sl_text_init(&out, NULL);
  struct sluice_error err = {0};
  const int64_t cols[] = {1, 0};
  // column c holds an unparsable value, but it is not asked for
  assert_int_equal(read_to_text(path, "schema=c:float64", cols, 2, NULL, &out, &err), 0);
  assert_string_equal(sl_text_cstr(&out), "b:u|a:l\n\"x\",1\n\"y\",2\n");
  sl_text_reset(&out);
  remove(path);
  // all-numeric (the fused path): skipped columns are not parsed; columns
  // out of file order; a null mid-file hands over to the general path and
  // back. (Columns asked twice never reach a reader: the scan dedupes.)
  path = write_temp("p2.csv", "a,b,c\n1,2.5,3\n4,x,6\n7,,9\n10,1e3,12\n");
  const int64_t cols2[] = {2, 0};
  sl_text_init(&out, NULL);
  assert_int_equal(read_to_text(path, "schema=b:float64", cols2, 2, NULL, &out, &err), 0);
  assert_string_equal(sl_text_cstr(&out), "c:l|a:l\n3,1\n6,4\n9,7\n12,10\n");
  sl_text_reset(&out);
  const int64_t cols3[] = {2};
  sl_text_init(&out, NULL);
  assert_int_equal(read_to_text(path, "schema=b:float64", cols3, 1, NULL, &out, &err), 0);
  assert_string_equal(sl_text_cstr(&out), "c:l\n3\n6\n9\n12\n");
  sl_text_reset(&out);
  remove(path);
  // skipped string columns (quoted, empty, blank lines) around a numeric one
  path = write_temp("p3.csv", "s,n,t\nab,1,x\n,2,\n\"q,\"\"\n\",3,y\n\nzz,4,\"\"\n");
  const int64_t cols4[] = {1};
  for (int k = 0; k < 2; ++k) {
    sl_text_init(&out, NULL);
    assert_int_equal(read_to_text(path, k ? "fastpath=false" : NULL, cols4, 1, NULL, &out, &err), 0);
    assert_string_equal(sl_text_cstr(&out), "n:l\n1\n2\n3\n4\n");
    sl_text_reset(&out);
  }
  remove(path);
  path = write_temp("p4.csv", "s\nab\n\n\ncd\n");
  const int64_t none[] = {0};
  sl_text_init(&out, NULL);
  assert_int_equal(read_to_text(path, NULL, none, 0, NULL, &out, &err), 0);
  assert_string_equal(sl_text_cstr(&out), "\n\n\n");  // 2 rows, no columns
  sl_text_reset(&out);
  remove(path);
  check_csv("a,b\n1,0.000123456789012345678\n-0,-0.0\n00,1e-5\n2,\n3,NA\n4,5\r\n", NULL,
            "a:l|b:g\n1,0.00012345678901234567\n0,-0.0\n0,1e-05\n2,null\n3,null\n4,5.0\n");
}

static void test_errors(void** unused) {
  (void)unused;
  check_error("a,b\n1,2\n3\n", NULL, "line 3 (byte 8): expected 2 fields, found 1");
  check_error("a,b\n1,2\n\"3,4\n5,6\n", NULL, "line 3 (byte 8): unterminated quoted field");
  // A quote inside an unquoted field, or text after a closing quote, is an
  // error at that quote: every quote toggles quoting, so reading on would
  // merge rows (two such quotes made "5 screen\n2,7 tv" one field).
  const char* stray = "quote character inside an unquoted field";
  check_error("a,b\n1,5\" screen\n2,x\n", NULL, "line 2 (byte 7): quote character");
  check_error("a,b\n1,5\" screen\n2,7\" tv\n", NULL, "line 2 (byte 7): quote character");
  check_error("a\n5\" screen\n7\" tv\n", NULL, "line 2 (byte 3): quote character");
  check_error("a,b\n1,\"ab\"cd\n2,x\n", NULL, "line 2 (byte 9): quote character");
  check_error("a,b\n\"x\"y\"z\",1\n", NULL, "line 2 (byte 6): quote character");
  check_error("a,b\n1,x\n2,\"q\" \r\n", NULL, "line 3 (byte 12): quote character");
  check_error("a,b\n1,x\n2,y\"", NULL, stray);  // the last field, no line feed
  check_error("a,b\n1,5\" x\n", "escape=backslash", "line 2 (byte 7): quote character");
  check_error("a,b\n1,5\" x,\"\n", "escape=backslash", stray);
  // stray_quotes=text reads them as pyarrow does: a quote opens quoting only
  // at a field's start, and text after a closing quote is kept.
  check_csv("a,b\n1,5\" screen\n2,\"x\"\"y\"\n3,\"ab\"cd\"e\n4,\"l\nm\"\n", "stray_quotes=text",
            "a:l|b:u\n1,\"5\\\" screen\"\n2,\"x\\\"y\"\n3,\"abcd\\\"e\"\n4,\"l\\nm\"\n");
  check_error("a\n\"x\n", "stray_quotes=text", "line 2 (byte 2): unterminated quoted field");
  check_error("a\n1\n", "stray_quotes=maybe", "stray_quotes");
  // max_row_bytes bounds what a stream copies; a mapped file's rows are not
  // copied, so a local file reads rows past it (README, max_row_bytes).
  check_error("a\n1\n", "max_row_bytes=0", "CSV option 'max_row_bytes': bad value '0'");
  check_error("a\n1\n", "max_row_bytes=big", "CSV option 'max_row_bytes': bad value 'big'");
  check_csv("a,b\n1,xyzzy\n", "max_row_bytes=4", "a:l|b:u\n1,\"xyzzy\"\n");
  // Well-formed quoting next to them still reads.
  check_csv("a,b\n\"x\"\"y\",\"\"\n\"\"\"\",\"a,\"\"\"\r\n", NULL,
            "a:u|b:u\n\"x\\\"y\",\"\"\n\"\\\"\",\"a,\\\"\"\n");
  check_error("a,b\n1,2\n3,4\n", "schema=a:int8|b:bool", "line 2 (byte 6): column 'b'");
  check_error("a,b\n1,2\n3,4\n", "schema=z:int8", "schema names column 'z'");
  check_error("a,b\n1,x\xff\n", NULL, "line 2 (byte 6): column 'b': invalid UTF-8");
  // ...whose hint is the type that holds such bytes, not the string it is.
  check_error("a,b\n1,x\xff\n", NULL, "pass schema=b:binary");
  check_csv("a,b\n1,x\xff\n", "schema=a:int64|b:binary", "a:l|b:z\n1,\"78ff\"\n");
  check_error("a\n1\n2\nx\n", "infer_bytes=4", "line 4 (byte 6): column 'a': cannot parse 'x'");
  check_error("a\n1\n", "nonsense=1", "unknown CSV option");
  check_error("a\n300\n", "schema=a:int8", "out of range");
  // CR-only line endings (classic Mac OS) are line ends, as in pyarrow; a CR
  // or LF inside quotes is data; an error names the line a CR ends.
  check_csv("a,b\r1,x\r2,y\r", NULL, "a:l|b:u\n1,\"x\"\n2,\"y\"\n");
  check_csv("a,b\r\r1,\"x\ry\nz\"\r2,\"q,\"\"\"", "split_size=3",
            "a:l|b:u\n1,\"x\\ry\\nz\"\n2,\"q,\\\"\"\n");
  check_error("a,b\r1,x\r2,y,z\r", NULL, "line 3 (byte 8)");
}

// comment=#: lines starting with it are skipped wherever splits fall.
static void test_comments(void** unused) {
  (void)unused;
  // before the header, between rows, last without a line feed; quotes in a
  // comment mean nothing; '#' inside a quoted field (also at a line start) is data
  check_csv("# a \"note\nx,y\n# y\"\n1,\"a\n# not a comment\"\n#,\n2,\"#b\"\n# end",
            "comment=#", "x:l|y:u\n1,\"a\\n# not a comment\"\n2,\"#b\"\n");
  check_csv("x,y\r\n#c\r\n1,2\r\n#\r\n\r\n3,4\r\n#\"", "comment=#", "x:l|y:l\n1,2\n3,4\n");
  check_csv("#\"\n#\"\"\"\n1,2\n#\"\n3,4\n", "comment=#,header=false", "f0:l|f1:l\n1,2\n3,4\n");
  // the fused numeric path must not read a comment line as a row
  check_csv("a,b\n1,2\n-3,4\n5,6\n", "comment=-", "a:l|b:l\n1,2\n5,6\n");
  // escape dialects
  check_csv("a,b\n#x\\\"\n1,\"q\\\"#\"\n", "comment=#,escape=backslash", "a:l|b:u\n1,\"q\\\"#\"\n");
  // without the option '#' is data; the option is checked
  check_csv("a\n#1\n", NULL, "a:u\n\"#1\"\n");
  check_error("a\n1\n", "comment=;,delimiter=;", "comment equals");
  check_error("a,b\n1,2\n", "comment=,", "but it is the comment character");

  check_error("a\n1\n", "comment=\",quote=\"", "comment equals");
}

// Random bytes with comment characters, quotes and line feeds: every split
// size must give exactly the serial result (rows, or the same error).
static void test_comment_random_splits(void** unused) {
  (void)unused;
  static const char alphabet[] = {'a', '1', ',', '#', '#', '"', '"', '\n', '\n', '\n', '\r', '2'};
  uint64_t seed = 777;
  char text[300];
  for (int iter = 0; iter < 400; ++iter) {
    size_t n = (size_t)(rng_next_(&seed) % (sizeof text - 1));
    for (size_t i = 0; i < n; ++i) text[i] = alphabet[rng_next_(&seed) % sizeof alphabet];
    text[n] = '\0';
    char* path = write_temp("rc.csv", text);
    struct sl_text want;
    sl_text_init(&want, NULL);
    struct sluice_error err0 = {0};
    int rc0 = read_to_text(path, "header=true,comment=#", NULL, 0, NULL, &want, &err0);
    for (int k = 1; k <= 40; k += 3) {
      char opts[96];
      snprintf(opts, sizeof opts, "header=true,comment=#,split_size=%d%s", k,
               k % 2 ? ",simd=scalar,fastpath=false" : "");
      struct sl_text got;
      sl_text_init(&got, NULL);
      struct sluice_error err = {0};
      int rc = read_to_text(path, opts, NULL, 0, NULL, &got, &err);
      if (rc != rc0 || (rc == 0 && strcmp(sl_text_cstr(&got), sl_text_cstr(&want)) != 0)) {
        fprintf(stderr, "input:\n%s\nwith %s got:\n%s\nwant:\n%s\n", text, opts,
                sl_text_cstr(&got), sl_text_cstr(&want));
      }
      assert_int_equal(rc, rc0);
      if (rc == 0) assert_string_equal(sl_text_cstr(&got), sl_text_cstr(&want));
      else assert_string_equal(err.message, err0.message);
      sl_text_reset(&got);
    }
    sl_text_reset(&want);
    remove(path);
  }
}

// sl_csv_comment_transitions (block masks, runs of other bytes as one step)
// against a byte-at-a-time reference written from the state definitions.
static int ref_step(int st, char c) {
  if (st == CSV_ST_COMMENT) return c == '\n' ? CSV_ST_LINE : CSV_ST_COMMENT;
  if (st == CSV_ST_QUOTE) return c == '"' ? CSV_ST_OUT : CSV_ST_QUOTE;
  if (st == CSV_ST_LINE && c == '#') return CSV_ST_COMMENT;
  if (c == '"') return CSV_ST_QUOTE;
  return c == '\n' ? CSV_ST_LINE : CSV_ST_OUT;
}

static void test_comment_transitions(void** unused) {
  (void)unused;
  static const char alphabet[] = {'a', ',', '#', '"', '\n', 'b', '\r'};
  const struct csv_dialect d = {.delimiter = ',', .quote = '"', .comment = '#'};
  uint64_t seed = 4242;
  char text[400];
  for (int iter = 0; iter < 2000; ++iter) {
    int64_t n = (int64_t)(rng_next_(&seed) % sizeof text);
    for (int64_t i = 0; i < n; ++i) text[i] = alphabet[rng_next_(&seed) % sizeof alphabet];
    int64_t from = n > 0 ? (int64_t)(rng_next_(&seed) % (uint64_t)n) : 0;
    unsigned got = sl_csv_comment_transitions(&d, (const uint8_t*)text, from, n);
    for (int st = 0; st < 4; ++st) {
      int s = st;
      for (int64_t i = from; i < n; ++i) s = ref_step(s, text[i]);
      assert_int_equal((got >> (2 * st)) & 3, s);
    }
  }
}

static void test_null_values(void** unused) {
  (void)unused;
  // a numeric null spelling (the fused path must not take it as a number)
  check_csv("a,b,c\n1,x,2.5\n-999,NA,-999\n,,\n", "null_values=-999|",
            "a:l|b:u|c:g\n1,\"x\",2.5\nnull,\"NA\",null\nnull,null,null\n");
  // only the empty field; then only NA (an empty field is a value: a string)
  check_csv("a,b\n1,NA\n,\n", "null_values=", "a:l|b:u\n1,\"NA\"\nnull,null\n");
  {
    // read whole: check_csv's one-row splits would hold only an empty string,
    // whose NULL data buffer sl_value_render does not take yet (UBSan)
    char* path = write_temp("nv.csv", "a,b\n1,2\n,NA\n");
    struct sl_text out;
    sl_text_init(&out, NULL);
    struct sluice_error err = {0};
    assert_int_equal(read_to_text(path, "null_values=NA", NULL, 0, NULL, &out, &err), 0);
    assert_string_equal(sl_text_cstr(&out), "a:u|b:l\n\"1\",2\n\"\",null\n");
    sl_text_reset(&out);
    remove(path);
  }
  // inference and header detection see configured spellings as nulls
  check_csv("a,b\nmissing,x\n2,y\n", "null_values=missing|", "a:l|b:u\nnull,\"x\"\n2,\"y\"\n");
  check_csv("f\n1.5\nNaN\n", "null_values=NaN", "f:g\n1.5\nnull\n");
  // followed by another option: the empty value is not the option separator
  check_csv("a,b\n1,NA\n,\n", "null_values=,header=true", "a:l|b:u\n1,\"NA\"\nnull,null\n");
  check_error("a,b\n1,2\n,3\n", "null_values=x,schema=a:int64", "line 3 (byte 8): column 'a': cannot parse ''");
}

// One quoted field spanning many splits: each split resolves its start from
// its own range (linear work); the rows are exactly the serial ones.
static void test_long_quoted_field(void** unused) {
  (void)unused;
  const size_t n = 60000;
  char* text = malloc(n + 64);
  assert_non_null(text);
  size_t k = (size_t)snprintf(text, 64, "a,b\n1,\"");
  for (size_t i = 0; i < n; ++i) text[k++] = "x\n,#\"\"y"[i % 7];
  k += (size_t)snprintf(text + k, 64, "\"\n2,z\n#c,d\n3,w\n");
  char* path = write_temp("long.csv", text);
  free(text);
  static const char* const opts[] = {"split_size=100", "split_size=4k,simd=scalar",
                                     "split_size=1000,comment=#"};
  for (size_t o = 0; o < sizeof opts / sizeof opts[0]; ++o) {
    const char* base = o == 2 ? "comment=#" : NULL;
    struct sl_text want, got;
    sl_text_init(&want, NULL);
    sl_text_init(&got, NULL);
    struct sluice_error err = {0};
    assert_int_equal(read_to_text(path, base, NULL, 0, NULL, &want, &err), 0);
    assert_int_equal(read_to_text(path, opts[o], NULL, 0, NULL, &got, &err), 0);
    assert_string_equal(sl_text_cstr(&got), sl_text_cstr(&want));
    // rows 1, 2, 3 (and "#c" as a row only without comment=#)
    const char* t = sl_text_cstr(&want);
    assert_non_null(strstr(t, "\"z\""));
    assert_true((strstr(t, "#c") != NULL) == (o != 2));
    sl_text_reset(&want);
    sl_text_reset(&got);
  }
  remove(path);
}

// Bytes of `path`'s mappings resident in this process (/proc/self/smaps), or
// -1 where that cannot be read.
static long long mapped_resident(const char* path) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (f == NULL) return -1;
  char line[1024];
  long long total = 0;
  int in_path = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    long long kb;
    const char* space = strchr(line, ' ');
    const char* dash = strchr(line, '-');
    if (space != NULL && dash != NULL && dash < space) {  // "start-end perms ... [path]"
      in_path = strstr(line, path) != NULL;
    } else if (in_path && sscanf(line, "Rss: %lld kB", &kb) == 1) {
      total += kb << 10;
    }
  }
  fclose(f);
  return total;
}

// A mapped file's pages leave the process once parsed, even the pages of a
// finished split that the next split's open touches again to count its
// quotes: after reading every split, almost nothing of the file is resident
// (before, every chunk counted after its split closed stayed resident).
static void test_parsed_pages_leave(void** unused) {
  (void)unused;
  const size_t rows = 200000;
  struct sl_text text;
  sl_text_init(&text, NULL);
  sl_text_append_str(&text, "a,b\n");
  for (size_t i = 0; i < rows; ++i) {
    char row[64];
    int n = snprintf(row, sizeof row, "%zu,\"v%zu, quoted\"\n", i, i * 7);
    sl_text_append(&text, row, (size_t)n);
  }
  char* path = write_temp("pages.csv", sl_text_cstr(&text));
  const struct sl_format_reader* fr = sl_csv_reader();
  struct sluice_error err = {0};
  struct sl_source* src = NULL;
  void* reader = NULL;
  struct sl_split* splits = NULL;
  int64_t n = 0, seen = 0;
  assert_int_equal(sl_source_open(path, NULL, &src, &err), 0);
  struct sl_reader_args args = {.source = src, .format_options = "split_size=256k"};
  assert_int_equal(fr->open(&args, &reader, &err), 0);
  assert_int_equal(fr->plan_splits(reader, &splits, &n, &err), 0);
  assert_true(n >= 8);
  for (int64_t i = 0; i < n; ++i) {  // as one worker does: open, read, close
    void* st = NULL;
    int projected = 0;
    assert_int_equal(fr->split_open(reader, &splits[i], NULL, 0, &st, &projected, &err), 0);
    for (;;) {
      struct ArrowArray batch = {0};
      assert_int_equal(fr->split_next(st, &batch, &err), 0);
      if (batch.release == NULL) break;
      seen += batch.length;
      batch.release(&batch);
    }
    fr->split_close(st);
  }
  assert_int_equal(seen, (int64_t)rows);
  long long resident = mapped_resident(path);
  if (resident >= 0) {
    // ~5 MB: a few fault-around windows stay (~0.3 MB here); before, most
    // of the file did.
    assert_true(text.len > ((size_t)4 << 20));
    assert_true(resident < (long long)text.len / 8);
  }
  sl_free(NULL, splits, (size_t)n * sizeof *splits);
  fr->close(reader);
  sl_source_close(src);
  sl_text_reset(&text);
  remove(path);
}

static void test_alloc_failures(void** unused) {
  (void)unused;
  char* path = write_temp("f.csv", "a,b,c\n1,\"x\ny\",2.5\n2,\"\"\"z\",3\n3,,\n");
  struct sl_text expected;
  sl_text_init(&expected, NULL);
  struct sluice_error err = {0};
  assert_int_equal(read_to_text(path, "split_size=8", NULL, 0, NULL, &expected, &err), 0);
  for (long long fail = 1;; ++fail) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    atomic_store(&ta.fail_at, fail);
    struct sl_text out;
    sl_text_init(&out, NULL);  // the text itself uses the default allocator
    int rc = read_to_text(path, "split_size=8", NULL, 0, &ta.base, &out, &err);
    assert_int_equal(atomic_load(&ta.live_bytes), 0);
    sl_text_reset(&out);
    if (rc == 0) break;
    assert_int_equal(rc, ENOMEM);
    assert_true(fail < 10000);
  }
  sl_text_reset(&expected);
  remove(path);
}

static void check_double(const char* s) {
  double want = strtod(s, NULL), got = 0;
  assert_true(sl_csv_parse_double((const uint8_t*)s, (int64_t)strlen(s), &got));
  if (memcmp(&want, &got, sizeof want) != 0 && !(isnan(want) && isnan(got))) {
    fprintf(stderr, "%s: strtod %.17g, got %.17g\n", s, want, got);
    fail();
  }
}

static uint64_t rng_next(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void test_parse_double(void** unused) {
  (void)unused;
  static const char* const cases[] = {
      "0", "-0", "1", "0.1", "1e308", "1.7976931348623157e308", "1.7976931348623159e308",
      "2.2250738585072014e-308", "4.9e-324", "2.4703282292062327e-324", "1e-400", "1e400",
      "9007199254740993", "123456789012345678901234567890", "0.000000000000000000000001",
      "7.1e-10", "3.14159265358979323846264338327950288", "1.00000000000000011102230246251565404236316680908203125",
      "1.00000000000000011102230246251565404236316680908203124", "5e-324", "1e23", "8.589973e9",
      "9.999999999999999e22", ".5", "5.", "+3", "NaN", "-inf", "Infinity", "1E5", "0e10",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) check_double(cases[i]);
  uint64_t seed = 0x9E3779B97F4A7C15u;
  char buf[64];
  for (int i = 0; i < 300000; ++i) {
    uint64_t bits = rng_next(&seed);
    double d;
    memcpy(&d, &bits, 8);
    if (!isfinite(d)) continue;
    snprintf(buf, sizeof buf, "%.17g", d);
    check_double(buf);
    snprintf(buf, sizeof buf, "%.*g", (int)(rng_next(&seed) % 17) + 1, d);
    check_double(buf);
    double u = (double)(rng_next(&seed) >> 11) / 9007199254740992.0;  // W1-like [0,1)
    snprintf(buf, sizeof buf, "%.17g", u);
    check_double(buf);
    snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)(rng_next(&seed) % 100000000000000000ull),
             (int)(rng_next(&seed) % 700) - 350);
    check_double(buf);
  }
  int64_t v;
  assert_true(sl_csv_parse_int64((const uint8_t*)"-9223372036854775808", 20, &v));
  assert_true(v == INT64_MIN);
  assert_false(sl_csv_parse_int64((const uint8_t*)"9223372036854775808", 19, &v));
}

// One number of the kinds the fused paths meet: W1's shortest forms, any
// double to 17 digits or fewer, exponents, signs, leading zeros, a point
// at either end, 19 and 20 digits, fields of 32 bytes and more.
static void random_number(uint64_t* seed, int as_int, char* buf, size_t cap) {
  uint64_t r = rng_next(seed);
  if (as_int) {
    int digits = (int)(r % 19) + 1;
    uint64_t v = rng_next(seed) % 1000000000000000000ull;
    for (int k = digits; k < 18; ++k) v /= 10;
    if (digits == 19) {  // up to INT64_MAX: the scalar parsers' checked path
      snprintf(buf, cap, "%s922337203685477580%d", r & 64 ? "-" : "", (int)((r >> 8) % 8));
    } else {
      snprintf(buf, cap, "%s%llu", r & 64 ? "-" : "", (unsigned long long)v);
    }
    return;
  }
  uint64_t bits = rng_next(seed);
  double d;
  memcpy(&d, &bits, 8);
  if (!isfinite(d)) d = 1.5;
  double u = (double)(rng_next(seed) >> 11) / 9007199254740992.0;
  switch (r % 12) {
    case 0: snprintf(buf, cap, "%.17g", d); break;
    case 1: snprintf(buf, cap, "%.*g", (int)(rng_next(seed) % 17) + 1, d); break;
    case 2: case 3: case 4: snprintf(buf, cap, "%.17g", u); break;
    case 5: snprintf(buf, cap, "%.16g", u * 1e-3); break;
    case 6: snprintf(buf, cap, "-%.*f", (int)(rng_next(seed) % 20), u * 1e6); break;
    case 7: snprintf(buf, cap, "%.0f.", u * 1e9); break;
    case 8:
      snprintf(buf, cap, ".%llu", (unsigned long long)(rng_next(seed) % 1000000000000ull));
      break;
    case 9: snprintf(buf, cap, "+%.19f", u); break;
    case 10:
      snprintf(buf, cap, "0.000000000000000000000000%llu",
               (unsigned long long)(rng_next(seed) >> 20));
      break;
    default: snprintf(buf, cap, "%llu.%llu", (unsigned long long)(rng_next(seed) % 100000000000ull),
                      (unsigned long long)(rng_next(seed) % 100000000ull)); break;
  }
}

// The fused numeric rows (AVX-512 or AVX2 where the CPU has them, AVX2
// with simd=avx2, scalar with simd=sse2) and the tokenizing path
// (fastpath=false) read every value as strtod and strtoll do.
static void test_fused_numbers_match_strtod(void** unused) {
  (void)unused;
  struct sl_text csv, want;
  sl_text_init(&csv, NULL);
  sl_text_init(&want, NULL);
  sl_text_append_str(&csv, "i,a,b,c\n");
  sl_text_append_str(&want, "i:l|a:g|b:g|c:g\n");
  uint64_t seed = 0x2545F4914F6CDD1Du;
  char text[128], out[64];
  for (int row = 0; row < 30000; ++row) {
    for (int c = 0; c < 4; ++c) {
      random_number(&seed, c == 0, text, sizeof text);
      if (row == 0 && c > 0) snprintf(text, sizeof text, "0.5");  // inferred as doubles
      if (c > 0) {
        sl_text_append_char(&csv, ',');
        sl_text_append_char(&want, ',');
        sl_json_float_spelling(out, sl_format_double(strtod(text, NULL), out, sizeof out));
      } else {
        snprintf(out, sizeof out, "%lld", strtoll(text, NULL, 10));
      }
      sl_text_append_str(&csv, text);
      sl_text_append_str(&want, out);
    }
    sl_text_append_char(&csv, '\n');
    sl_text_append_char(&want, '\n');
  }
  char path[512];
  test_temp_path("fused.csv", path, sizeof path);
  assert_int_equal(test_write_file(path, sl_text_cstr(&csv), strlen(sl_text_cstr(&csv))), 0);
  static const char* const opts[] = {NULL, "simd=sse2", "simd=avx2", "fastpath=false",
                                     "split_size=4k"};
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; ++k) {
    struct sl_text got;
    sl_text_init(&got, NULL);
    struct sluice_error err = {0};
    assert_int_equal(read_to_text(path, opts[k], NULL, 0, NULL, &got, &err), 0);
    const char* a = sl_text_cstr(&got);
    const char* b = sl_text_cstr(&want);
    if (strcmp(a, b) != 0) {
      size_t at = 0;
      while (a[at] == b[at]) ++at;
      while (at > 0 && b[at - 1] != '\n') --at;
      fprintf(stderr, "options %s: from byte %zu got\n%.80s\nwant\n%.80s\n",
              opts[k] != NULL ? opts[k] : "(none)", at, a + at, b + at);
      fail();
    }
    sl_text_reset(&got);
  }
  sl_text_reset(&csv);
  sl_text_reset(&want);
  remove(path);
}

// Columns not asked for are crossed, quoted ones included (W4's ids): quotes
// doubled inside, delimiters inside, fields longer than the 32-byte window,
// a closing quote at the window's edge. Every fused loop gives the
// tokenizing path's values.
static void test_fused_crosses_quoted_columns(void** unused) {
  (void)unused;
  struct sl_text csv;
  sl_text_init(&csv, NULL);
  sl_text_append_str(&csv, "id,v,s,w\n");
  uint64_t seed = 0x9E3779B97F4A7C15u;
  char text[160];
  for (int row = 0; row < 20000; ++row) {
    uint64_t r = rng_next(&seed);
    int len = (int)(r % 40);
    int at = 0;
    text[at++] = '"';
    for (int k = 0; k < len; ++k) {
      uint64_t c = rng_next(&seed) % 23;
      if (c == 0) {
        text[at++] = '"';
        text[at++] = '"';
      } else {
        text[at++] = c == 1 ? ',' : c == 2 ? '\n' : (char)('a' + c);
      }
    }
    text[at++] = '"';
    text[at] = '\0';
    sl_text_append_str(&csv, r & 1024 ? text : "plain");
    snprintf(text, sizeof text, ",%lld,%s,%.17g\n", (long long)(rng_next(&seed) % 100000) - 50000,
             r & 2048 ? "\"x,y\"" : "z", (double)(rng_next(&seed) >> 11) / 9007199254740992.0);
    sl_text_append_str(&csv, text);
  }
  char path[512];
  test_temp_path("fusedq.csv", path, sizeof path);
  assert_int_equal(test_write_file(path, sl_text_cstr(&csv), strlen(sl_text_cstr(&csv))), 0);
  static const int64_t cols[] = {1, 3};
  struct sl_text want;
  sl_text_init(&want, NULL);
  struct sluice_error err = {0};
  assert_int_equal(read_to_text(path, "fastpath=false", cols, 2, NULL, &want, &err), 0);
  static const char* const opts[] = {NULL, "simd=sse2", "simd=avx2", "split_size=4k"};
  for (size_t k = 0; k < sizeof opts / sizeof opts[0]; ++k) {
    struct sl_text got;
    sl_text_init(&got, NULL);
    assert_int_equal(read_to_text(path, opts[k], cols, 2, NULL, &got, &err), 0);
    assert_string_equal(sl_text_cstr(&got), sl_text_cstr(&want));
    sl_text_reset(&got);
  }
  assert_true(strlen(sl_text_cstr(&want)) > 20000 * 10);
  sl_text_reset(&want);
  sl_text_reset(&csv);
  remove(path);
}

// Dates as glibc's calendar has them: every day of years 0 to 9999 in
// steps, and the days that do not exist (month 0 or 13, day 0, 29..32 of
// short months) rejected; also text that is not a date.
static void test_parse_date_like_timegm(void** unused) {
  (void)unused;
  char text[16];
  for (int y = 0; y <= 9999; y += (y > 1800 && y < 2200) ? 1 : 7) {
    for (int m = 0; m <= 13; ++m) {
      for (int d = 0; d <= 32; ++d) {
        snprintf(text, sizeof text, "%04d-%02d-%02d", y, m, d);
        struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
        time_t t = timegm(&tm);
        struct tm back;
        int exists = gmtime_r(&t, &back) != NULL && back.tm_year == y - 1900 &&
                     back.tm_mon == m - 1 && back.tm_mday == d;
        int32_t got = 0;
        int ok = sl_csv_parse_date32((const uint8_t*)text, 10, &got);
        if (ok != exists || (ok && got != (int32_t)((t - 12 * 3600) / 86400))) {
          fprintf(stderr, "%s: parsed %d (%d), want %d (%lld)\n", text, ok, got, exists,
                  (long long)((t - 12 * 3600) / 86400));
          fail();
        }
      }
    }
  }
  static const char* const bad[] = {"2020-1-01x", "2020/01/01", "20200-1-01", "2020-01-0a",
                                    "a020-01-01", "2020-01-01 x", " ", "2020--1-01"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    int32_t got;
    assert_false(sl_csv_parse_date32((const uint8_t*)bad[i], (int64_t)strlen(bad[i]), &got));
  }
  // Spaces and tabs around a date are trimmed (as DuckDB and pyarrow read it).
  static const char* const spaced[] = {"2020-01-01 ", " 2020-01-01", "\t2020-01-01 "};
  for (size_t i = 0; i < sizeof spaced / sizeof spaced[0]; ++i) {
    int32_t got = 0;
    assert_true(sl_csv_parse_date32((const uint8_t*)spaced[i], (int64_t)strlen(spaced[i]), &got));
    assert_int_equal(got, 18262);
  }
}

// Years outside 0..9999, ISO 8601's expanded form: a sign and 4+ digits
// (as sluice writes them), or 5+ digits without one (as pyarrow and DuckDB
// write years past 9999); as glibc's calendar has them, to date32's ends.
static void test_parse_date_expanded_years(void** unused) {
  (void)unused;
  char text[32];
  for (int y = -20000; y <= 300000; y += (y > -10 && y < 10010) ? 1 : 997) {
    for (int m = 1; m <= 12; m += 1) {
      for (int d = 27; d <= 31; ++d) {
        struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d, .tm_hour = 12};
        time_t t = timegm(&tm);
        struct tm back;
        int exists = gmtime_r(&t, &back) != NULL && back.tm_year == y - 1900 &&
                     back.tm_mon == m - 1 && back.tm_mday == d;
        int32_t want = (int32_t)((t - 12 * 3600) / 86400);
        for (int form = 0; form < 2; ++form) {
          if (form == 1 && (y < 10000)) continue;
          snprintf(text, sizeof text, form == 0 ? "%+05d-%02d-%02d" : "%d-%02d-%02d", y, m, d);
          int32_t got = 0;
          int ok = sl_csv_parse_date32((const uint8_t*)text, (int64_t)strlen(text), &got);
          if (ok != exists || (ok && got != want)) {
            fprintf(stderr, "%s: parsed %d (%d), want %d (%d)\n", text, ok, got, exists, want);
            fail();
          }
          int64_t sec;
          int32_t ns;
          int zone;
          snprintf(text + strlen(text), sizeof text - strlen(text), " 12:00:00");
          ok = sl_parse_timestamp((const uint8_t*)text, (int64_t)strlen(text), &sec, &ns, &zone);
          if (ok != exists || (ok && sec != (int64_t)t)) {
            fprintf(stderr, "%s: parsed %d (%lld), want %d\n", text, ok, (long long)sec, exists);
            fail();
          }
        }
      }
    }
  }
  int32_t got = 0;
  assert_true(sl_csv_parse_date32((const uint8_t*)"+5881580-07-11", 14, &got));
  assert_int_equal(got, INT32_MAX);
  assert_true(sl_csv_parse_date32((const uint8_t*)"-5877641-06-23", 14, &got));
  assert_int_equal(got, INT32_MIN);
  static const char* const bad[] = {"+5881580-07-12", "-5877641-06-22", "+999-01-01",
                                    "-001-01-01",     "1000-01-01x",    "-0001-02-29",
                                    "+1234567890-01-01", "12345-13-01", "+-1234-01-01",
                                    "+12345-01-01x", "12345-1-01"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    if (sl_csv_parse_date32((const uint8_t*)bad[i], (int64_t)strlen(bad[i]), &got)) {
      fprintf(stderr, "%s: parsed\n", bad[i]);
      fail();
    }
  }
}

/// Seconds and nanoseconds in a unit: exact to int64's ends, on both sides
/// of the epoch.
static void test_timestamp_in_unit(void** unused) {
  (void)unused;
  int64_t v = 0;
  assert_true(sl_timestamp_in_unit(-1, 500000000, 1000, &v));
  assert_true(v == -500);
  assert_true(sl_timestamp_in_unit(-2, 999999000, 1000000, &v));
  assert_true(v == -1000001);
  assert_true(sl_timestamp_in_unit(-9223372037, 145224192, 1000000000, &v));
  assert_true(v == INT64_MIN);
  assert_false(sl_timestamp_in_unit(-9223372037, 145224191, 1000000000, &v));
  assert_false(sl_timestamp_in_unit(-9223372037, 0, 1000000000, &v));
  assert_true(sl_timestamp_in_unit(9223372036, 854775807, 1000000000, &v));
  assert_true(v == INT64_MAX);
  assert_false(sl_timestamp_in_unit(9223372036, 854775808, 1000000000, &v));
  assert_true(sl_timestamp_in_unit(INT64_MIN, 0, 1, &v));
  assert_true(v == INT64_MIN);
  assert_true(sl_timestamp_in_unit(INT64_MIN / 1000, 192000000, 1000, &v));  // (ms)
  assert_true(v == INT64_MIN / 1000 * 1000 + 192);
  assert_false(sl_timestamp_in_unit(INT64_MIN / 1000 - 1, 0, 1000, &v));
}

static void test_corpus(void** unused) {
  (void)unused;
  char path[1024];
  test_corpus_path("arrow-testing/data/csv/aggregate_test_100.csv", path, sizeof path);
  struct sl_text out;
  sl_text_init(&out, NULL);
  struct sluice_error err = {0};
  assert_int_equal(read_to_text(path, NULL, NULL, 0, NULL, &out, &err), 0);
  assert_non_null(strstr(sl_text_cstr(&out), "c1:u|c2:l|"));
  sl_text_reset(&out);
  static const char* const fuzz[] = {
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-4523557272223744",
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-5003506164760576",
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-5085419734892544",
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-5279410447253504",
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-5308706540814336",
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-5600990083743744",
      "clusterfuzz-testcase-minimized-arrow-csv-fuzz-6261070185693184",
  };
  for (size_t i = 0; i < sizeof fuzz / sizeof fuzz[0]; ++i) {
    char rel[256];
    snprintf(rel, sizeof rel, "arrow-testing/data/csv/fuzzing/%s", fuzz[i]);
    test_corpus_path(rel, path, sizeof path);
    for (int k = 0; k < 2; ++k) {
      sl_text_init(&out, NULL);
      (void)read_to_text(path, k ? "split_size=4096" : NULL, NULL, 0, NULL, &out, &err);
      sl_text_reset(&out);
    }
  }
}

static int dump(int argc, char** argv) {
  const char* options = argc > 3 && argv[3][0] != '\0' ? argv[3] : NULL;
  int64_t cols[1024];
  int64_t n_cols = 0;
  if (argc > 4) {
    for (char* p = argv[4]; *p != '\0' && n_cols < 1024;) {
      cols[n_cols++] = strtoll(p, &p, 10);
      if (*p == ',') ++p;
    }
  }
  struct sl_text out;
  sl_text_init(&out, NULL);
  struct sluice_error err = {0};
  int rc = read_to_text(argv[2], options, argc > 4 ? cols : NULL, n_cols, NULL, &out, &err);
  if (rc != 0) {
    fprintf(stderr, "%s\n", err.message);
  } else {
    fwrite(sl_text_cstr(&out), 1, out.len, stdout);
  }
  sl_text_reset(&out);
  return rc == 0 ? 0 : 1;
}

// `test_csv --bench FILE THREADS [OPTIONS]`: decodes every split on THREADS
// threads (split i on thread i % THREADS) and prints rows and seconds.
struct bench_job {
  const struct sl_format_reader* fr;
  void* reader;
  struct sl_split* splits;
  int64_t n_splits, first, step, rows;
  int rc;
};

static void* bench_thread(void* arg) {
  struct bench_job* j = arg;
  struct sluice_error err = {0};
  for (int64_t i = j->first; i < j->n_splits && j->rc == 0; i += j->step) {
    void* st = NULL;
    int projected = 0;
    j->rc = j->fr->split_open(j->reader, &j->splits[i], NULL, 0, &st, &projected, &err);
    while (j->rc == 0) {
      struct ArrowArray batch = {0};
      j->rc = j->fr->split_next(st, &batch, &err);
      if (j->rc != 0 || batch.release == NULL) break;
      j->rows += batch.length;
      batch.release(&batch);
    }
    if (st != NULL) j->fr->split_close(st);
  }
  if (j->rc != 0) fprintf(stderr, "%s\n", err.message);
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench(int argc, char** argv) {
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  if (threads < 1 || threads > 64) threads = 1;
  const char* options = argc > 4 ? argv[4] : NULL;
  const struct sl_format_reader* fr = sl_csv_reader();
  struct sluice_error err = {0};
  struct sl_source* src = NULL;
  void* reader = NULL;
  struct sl_split* splits = NULL;
  int64_t n = 0;
  double t0 = now_s();
  if (sl_source_open(argv[2], NULL, &src, &err) != 0) goto fail;
  struct sl_reader_args args = {.source = src, .format_options = options};
  if (fr->open(&args, &reader, &err) != 0) goto fail;
  if (fr->plan_splits(reader, &splits, &n, &err) != 0) goto fail;
  double t1 = now_s();
  struct bench_job jobs[64];
  pthread_t tids[64];
  for (int t = 0; t < threads; ++t) {
    jobs[t] = (struct bench_job){fr, reader, splits, n, t, threads, 0, 0};
    pthread_create(&tids[t], NULL, bench_thread, &jobs[t]);
  }
  int64_t rows = 0;
  int rc = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(tids[t], NULL);
    rows += jobs[t].rows;
    rc |= jobs[t].rc;
  }
  double t2 = now_s();
  printf("rows %lld splits %lld open+plan %.3fs decode %.3fs total %.3fs\n", (long long)rows,
         (long long)n, t1 - t0, t2 - t1, t2 - t0);
  sl_free(NULL, splits, (size_t)n * sizeof *splits);
  fr->close(reader);
  sl_source_close(src);
  return rc != 0;
fail:
  fprintf(stderr, "%s\n", err.message);
  if (reader != NULL) fr->close(reader);
  if (src != NULL) sl_source_close(src);
  return 1;
}

/// sl_csv_count_byte's SIMD paths (AVX2 where the CPU has it, SSE2) against the
/// scalar count: every length up to 300 at every alignment of the first
/// byte, and long buffers that cross the 255-step lane limit, dense and
/// sparse, with a 255-valued byte (a lane that reads -1 must not count).
static void test_count_byte_paths(void** state) {
  (void)state;
  enum { CAP = 40000 };
  uint8_t* buf = malloc(CAP + 64);
  assert_non_null(buf);
  unsigned seed = 7;
  for (int density = 1; density <= 64; density *= 8) {
    for (int64_t i = 0; i < CAP + 64; ++i) {
      seed = seed * 1103515245u + 12345u;
      buf[i] = (seed >> 16) % (unsigned)density == 0 ? '"' : (uint8_t)((seed >> 8) | 0x80);
    }
    for (int64_t off = 0; off < 32; ++off) {
      for (int64_t n = 0; n <= 300; n += off % 3 == 0 ? 1 : 7) {
        int64_t want = sl_csv_count_byte_impl(buf + off, n, '"', CSV_IMPL_SCALAR);
        assert_int_equal(sl_csv_count_byte_impl(buf + off, n, '"', CSV_IMPL_SSE2), want);
        assert_int_equal(sl_csv_count_byte_impl(buf + off, n, '"', CSV_IMPL_AUTO), want);
      }
    }
    for (int64_t n = CAP - 100; n <= CAP; n += 33) {
      int64_t want = 0;
      for (int64_t i = 0; i < n; ++i) want += buf[3 + i] == '"';
      assert_int_equal(sl_csv_count_byte_impl(buf + 3, n, '"', CSV_IMPL_SCALAR), want);
      assert_int_equal(sl_csv_count_byte_impl(buf + 3, n, '"', CSV_IMPL_SSE2), want);
      assert_int_equal(sl_csv_count_byte(buf + 3, n, '"'), want);
      assert_int_equal(sl_csv_count_byte(buf + 3, n, 0xFF),
                       sl_csv_count_byte_impl(buf + 3, n, 0xFF, CSV_IMPL_SCALAR));
    }
  }
  memset(buf, '"', CAP);  // every byte: each lane reaches 255 in one round
  assert_int_equal(sl_csv_count_byte(buf, CAP, '"'), CAP);
  assert_int_equal(sl_csv_count_byte_impl(buf, CAP, '"', CSV_IMPL_SSE2), CAP);
  free(buf);
}

/// The join of two inferred formats: what a column inferred as each in two
/// files of one dataset reads as (symmetric).
static void test_join_formats(void** unused) {
  (void)unused;
  const char* cases[][3] = {
      {"l", "l", "l"},           {"l", "g", "g"},           {"g", "l", "g"},
      {"l", "u", "u"},           {"b", "l", "u"},           {"tdD", "tsu:", "tsu:"},
      {"tsu:UTC", "tdD", "tsu:UTC"}, {"tsu:", "tsn:", "tsn:"}, {"tsn:UTC", "tsu:UTC", "tsn:UTC"},
      {"tsu:", "tsu:UTC", "u"},  {"ttu", "ttn", "ttn"},     {"ttu", "tdD", "u"},
      {"b", "b", "b"},           {"tdD", "l", "u"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char buf[32];
    assert_string_equal(sl_csv_join_formats(cases[i][0], cases[i][1], buf, sizeof buf), cases[i][2]);
    assert_string_equal(sl_csv_join_formats(cases[i][1], cases[i][0], buf, sizeof buf), cases[i][2]);
  }
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "--bench") == 0) return bench(argc, argv);
  if (argc > 2 && strcmp(argv[1], "--dump") == 0) return dump(argc, argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_basic),          cmocka_unit_test(test_quotes),
      cmocka_unit_test(test_dialects),       cmocka_unit_test(test_inference),
      cmocka_unit_test(test_inference_stretches),
      cmocka_unit_test(test_projection),     cmocka_unit_test(test_errors),
      cmocka_unit_test(test_random_splits),  cmocka_unit_test(test_comments),
      cmocka_unit_test(test_comment_random_splits), cmocka_unit_test(test_null_values),
      cmocka_unit_test(test_long_quoted_field), cmocka_unit_test(test_comment_transitions),
      cmocka_unit_test(test_alloc_failures), cmocka_unit_test(test_parse_double),
      cmocka_unit_test(test_fused_numbers_match_strtod),
      cmocka_unit_test(test_parse_date_like_timegm),
    cmocka_unit_test(test_parse_date_expanded_years),
      cmocka_unit_test(test_fused_crosses_quoted_columns),
      cmocka_unit_test(test_corpus),         cmocka_unit_test(test_parsed_pages_leave),
      cmocka_unit_test(test_count_byte_paths), cmocka_unit_test(test_join_formats),
      cmocka_unit_test(test_timestamp_in_unit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
