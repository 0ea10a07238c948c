// Tests of value rendering (src/core/sl_value_text) for every type, and of
// the CSV and JSON Lines writers built on it. Arrays are hand-made C Data
// Interface structs over stack buffers, so that these tests depend on nothing
// but the renderer.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_value_text.h"
#include "format/text/text_writers.h"
#include "io/sl_sink.h"
#include "test_util.h"

/* ---- hand-made arrays ---------------------------------------------------------- */

static void no_release_schema(struct ArrowSchema* s) { s->release = NULL; }
static void no_release_array(struct ArrowArray* a) { a->release = NULL; }

static struct ArrowSchema* sch(struct ArrowSchema* s, const char* format, const char* name,
                               int64_t n_children, struct ArrowSchema** children) {
  memset(s, 0, sizeof *s);
  s->format = format;
  s->name = name;
  s->flags = ARROW_FLAG_NULLABLE;
  s->n_children = n_children;
  s->children = children;
  s->release = no_release_schema;
  return s;
}

static struct ArrowArray* arr(struct ArrowArray* a, int64_t length, int64_t null_count,
                              int64_t n_buffers, const void** buffers, int64_t n_children,
                              struct ArrowArray** children) {
  memset(a, 0, sizeof *a);
  a->length = length;
  a->null_count = null_count;
  a->n_buffers = n_buffers;
  a->buffers = buffers;
  a->n_children = n_children;
  a->children = children;
  a->release = no_release_array;
  return a;
}

/// Renders row `i`; NULL-terminated malloc'd copy ("<null>" when null in
/// PLAIN style, so tests see nulls explicitly).
static char* render(const struct ArrowSchema* schema, const struct ArrowArray* array, int64_t i,
                    enum sl_text_style style) {
  struct sl_text_field field;
  struct sluice_error error = {0, ""};
  int rc = sl_text_field_init(&field, schema, NULL, &error);
  if (rc != 0) fail_msg("field init: %s", error.message);
  struct sl_text text;
  sl_text_init(&text, NULL);
  if (style == SL_TEXT_PLAIN && sl_value_is_null(&field, array, i)) {
    assert_int_equal(sl_text_append_str(&text, "<null>"), 0);
  } else {
    rc = sl_value_render(&field, array, i, style, &text, &error);
    if (rc != 0) fail_msg("render: %s", error.message);
  }
  char* out = strdup(sl_text_cstr(&text));
  assert_non_null(out);
  sl_text_reset(&text);
  sl_text_field_reset(&field);
  return out;
}

#define EXPECT(schema, array, i, style, expected)           \
  do {                                                      \
    char* got_ = render((schema), (array), (i), (style));   \
    assert_string_equal(got_, (expected));                  \
    free(got_);                                             \
  } while (0)
#define PLAIN(schema, array, i, expected) EXPECT(schema, array, i, SL_TEXT_PLAIN, expected)
#define JSON(schema, array, i, expected) EXPECT(schema, array, i, SL_TEXT_JSON, expected)

/* ---- scalars ------------------------------------------------------------------- */

static void test_integers(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  int8_t i8[] = {-128, 127, 0};
  uint8_t valid = 0x5;  // row 1 null
  const void* b8[] = {&valid, i8};
  PLAIN(sch(&s, "c", "x", 0, NULL), arr(&a, 3, 1, 2, b8, 0, NULL), 0, "-128");
  PLAIN(&s, &a, 1, "<null>");
  JSON(&s, &a, 1, "null");
  JSON(&s, &a, 2, "0");
  uint8_t u8[] = {255};
  const void* bu8[] = {NULL, u8};
  PLAIN(sch(&s, "C", "x", 0, NULL), arr(&a, 1, 0, 2, bu8, 0, NULL), 0, "255");
  int16_t i16[] = {-32768};
  const void* b16[] = {NULL, i16};
  PLAIN(sch(&s, "s", "x", 0, NULL), arr(&a, 1, 0, 2, b16, 0, NULL), 0, "-32768");
  uint16_t u16[] = {65535};
  const void* bu16[] = {NULL, u16};
  PLAIN(sch(&s, "S", "x", 0, NULL), arr(&a, 1, 0, 2, bu16, 0, NULL), 0, "65535");
  int32_t i32[] = {INT32_MIN};
  const void* b32[] = {NULL, i32};
  PLAIN(sch(&s, "i", "x", 0, NULL), arr(&a, 1, 0, 2, b32, 0, NULL), 0, "-2147483648");
  uint32_t u32[] = {UINT32_MAX};
  const void* bu32[] = {NULL, u32};
  PLAIN(sch(&s, "I", "x", 0, NULL), arr(&a, 1, 0, 2, bu32, 0, NULL), 0, "4294967295");
  int64_t i64[] = {INT64_MIN, INT64_MAX};
  const void* b64[] = {NULL, i64};
  PLAIN(sch(&s, "l", "x", 0, NULL), arr(&a, 2, 0, 2, b64, 0, NULL), 0, "-9223372036854775808");
  PLAIN(&s, &a, 1, "9223372036854775807");
  uint64_t u64[] = {UINT64_MAX};
  const void* bu64[] = {NULL, u64};
  PLAIN(sch(&s, "L", "x", 0, NULL), arr(&a, 1, 0, 2, bu64, 0, NULL), 0, "18446744073709551615");
  // Offsets: row 0 of a slice starting at 1.
  arr(&a, 1, 0, 2, b64, 0, NULL)->offset = 1;
  sch(&s, "l", "x", 0, NULL);
  PLAIN(&s, &a, 0, "9223372036854775807");
}

static void test_bool_and_null(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  uint8_t bits = 0x1;  // true, false
  const void* b[] = {NULL, &bits};
  PLAIN(sch(&s, "b", "x", 0, NULL), arr(&a, 2, 0, 2, b, 0, NULL), 0, "true");
  JSON(&s, &a, 1, "false");
  const void* none[] = {NULL};
  PLAIN(sch(&s, "n", "x", 0, NULL), arr(&a, 2, 2, 0, none, 0, NULL), 0, "<null>");
  JSON(&s, &a, 1, "null");
}

static void test_floats(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  double d[] = {0.1, 1.0 / 3, 1e20, 1.0, -0.0, NAN, INFINITY, -INFINITY, 5e-324, 123456789.125};
  const void* b[] = {NULL, d};
  sch(&s, "g", "x", 0, NULL);
  arr(&a, 10, 0, 2, b, 0, NULL);
  PLAIN(&s, &a, 0, "0.1");
  PLAIN(&s, &a, 1, "0.3333333333333333");
  PLAIN(&s, &a, 2, "1e+20");
  PLAIN(&s, &a, 3, "1");
  PLAIN(&s, &a, 4, "-0");
  PLAIN(&s, &a, 5, "nan");
  PLAIN(&s, &a, 6, "inf");
  PLAIN(&s, &a, 7, "-inf");
  PLAIN(&s, &a, 8, "5e-324");
  PLAIN(&s, &a, 9, "123456789.125");
  JSON(&s, &a, 5, "null");  // JSON has no NaN
  JSON(&s, &a, 6, "null");
  // Every rendering reads back as the same double.
  for (int i = 0; i < 10; ++i) {
    if (!isfinite(d[i])) continue;
    char* text = render(&s, &a, i, SL_TEXT_PLAIN);
    assert_true(strtod(text, NULL) == d[i]);
    free(text);
  }
  float f[] = {0.1f, 16777216.0f, 3.4028235e38f};
  const void* bf[] = {NULL, f};
  PLAIN(sch(&s, "f", "x", 0, NULL), arr(&a, 3, 0, 2, bf, 0, NULL), 0, "0.1");
  PLAIN(&s, &a, 1, "16777216");
  PLAIN(&s, &a, 2, "3.4028235e+38");
  uint16_t h[] = {0x3c00, 0xc000, 0x3555, 0x7c00, 0x0001};  // 1, -2, 0.333, inf, 2^-24
  const void* bh[] = {NULL, h};
  sch(&s, "e", "x", 0, NULL);
  arr(&a, 5, 0, 2, bh, 0, NULL);
  PLAIN(&s, &a, 0, "1");
  PLAIN(&s, &a, 1, "-2");
  // Halves as the float32 that holds them exactly (as pyarrow writes them):
  // readers parse floats and doubles, never halves.
  PLAIN(&s, &a, 2, "0.33325195");
  PLAIN(&s, &a, 3, "inf");
  PLAIN(&s, &a, 4, "5.9604645e-08");
}

/// The fast double formatting agrees with the printf loop it replaces: same
/// value back, never longer.
static void test_double_formatting_random(void** state) {
  (void)state;
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    double v;
    if (i % 4 == 0) {
      memcpy(&v, &x, sizeof v);  // any bit pattern: subnormals, huge, tiny
    } else if (i % 4 == 1) {
      v = (double)(x >> 11) / 9007199254740992.0;  // uniform [0, 1)
    } else if (i % 4 == 2) {
      v = (double)(int64_t)(x % 2000001) / 100.0 - 10000.0;  // short decimals
    } else {
      v = ldexp((double)(x >> 11), (int)(x % 200) - 100);
    }
    if (!isfinite(v)) continue;
    char fast[40], slow[40];
    sl_format_double(v, fast, sizeof fast);
    for (int precision = 15; precision <= 17; ++precision) {
      snprintf(slow, sizeof slow, "%.*g", precision, v);
      if (strtod(slow, NULL) == v) break;
    }
    if (strtod(fast, NULL) != v || strlen(fast) > strlen(slow)) {
      fail_msg("%.17g: fast '%s', printf '%s'", v, fast, slow);
    }
  }
  for (int i = 0; i < 200000; ++i) {  // float32 against its printf loop
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    uint32_t bits = (uint32_t)x;
    float f;
    if (i % 2 == 0) {
      memcpy(&f, &bits, sizeof f);
    } else {
      f = (float)(bits >> 8) / 16777216.0f;
    }
    if (!isfinite(f)) continue;
    char fast[40], slow[40];
    sl_format_float(f, fast, sizeof fast);
    for (int precision = 6; precision <= 9; ++precision) {
      snprintf(slow, sizeof slow, "%.*g", precision, (double)f);
      if (strtof(slow, NULL) == f) break;
    }
    if (strtof(fast, NULL) != f || strlen(fast) > strlen(slow)) {
      fail_msg("%.9g: fast '%s', printf '%s'", (double)f, fast, slow);
    }
  }
  char buf[24];
  assert_int_equal(sl_format_int64(INT64_MIN, buf), 20);
  assert_string_equal(buf, "-9223372036854775808");
  assert_int_equal(sl_format_uint64(0, buf), 1);
  assert_string_equal(buf, "0");
  assert_int_equal(sl_format_int64(-7, buf), 2);
  assert_string_equal(buf, "-7");
  sl_format_double(9.999999999999999e22, buf, sizeof buf);
  assert_true(strtod(buf, NULL) == 9.999999999999999e22);
  sl_format_double(1e15, buf, sizeof buf);
  assert_string_equal(buf, "1e+15");
  sl_format_double(123456789012345.0, buf, sizeof buf);
  assert_string_equal(buf, "123456789012345");
  sl_format_double(0.0001, buf, sizeof buf);
  assert_string_equal(buf, "0.0001");
  sl_format_double(0.00001, buf, sizeof buf);
  assert_string_equal(buf, "1e-05");
}

static void test_strings_and_binary(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  const char data[] = "plaina\"b\\c\nd\x01\xc3\xa9\xff";
  int32_t offsets[] = {0, 5, 5, 13, 15, 16};
  const void* b[] = {NULL, offsets, data};
  sch(&s, "u", "x", 0, NULL);
  arr(&a, 5, 0, 3, b, 0, NULL);
  PLAIN(&s, &a, 0, "plain");
  PLAIN(&s, &a, 1, "");
  JSON(&s, &a, 1, "\"\"");
  PLAIN(&s, &a, 2, "a\"b\\c\nd\x01");
  JSON(&s, &a, 2, "\"a\\\"b\\\\c\\nd\\u0001\"");
  JSON(&s, &a, 3, "\"\xc3\xa9\"");  // valid UTF-8 passes through
  JSON(&s, &a, 4, "\"\\u00ff\"");    // an invalid byte is escaped
  int64_t large_offsets[] = {0, 5};
  const void* bl[] = {NULL, large_offsets, data};
  PLAIN(sch(&s, "U", "x", 0, NULL), arr(&a, 1, 0, 3, bl, 0, NULL), 0, "plain");
  const uint8_t bytes[] = {0x00, 0xab, 0x10};
  int32_t bin_offsets[] = {0, 3, 3};
  const void* bb[] = {NULL, bin_offsets, bytes};
  sch(&s, "z", "x", 0, NULL);
  arr(&a, 2, 0, 3, bb, 0, NULL);
  PLAIN(&s, &a, 0, "00ab10");
  JSON(&s, &a, 0, "\"00ab10\"");
  PLAIN(&s, &a, 1, "");
  int64_t large_bin_offsets[] = {0, 2};
  const void* blb[] = {NULL, large_bin_offsets, bytes};
  PLAIN(sch(&s, "Z", "x", 0, NULL), arr(&a, 1, 0, 3, blb, 0, NULL), 0, "00ab");
  const void* bw[] = {NULL, bytes};
  PLAIN(sch(&s, "w:1", "x", 0, NULL), arr(&a, 3, 0, 2, bw, 0, NULL), 2, "10");
}

static void put_decimal(uint8_t* out, int width, int64_t value) {
  memset(out, value < 0 ? 0xff : 0, (size_t)width);
  memcpy(out, &value, 8);
}

static void test_decimals(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  uint8_t d128[5][16];
  put_decimal(d128[0], 16, 150);
  put_decimal(d128[1], 16, -5);
  put_decimal(d128[2], 16, 0);
  put_decimal(d128[3], 16, 123456789012345678);
  memset(d128[4], 0xff, 16);
  d128[4][15] = 0x7f;  // 2^127 - 1
  const void* b[] = {NULL, d128};
  sch(&s, "d:10,2", "x", 0, NULL);
  arr(&a, 5, 0, 2, b, 0, NULL);
  PLAIN(&s, &a, 0, "1.50");
  PLAIN(&s, &a, 1, "-0.05");
  PLAIN(&s, &a, 2, "0.00");
  JSON(&s, &a, 0, "1.50");
  sch(&s, "d:38,0", "x", 0, NULL);
  PLAIN(&s, &a, 3, "123456789012345678");
  PLAIN(&s, &a, 4, "170141183460469231731687303715884105727");
  PLAIN(&s, &a, 1, "-5");
  sch(&s, "d:5,-2", "x", 0, NULL);
  PLAIN(&s, &a, 0, "15000");
  PLAIN(&s, &a, 2, "0");
  sch(&s, "d:38,20", "x", 0, NULL);
  PLAIN(&s, &a, 3, "0.00123456789012345678");
  uint8_t d256[2][32];
  put_decimal(d256[0], 32, -123456);
  memset(d256[1], 0, 32);
  d256[1][31] = 0x80;  // -2^255
  const void* b256[] = {NULL, d256};
  sch(&s, "d:76,3,256", "x", 0, NULL);
  arr(&a, 2, 0, 2, b256, 0, NULL);
  PLAIN(&s, &a, 0, "-123.456");
  sch(&s, "d:76,0,256", "x", 0, NULL);
  PLAIN(&s, &a, 1,
        "-57896044618658097711785492504343953926634992332820282019728792003956564819968");
}

static void test_dates_and_times(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  int32_t days[] = {0, 18000, -1, 11016, -719162};
  const void* bd[] = {NULL, days};
  sch(&s, "tdD", "x", 0, NULL);
  arr(&a, 5, 0, 2, bd, 0, NULL);
  PLAIN(&s, &a, 0, "1970-01-01");
  PLAIN(&s, &a, 1, "2019-04-14");
  PLAIN(&s, &a, 2, "1969-12-31");
  PLAIN(&s, &a, 3, "2000-02-29");
  PLAIN(&s, &a, 4, "0001-01-01");
  JSON(&s, &a, 0, "\"1970-01-01\"");
  int64_t ms_days[] = {259200000, -1};
  const void* bdm[] = {NULL, ms_days};
  sch(&s, "tdm", "x", 0, NULL);
  arr(&a, 2, 0, 2, bdm, 0, NULL);
  PLAIN(&s, &a, 0, "1970-01-04");
  PLAIN(&s, &a, 1, "1969-12-31");
  int32_t t32[] = {3723, 3723004};
  const void* bt32[] = {NULL, t32};
  arr(&a, 2, 0, 2, bt32, 0, NULL);
  PLAIN(sch(&s, "tts", "x", 0, NULL), &a, 0, "01:02:03");
  PLAIN(sch(&s, "ttm", "x", 0, NULL), &a, 1, "01:02:03.004");
  int64_t t64[] = {3723004005, 3723004005006};
  const void* bt64[] = {NULL, t64};
  arr(&a, 2, 0, 2, bt64, 0, NULL);
  PLAIN(sch(&s, "ttu", "x", 0, NULL), &a, 0, "01:02:03.004005");
  PLAIN(sch(&s, "ttn", "x", 0, NULL), &a, 1, "01:02:03.004005006");
  JSON(&s, &a, 1, "\"01:02:03.004005006\"");
  // Out-of-range times (Arrow's integration data has 24:00:00) are spelled
  // as they are, never wrapped into another time of day.
  int32_t odd[] = {86400, -1};
  const void* bodd[] = {NULL, odd};
  arr(&a, 2, 0, 2, bodd, 0, NULL);
  PLAIN(sch(&s, "tts", "x", 0, NULL), &a, 0, "24:00:00");
  PLAIN(sch(&s, "tts", "x", 0, NULL), &a, 1, "-00:00:01");
}

static void test_timestamps(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  int64_t v[] = {0, 1500, -1, 1700000000};
  const void* b[] = {NULL, v};
  arr(&a, 4, 0, 2, b, 0, NULL);
  PLAIN(sch(&s, "tss:", "x", 0, NULL), &a, 3, "2023-11-14 22:13:20");
  PLAIN(sch(&s, "tsm:", "x", 0, NULL), &a, 0, "1970-01-01 00:00:00.000");
  PLAIN(&s, &a, 1, "1970-01-01 00:00:01.500");
  PLAIN(&s, &a, 2, "1969-12-31 23:59:59.999");
  PLAIN(sch(&s, "tsu:UTC", "x", 0, NULL), &a, 1, "1970-01-01 00:00:00.001500Z");
  PLAIN(sch(&s, "tsn:", "x", 0, NULL), &a, 2, "1969-12-31 23:59:59.999999999");
  PLAIN(sch(&s, "tss:+05:30", "x", 0, NULL), &a, 1, "1970-01-01 05:55:00+05:30");
  PLAIN(sch(&s, "tss:-0800", "x", 0, NULL), &a, 0, "1969-12-31 16:00:00-08:00");
  PLAIN(sch(&s, "tsm:UTC", "x", 0, NULL), &a, 0, "1970-01-01 00:00:00.000Z");
  // Zones the system does not know: the UTC instant, marked Z.
  PLAIN(sch(&s, "tsm:Nowhere/Atlantis", "x", 0, NULL), &a, 0, "1970-01-01 00:00:00.000Z");
  PLAIN(sch(&s, "tsm:../../etc/passwd", "x", 0, NULL), &a, 0, "1970-01-01 00:00:00.000Z");
  // INT64_MIN microseconds (fuzz_dataset_memory found it: the fraction was
  // computed through a product that overflows): -9223372036855 s + 224192 us.
  int64_t lowest[] = {INT64_MIN};
  const void* lb[] = {NULL, lowest};
  arr(&a, 1, 0, 2, lb, 0, NULL);
  char* got = render(sch(&s, "tsu:", "x", 0, NULL), &a, 0, SL_TEXT_PLAIN);
  size_t n = strlen(got);
  assert_true(n > 7 && strcmp(got + n - 7, ".224192") == 0);
  free(got);
}

static void test_named_time_zones(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  // 2023-01-15 12:00Z, 2023-07-15 12:00Z, 2050-07-15 12:00Z (past the last
  // stored transition: the zone's POSIX rule), 2023-03-26 00:59:59Z and
  // 01:00:00Z (Paris switches to summer time at 01:00Z).
  int64_t v[] = {1673784000, 1689422400, 2541499200, 1679792399, 1679792400};
  const void* b[] = {NULL, v};
  arr(&a, 5, 0, 2, b, 0, NULL);
  sch(&s, "tss:Europe/Paris", "x", 0, NULL);
  char* probe = render(&s, &a, 0, SL_TEXT_PLAIN);
  int have_tzdata = strcmp(probe, "2023-01-15 12:00:00Z") != 0;
  free(probe);
  if (!have_tzdata) skip();
  PLAIN(&s, &a, 0, "2023-01-15 13:00:00+01:00");
  PLAIN(&s, &a, 1, "2023-07-15 14:00:00+02:00");
  PLAIN(&s, &a, 2, "2050-07-15 14:00:00+02:00");
  PLAIN(&s, &a, 3, "2023-03-26 01:59:59+01:00");
  PLAIN(&s, &a, 4, "2023-03-26 03:00:00+02:00");
  sch(&s, "tss:America/New_York", "x", 0, NULL);
  PLAIN(&s, &a, 0, "2023-01-15 07:00:00-05:00");
  PLAIN(&s, &a, 2, "2050-07-15 08:00:00-04:00");
  sch(&s, "tss:Australia/Lord_Howe", "x", 0, NULL);  // half-hour DST, southern
  PLAIN(&s, &a, 0, "2023-01-15 23:00:00+11:00");
  PLAIN(&s, &a, 1, "2023-07-15 22:30:00+10:30");
  PLAIN(&s, &a, 2, "2050-07-15 22:30:00+10:30");
  sch(&s, "tss:Asia/Kolkata", "x", 0, NULL);
  PLAIN(&s, &a, 2, "2050-07-15 17:30:00+05:30");
}

static void test_durations_and_intervals(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct ArrowArray a;
  int64_t d[] = {-1500};
  const void* bd[] = {NULL, d};
  arr(&a, 1, 0, 2, bd, 0, NULL);
  PLAIN(sch(&s, "tDm", "x", 0, NULL), &a, 0, "-1500");
  JSON(sch(&s, "tDn", "x", 0, NULL), &a, 0, "-1500");
  int32_t months[] = {14};
  const void* bm[] = {NULL, months};
  PLAIN(sch(&s, "tiM", "x", 0, NULL), arr(&a, 1, 0, 2, bm, 0, NULL), 0, "14M");
  JSON(&s, &a, 0, "\"14M\"");
  int32_t day_time[] = {3, -250};
  const void* bdt[] = {NULL, day_time};
  PLAIN(sch(&s, "tiD", "x", 0, NULL), arr(&a, 1, 0, 2, bdt, 0, NULL), 0, "3d-250ms");
  uint8_t mdn[16];
  int32_t md[2] = {1, 2};
  int64_t ns = 3;
  memcpy(mdn, md, 8);
  memcpy(mdn + 8, &ns, 8);
  const void* bmdn[] = {NULL, mdn};
  PLAIN(sch(&s, "tin", "x", 0, NULL), arr(&a, 1, 0, 2, bmdn, 0, NULL), 0, "1M2d3ns");
}

/* ---- nested ------------------------------------------------------------------ */

static void test_lists(void** state) {
  (void)state;
  struct ArrowSchema s, item;
  struct ArrowSchema* s_children[] = {&item};
  struct ArrowArray a, values;
  struct ArrowArray* a_children[] = {&values};
  int32_t v[] = {1, 2, 3, 4};
  uint8_t v_valid = 0xd;  // values[1] null
  const void* bv[] = {&v_valid, v};
  arr(&values, 4, 1, 2, bv, 0, NULL);
  sch(&item, "i", "item", 0, NULL);
  int32_t offsets[] = {0, 3, 3, 4};
  uint8_t valid = 0x5;  // list 1 null
  const void* b[] = {&valid, offsets};
  sch(&s, "+l", "x", 1, s_children);
  arr(&a, 3, 1, 2, b, 1, a_children);
  PLAIN(&s, &a, 0, "[1,null,3]");
  PLAIN(&s, &a, 1, "<null>");
  JSON(&s, &a, 1, "null");
  PLAIN(&s, &a, 2, "[4]");
  int64_t large_offsets[] = {0, 0, 2};
  const void* bl[] = {NULL, large_offsets};
  sch(&s, "+L", "x", 1, s_children);
  arr(&a, 2, 0, 2, bl, 1, a_children);
  PLAIN(&s, &a, 0, "[]");
  PLAIN(&s, &a, 1, "[1,null]");
  const void* bf[] = {NULL};
  sch(&s, "+w:2", "x", 1, s_children);
  arr(&a, 2, 0, 1, bf, 1, a_children);
  PLAIN(&s, &a, 1, "[3,4]");
  // A sliced child: the child's own offset shifts its rows.
  values.offset = 1;
  PLAIN(&s, &a, 0, "[null,3]");
  // Strings inside lists are JSON strings even in PLAIN style.
  struct ArrowSchema str_item;
  struct ArrowSchema* str_children[] = {&str_item};
  sch(&str_item, "u", "item", 0, NULL);
  const char chars[] = "a,b\"";
  int32_t str_offsets[] = {0, 3, 4};
  const void* bs[] = {NULL, str_offsets, chars};
  struct ArrowArray strings;
  struct ArrowArray* str_arrays[] = {&strings};
  arr(&strings, 2, 0, 3, bs, 0, NULL);
  int32_t list_offsets[] = {0, 2};
  const void* blo[] = {NULL, list_offsets};
  sch(&s, "+l", "x", 1, str_children);
  arr(&a, 1, 0, 2, blo, 1, str_arrays);
  PLAIN(&s, &a, 0, "[\"a,b\",\"\\\"\"]");
}

static void test_struct_map_dictionary_union(void** state) {
  (void)state;
  // struct<a: int32, b: utf8>
  struct ArrowSchema s, fa, fb;
  struct ArrowSchema* s_children[] = {&fa, &fb};
  struct ArrowArray a, ca, cb;
  struct ArrowArray* a_children[] = {&ca, &cb};
  int32_t ints[] = {7, 8};
  uint8_t ints_valid = 0x1;
  const void* bia[] = {&ints_valid, ints};
  const char chars[] = "xy";
  int32_t offs[] = {0, 1, 2};
  const void* bib[] = {NULL, offs, chars};
  arr(&ca, 2, 1, 2, bia, 0, NULL);
  arr(&cb, 2, 0, 3, bib, 0, NULL);
  sch(&fa, "i", "a", 0, NULL);
  sch(&fb, "u", "b", 0, NULL);
  const void* bs[] = {NULL};
  sch(&s, "+s", "x", 2, s_children);
  arr(&a, 2, 0, 1, bs, 2, a_children);
  PLAIN(&s, &a, 0, "{\"a\":7,\"b\":\"x\"}");
  JSON(&s, &a, 1, "{\"a\":null,\"b\":\"y\"}");
  a.offset = 1;  // a struct's offset applies to its children
  PLAIN(&s, &a, 0, "{\"a\":null,\"b\":\"y\"}");
  a.offset = 0;

  // map<utf8, int32>: entries struct<key, value>
  struct ArrowSchema m, entries;
  struct ArrowSchema* m_children[] = {&entries};
  struct ArrowArray ma, ea;
  struct ArrowArray* ma_children[] = {&ea};
  sch(&fb, "u", "key", 0, NULL);
  sch(&fa, "i", "value", 0, NULL);
  struct ArrowSchema* e_children[] = {&fb, &fa};
  struct ArrowArray* ea_children[] = {&cb, &ca};
  sch(&entries, "+s", "entries", 2, e_children);
  arr(&ea, 2, 0, 1, bs, 2, ea_children);
  sch(&m, "+m", "x", 1, m_children);
  int32_t map_offsets[] = {0, 2, 2};
  const void* bm[] = {NULL, map_offsets};
  arr(&ma, 2, 0, 2, bm, 1, ma_children);
  PLAIN(&m, &ma, 0, "{\"x\":7,\"y\":null}");
  PLAIN(&m, &ma, 1, "{}");

  // dictionary<utf8> with int8 indexes
  struct ArrowSchema d, dict_values;
  struct ArrowArray da, dv;
  sch(&dict_values, "u", NULL, 0, NULL);
  sch(&d, "c", "x", 0, NULL)->dictionary = &dict_values;
  int8_t idx[] = {1, 0, 1};
  uint8_t idx_valid = 0x3;
  const void* bd[] = {&idx_valid, idx};
  arr(&dv, 2, 0, 3, bib, 0, NULL);
  arr(&da, 3, 1, 2, bd, 0, NULL)->dictionary = &dv;
  PLAIN(&d, &da, 0, "y");
  JSON(&d, &da, 1, "\"x\"");
  PLAIN(&d, &da, 2, "<null>");
  JSON(&d, &da, 2, "null");

  // sparse union<i: int32, s: utf8> with type codes 5, 9
  struct ArrowSchema u;
  sch(&fa, "i", "i", 0, NULL);
  sch(&fb, "u", "s", 0, NULL);
  sch(&u, "+us:5,9", "x", 2, s_children);
  int8_t type_ids[] = {5, 9};
  const void* bu[] = {type_ids};
  struct ArrowArray ua;
  arr(&ua, 2, 0, 1, bu, 2, a_children);
  PLAIN(&u, &ua, 0, "7");
  PLAIN(&u, &ua, 1, "y");
  // dense union: offsets pick the child rows
  int8_t dense_ids[] = {9, 5};
  int32_t dense_offsets[] = {0, 1};
  const void* bdu[] = {dense_ids, dense_offsets};
  sch(&u, "+ud:5,9", "x", 2, s_children);
  arr(&ua, 2, 0, 2, bdu, 2, a_children);
  PLAIN(&u, &ua, 0, "x");
  PLAIN(&u, &ua, 1, "<null>");  // ints[1] is null
  JSON(&u, &ua, 1, "null");
}

static void test_unsupported_type(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct sl_text_field field;
  struct sluice_error error = {0, ""};
  assert_int_not_equal(sl_text_field_init(&field, sch(&s, "?x", "x", 0, NULL), NULL, &error), 0);
  assert_true(error.message[0] != '\0');
}

/* ---- writers ------------------------------------------------------------------- */

/// A one-batch stream over a hand-made struct array.
struct one_batch {
  struct ArrowSchema* schema;
  struct ArrowArray* batch;
  int done;
};

static int one_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct one_batch* ob = stream->private_data;
  *out = *ob->schema;  // the fixture's release is a no-op
  return 0;
}

static int one_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct one_batch* ob = stream->private_data;
  if (ob->done) {
    memset(out, 0, sizeof *out);
  } else {
    *out = *ob->batch;
    ob->done = 1;
  }
  return 0;
}

static const char* one_last_error(struct ArrowArrayStream* stream) {
  (void)stream;
  return NULL;
}

static char* write_with(const struct sl_format_writer* writer, struct ArrowSchema* schema,
                        struct ArrowArray* batch) {
  char path[1024];
  test_temp_path(writer->name, path, sizeof path);
  struct one_batch ob = {schema, batch, 0};
  struct ArrowArrayStream stream = {one_get_schema, one_get_next, one_last_error, NULL, &ob};
  struct sl_sink* sink = NULL;
  struct sluice_error error = {0, ""};
  assert_int_equal(sl_sink_open(path, NULL, &sink, &error), 0);
  struct sl_write_args args = {.alloc = NULL};
  int rc = writer->write(&stream, sink, &args, &error);
  if (rc != 0) fail_msg("write: %s", error.message);
  assert_int_equal(sl_sink_commit(sink, &error), 0);
  size_t size = 0;
  uint8_t* data = test_read_file(path, &size);
  assert_non_null(data);
  char* text = malloc(size + 1);
  assert_non_null(text);
  memcpy(text, data, size);
  text[size] = '\0';
  free(data);
  remove(path);
  return text;
}

static void test_csv_and_jsonl_writers(void** state) {
  (void)state;
  struct ArrowSchema s, fa, fb;
  struct ArrowSchema* s_children[] = {&fa, &fb};
  struct ArrowArray a, ca, cb;
  struct ArrowArray* a_children[] = {&ca, &cb};
  int32_t ints[] = {7, 8, 9};
  uint8_t ints_valid = 0x5;
  const void* bia[] = {&ints_valid, ints};
  const char chars[] = "a,b\"c\"plain";
  int32_t offs[] = {0, 3, 6, 6};
  uint8_t str_valid = 0x3;  // row 2 null, row 1 is "\"c\""
  const void* bib[] = {&str_valid, offs, chars};
  arr(&ca, 3, 1, 2, bia, 0, NULL);
  arr(&cb, 3, 1, 3, bib, 0, NULL);
  sch(&fa, "i", "n", 0, NULL);
  sch(&fb, "u", "s,x", 0, NULL);
  const void* bs[] = {NULL};
  sch(&s, "+s", "", 2, s_children);
  arr(&a, 3, 0, 1, bs, 2, a_children);
  char* csv = write_with(sl_csv_writer(), &s, &a);
  assert_string_equal(csv, "n,\"s,x\"\n7,\"a,b\"\n,\"\"\"c\"\"\"\n9,\n");
  free(csv);
  char* jsonl = write_with(sl_jsonl_writer(), &s, &a);
  assert_string_equal(jsonl,
                      "{\"n\":7,\"s,x\":\"a,b\"}\n{\"n\":null,\"s,x\":\"\\\"c\\\"\"}\n"
                      "{\"n\":9,\"s,x\":null}\n");
  free(jsonl);
  // The empty string and null differ in CSV: "" vs. nothing.
  int32_t empty_offsets[] = {0, 0, 0, 0};
  const void* bie[] = {&str_valid, empty_offsets, chars};
  arr(&cb, 3, 1, 3, bie, 0, NULL);
  csv = write_with(sl_csv_writer(), &s, &a);
  assert_string_equal(csv, "n,\"s,x\"\n7,\"\"\n,\"\"\n9,\n");
  free(csv);
  assert_string_equal(sl_csv_writer()->name, "csv");
  assert_string_equal(sl_jsonl_writer()->extensions[1], ".ndjson");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_bool_and_null),
      cmocka_unit_test(test_floats),
      cmocka_unit_test(test_double_formatting_random),
      cmocka_unit_test(test_strings_and_binary),
      cmocka_unit_test(test_decimals),
      cmocka_unit_test(test_dates_and_times),
      cmocka_unit_test(test_timestamps),
      cmocka_unit_test(test_named_time_zones),
      cmocka_unit_test(test_durations_and_intervals),
      cmocka_unit_test(test_lists),
      cmocka_unit_test(test_struct_map_dictionary_union),
      cmocka_unit_test(test_unsupported_type),
      cmocka_unit_test(test_csv_and_jsonl_writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
