// Row filters: literals parsed to each column's type (and refused with the
// reason when they are not of it), the range test Parquet prunes row groups
// with (never "no" where a value in the range passes: checked against
// passes-by-enumeration), and clean ENOMEM at every allocation.
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_row_filter.h"
#include "test_util.h"

static const char* const k_formats[] = {"l", "i", "C", "g", "u", "b", "tdD", "tsu:UTC", "ttm",
                                        "tsn:"};
static const char* const k_names[] = {"i64", "i32", "u8", "f", "s", "b", "d", "ts", "t", "tn"};
#define N_COLUMNS 10

static void make_schema(struct ArrowSchema* s, const struct sluice_allocator* alloc) {
  struct sluice_error err;
  assert_int_equal(sl_schema_init(s, alloc, "+s", "", 0, N_COLUMNS, &err), 0);
  for (int i = 0; i < N_COLUMNS; ++i) {
    assert_int_equal(sl_schema_init(s->children[i], alloc, k_formats[i], k_names[i], 2, 0, &err),
                     0);
  }
}

static struct sl_row_filter* parse_ok(const struct ArrowSchema* s, const char* text) {
  struct sluice_error err;
  struct sl_row_filter* f = NULL;
  int rc = sl_row_filter_parse(text, s, NULL, &f, &err);
  if (rc != 0) fail_msg("'%s': %s", text, err.message);
  assert_non_null(f);
  return f;
}

static void test_literals_take_the_columns_types(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  struct sl_row_filter* f = parse_ok(
      &s, "i64>-5,u8=1|255,f<=2.5e3,s=a%2Cb|z,b=TRUE,d>=2024-02-29,ts<2024-01-01T00:00:01.5Z,"
          "t=12:00:01.250,tn>1970-01-01 00:00:00.000000001+01:00");
  assert_int_equal(f->n_conditions, 9);
  const struct sl_filter_condition* c = f->conditions;
  assert_int_equal(c[0].kind, SL_FILTER_INT);
  assert_true(c[0].values[0].i == -5 && c[0].op == SL_FILTER_GT);
  assert_int_equal(c[1].kind, SL_FILTER_UINT);
  assert_true(c[1].n_values == 2 && c[1].values[1].u == 255);
  assert_true(c[2].kind == SL_FILTER_FLOAT && c[2].values[0].f == 2500.0);
  assert_int_equal(c[3].kind, SL_FILTER_BYTES);
  assert_int_equal(c[3].values[0].bytes.len, 3);
  assert_memory_equal(c[3].values[0].bytes.s, "a,b", 3);
  assert_true(c[4].kind == SL_FILTER_BOOL && c[4].values[0].i == 1);
  assert_true(c[5].values[0].i == 19782);  // 2024-02-29 in days
  assert_true(c[6].values[0].i == 1704067201500000LL);  // microseconds
  assert_true(c[7].values[0].i == 43201250);             // milliseconds of the day
  assert_true(c[8].values[0].i == 1 - 3600LL * 1000000000LL);  // +01:00 is an hour earlier in UTC
  sl_row_filter_free(f);
  s.release(&s);
}

static void expect_error(const struct ArrowSchema* s, const char* text, int code,
                         const char* needle) {
  struct sluice_error err;
  struct sl_row_filter* f = NULL;
  int rc = sl_row_filter_parse(text, s, NULL, &f, &err);
  assert_int_equal(rc, code);
  assert_null(f);
  if (strstr(err.message, needle) == NULL) fail_msg("'%s': '%s' lacks '%s'", text, err.message, needle);
}

static void test_bad_filters_say_why(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  expect_error(&s, "nope=1", EINVAL, "no column 'nope'");
  // (1.5 and -1 are numbers, compared as DuckDB compares them; text is not.)
  expect_error(&s, "i64=1.5x", EINVAL, "'1.5x' is not an integer, as column 'i64' (int64) needs");
  expect_error(&s, "u8=-x", EINVAL, "unsigned integer");
  expect_error(&s, "d>2024-02-30", EINVAL, "YYYY-MM-DD");
  expect_error(&s, "tn<1677-09-21 00:12:43.145224191", EINVAL,
               "'1677-09-21 00:12:43.145224191' is past the range of column 'tn' "
               "(timestamp[ns]: years 1677 to 2262)");
  expect_error(&s, "tn>2262-04-11T23:47:16.854775808", EINVAL, "past the range");
  expect_error(&s, "tn>2262-04-12", EINVAL, "past the range");
  expect_error(&s, "t<25:00", EINVAL, "is not a time of day (HH:MM:SS[.f])");
  // A bare number is no date, time or timestamp (not day 2024 of 1970).
  expect_error(&s, "d<2024", EINVAL, "'2024' is not a YYYY-MM-DD date");
  expect_error(&s, "ts>2024", EINVAL, "date-time");
  expect_error(&s, "t=36000000", EINVAL, "time of day");
  expect_error(&s, "b=yes", EINVAL, "true or false");
  expect_error(&s, "f<1|2", EINVAL, "several values");
  expect_error(&s, "i64~3", EINVAL, "expected NAME=VALUE");
  expect_error(&s, "i64", EINVAL, "expected NAME=VALUE");
  expect_error(&s, ",i64=1", EINVAL, "empty condition");
  expect_error(&s, "i64=1,,u8=2", EINVAL, "empty condition");
  expect_error(&s, "i64=1,", EINVAL, "empty condition");
  expect_error(&s, ";i64=1", EINVAL, "empty condition");
  expect_error(&s, "i64=1;;u8=2", EINVAL, "empty condition");
  expect_error(&s, "i64=1,;u8=2", EINVAL, "empty condition");
  expect_error(&s, "i64=1;", EINVAL, "empty condition");
  expect_error(&s, "i64=1;i64=%001", EINVAL, "free of NUL bytes");
  s.release(&s);
}

static void test_unsupported_types(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct sluice_error err;
  assert_int_equal(sl_schema_init(&s, NULL, "+s", "", 0, 2, &err), 0);
  assert_int_equal(sl_schema_init(s.children[0], NULL, "+l", "list", 2, 1, &err), 0);
  assert_int_equal(sl_schema_init(s.children[0]->children[0], NULL, "l", "item", 2, 0, &err), 0);
  assert_int_equal(sl_schema_init(s.children[1], NULL, "l", "x", 2, 0, &err), 0);
  expect_error(&s, "list=1", ENOTSUP, "'list' has type list,");
  // A bad condition after good ones: all freed (the allocator-counting
  // tests would see a leak), nothing returned.
  struct sl_row_filter* f = (struct sl_row_filter*)1;
  assert_int_equal(sl_row_filter_parse("x>1;x<0,list=1", &s, NULL, &f, &err), ENOTSUP);
  assert_null(f);
  s.release(&s);
}

/// Fails the test: pruning must not ask about a null-typed column.
static int not_asked(void* ctx, const struct sl_filter_condition* c) {
  (void)ctx;
  fail_msg("pruning asked about column '%s'", c->name);
  return 1;
}

/// A null-typed column (every value null): any literal parses, no row
/// passes (the array has no buffers to read), pruning does not judge it.
static void test_null_typed_column_passes_no_row(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct sluice_error err;
  assert_int_equal(sl_schema_init(&s, NULL, "+s", "", 0, 2, &err), 0);
  assert_int_equal(sl_schema_init(s.children[0], NULL, "n", "n", 2, 0, &err), 0);
  assert_int_equal(sl_schema_init(s.children[1], NULL, "l", "x", 2, 0, &err), 0);
  expect_error(&s, "n<1|2", EINVAL, "several values");
  const int64_t xs[5] = {1, 2, 3, 4, 5};
  const void* x_buffers[2] = {NULL, xs};
  struct ArrowArray n = {.length = 5, .null_count = 5, .n_buffers = 0};
  struct ArrowArray x = {.length = 5, .n_buffers = 2, .buffers = x_buffers};
  struct ArrowArray* children[2] = {&n, &x};
  const void* batch_buffers[1] = {NULL};
  struct ArrowArray batch = {.length = 5, .n_buffers = 1, .buffers = batch_buffers,
                             .n_children = 2, .children = children};
  const char* texts[] = {"n=1", "n!=abc|x", "n<2024-01-01", "n=1;x>3", "n>=0,x<3;x=1"};
  const uint8_t want[] = {0, 0, 0, 0x18, 0x01};
  for (size_t t = 0; t < sizeof texts / sizeof *texts; ++t) {
    struct sl_row_filter* f = parse_ok(&s, texts[t]);
    int64_t at[4];
    for (int k = 0; k < f->n_conditions; ++k) at[k] = f->conditions[k].column;
    uint8_t sel = 0xff;
    int64_t selected = -1;
    assert_int_equal(sl_row_filter_select(f, &batch, at, &sel, &selected, &err), 0);
    if ((sel & 0x1f) != want[t]) fail_msg("'%s': selection %#x, want %#x", texts[t], sel, want[t]);
    // Only groups of null-column conditions alone pass pruning unjudged.
    if (t < 3) assert_int_equal(sl_row_filter_may_pass(f, not_asked, NULL), 1);
    sl_row_filter_free(f);
  }
  s.release(&s);
}

/// Rules out the conditions on column `*ctx`.
static int not_on_column(void* ctx, const struct sl_filter_condition* c) {
  return c->column != *(const int64_t*)ctx;
}

/// OR groups: conditions keep their group, in order; a row group (here: a
/// column said to hold no passing value) is ruled out only when every group
/// has a condition ruled out, and a group's later conditions are not asked.
static void test_or_groups(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  struct sl_row_filter* f = parse_ok(&s, "i64=1,u8<2;f>0;s=a%3Bb,i64!=3");
  assert_int_equal(f->n_conditions, 5);
  assert_int_equal(f->n_groups, 3);
  const int groups[] = {0, 0, 1, 2, 2};
  for (int k = 0; k < 5; ++k) assert_int_equal(f->conditions[k].group, groups[k]);
  assert_int_equal(f->conditions[3].values[0].bytes.len, 3);  // "a;b": %3B is no separator
  int64_t column = 0;  // i64: rules out groups 0 and 2, not group 1 (f)
  assert_int_equal(sl_row_filter_may_pass(f, not_on_column, &column), 1);
  column = 3;  // f: group 1 only
  assert_int_equal(sl_row_filter_may_pass(f, not_on_column, &column), 1);
  sl_row_filter_free(f);
  f = parse_ok(&s, "i64=1;i64>5,u8=1");
  column = 0;
  assert_int_equal(sl_row_filter_may_pass(f, not_on_column, &column), 0);
  column = 2;
  assert_int_equal(sl_row_filter_may_pass(f, not_on_column, &column), 1);
  sl_row_filter_free(f);
  s.release(&s);
}

/// The range test never says "no row" for a range holding a value that
/// passes: every integer range within [-6, 6] and every condition on it.
static void test_range_test_is_sound_and_tight(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  static const char* ops[] = {"=", "!=", "<", "<=", ">", ">="};
  char text[64];
  for (int o = 0; o < 6; ++o) {
    for (int v = -4; v <= 4; ++v) {
      snprintf(text, sizeof text, "i64%s%d", ops[o], v);
      struct sl_row_filter* f = parse_ok(&s, text);
      const struct sl_filter_condition* c = &f->conditions[0];
      for (int lo = -6; lo <= 6; ++lo) {
        for (int hi = lo; hi <= 6; ++hi) {
          int any = 0;
          for (int x = lo; x <= hi; ++x) {
            int pass = o == 0 ? x == v : o == 1 ? x != v : o == 2 ? x < v : o == 3 ? x <= v
                       : o == 4 ? x > v : x >= v;
            any |= pass;
          }
          union sl_filter_value min = {.i = lo}, max = {.i = hi};
          int may = sl_filter_range_may_pass(c, &min, &max);
          if (may != any) fail_msg("%s on [%d, %d]: may %d, truth %d", text, lo, hi, may, any);
        }
      }
      sl_row_filter_free(f);
    }
  }
  // NaN bounds prove nothing; bytes compare bytewise, shorter first.
  struct sl_row_filter* f = parse_ok(&s, "f>1");
  union sl_filter_value nan = {.f = NAN}, one = {.f = 0.5};
  assert_int_equal(sl_filter_range_may_pass(&f->conditions[0], &nan, &one), 1);
  sl_row_filter_free(f);
  f = parse_ok(&s, "s=ab");
  union sl_filter_value a = {.bytes = {(const uint8_t*)"a", 1}};
  union sl_filter_value abc = {.bytes = {(const uint8_t*)"abc", 3}};
  union sl_filter_value b = {.bytes = {(const uint8_t*)"b", 1}};
  assert_int_equal(sl_filter_range_may_pass(&f->conditions[0], &a, &abc), 1);
  assert_int_equal(sl_filter_range_may_pass(&f->conditions[0], &abc, &b), 0);
  sl_row_filter_free(f);
  s.release(&s);
}

/// A time or timestamp finer than the column's unit is bounded, as pyarrow
/// and DuckDB compare it exactly (it was refused); timestamp[ns] reaches
/// both ends of int64.
static void test_times_finer_than_the_unit_are_bounded(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  struct sl_row_filter* f = parse_ok(
      &s, "ts>2024-01-01T00:00:00.0000001,ts>=2024-01-01T00:00:00.0000001,"
          "ts<1969-12-31T23:59:59.9999995,t<=12:00:01.2505,t>=12:00:01.2505,"
          "tn>=1677-09-21 00:12:43.145224192,tn<=2262-04-11 23:47:16.854775807");
  const struct sl_filter_condition* c = f->conditions;
  assert_true(c[0].op == SL_FILTER_GT && c[0].values[0].i == 1704067200000000LL);
  assert_true(c[1].op == SL_FILTER_GE && c[1].values[0].i == 1704067200000001LL);
  assert_true(c[2].op == SL_FILTER_LT && c[2].values[0].i == 0);  // < -0.5 us: < 0
  assert_true(c[3].op == SL_FILTER_LE && c[3].values[0].i == 43201250);
  assert_true(c[4].op == SL_FILTER_GE && c[4].values[0].i == 43201251);
  assert_true(c[5].op == SL_FILTER_GE && c[5].values[0].i == INT64_MIN);
  assert_true(c[6].op == SL_FILTER_LE && c[6].values[0].i == INT64_MAX);
  sl_row_filter_free(f);
  f = parse_ok(&s, "ts=2024-01-01T00:00:00.0000001");  // no row: as ts < MIN
  assert_true(f->conditions[0].op == SL_FILTER_LT && f->conditions[0].values[0].i == INT64_MIN);
  sl_row_filter_free(f);
  f = parse_ok(&s, "ts!=2024-01-01T00:00:00.0000001");  // every row: as ts >= MIN
  assert_true(f->conditions[0].op == SL_FILTER_GE && f->conditions[0].values[0].i == INT64_MIN);
  sl_row_filter_free(f);
  s.release(&s);
}

static int bound(enum sl_filter_kind kind, const char* v, enum sl_filter_op op,
                 union sl_filter_value* out) {
  return sl_filter_integer_bound(kind, v, strlen(v), op, out);
}

/// Other numbers on integer columns by their exact value (they went through
/// a double: 9007199254740993.0 was ...992, 18446744073709551615.0 past
/// uint64), inf and nan as pyarrow compares them (they were refused).
static void test_numbers_on_integer_columns_compare_exactly(void** state) {
  (void)state;
  union sl_filter_value v;
  assert_int_equal(bound(SL_FILTER_INT, "9007199254740993.0", SL_FILTER_EQ, &v), 0);
  assert_true(v.i == 9007199254740993LL);
  assert_int_equal(bound(SL_FILTER_INT, "9007199254740993.5", SL_FILTER_EQ, &v), -1);
  assert_int_equal(bound(SL_FILTER_INT, "9007199254740993.5", SL_FILTER_NE, &v), 1);
  assert_int_equal(bound(SL_FILTER_INT, "9007199254740993.5", SL_FILTER_GT, &v), 0);
  assert_true(v.i == 9007199254740993LL);
  assert_int_equal(bound(SL_FILTER_INT, "9007199254740993.5", SL_FILTER_GE, &v), 0);
  assert_true(v.i == 9007199254740994LL);
  assert_int_equal(bound(SL_FILTER_INT, "-9007199254740993.5", SL_FILTER_LT, &v), 0);
  assert_true(v.i == -9007199254740993LL);
  assert_int_equal(bound(SL_FILTER_INT, "9.007199254740993e15", SL_FILTER_EQ, &v), 0);
  assert_true(v.i == 9007199254740993LL);
  assert_int_equal(bound(SL_FILTER_UINT, "18446744073709551615.0", SL_FILTER_EQ, &v), 0);
  assert_true(v.u == UINT64_MAX);
  assert_int_equal(bound(SL_FILTER_UINT, "18446744073709551615.5", SL_FILTER_GT, &v), 0);
  assert_true(v.u == UINT64_MAX);
  assert_int_equal(bound(SL_FILTER_UINT, "18446744073709551615.5", SL_FILTER_GE, &v), -1);
  assert_int_equal(bound(SL_FILTER_UINT, "-0.5", SL_FILTER_GT, &v), 1);
  assert_int_equal(bound(SL_FILTER_INT, "-9223372036854775808.0", SL_FILTER_EQ, &v), 0);
  assert_true(v.i == INT64_MIN);
  assert_int_equal(bound(SL_FILTER_INT, "-9223372036854775808.5", SL_FILTER_GT, &v), 1);
  assert_int_equal(bound(SL_FILTER_INT, "9223372036854775807.5", SL_FILTER_LE, &v), 0);
  assert_true(v.i == INT64_MAX);
  assert_int_equal(bound(SL_FILTER_INT, "9223372036854775807.5", SL_FILTER_LT, &v), 1);
  assert_int_equal(bound(SL_FILTER_INT, "1e100000000", SL_FILTER_LT, &v), 1);
  assert_int_equal(bound(SL_FILTER_INT, "inf", SL_FILTER_GT, &v), -1);
  assert_int_equal(bound(SL_FILTER_INT, "Infinity", SL_FILTER_LT, &v), 1);
  assert_int_equal(bound(SL_FILTER_UINT, "-inf", SL_FILTER_GE, &v), 1);
  assert_int_equal(bound(SL_FILTER_UINT, "-INF", SL_FILTER_EQ, &v), -1);
  assert_int_equal(bound(SL_FILTER_INT, "nan", SL_FILTER_NE, &v), 1);
  assert_int_equal(bound(SL_FILTER_INT, "-NaN", SL_FILTER_LT, &v), -1);
  assert_int_equal(bound(SL_FILTER_INT, "nanx", SL_FILTER_LT, &v), -2);
  assert_int_equal(bound(SL_FILTER_INT, " 5", SL_FILTER_EQ, &v), -2);
  assert_int_equal(bound(SL_FILTER_INT, "5 ", SL_FILTER_EQ, &v), -2);
  assert_int_equal(bound(SL_FILTER_INT, "0x10", SL_FILTER_EQ, &v), -2);
  assert_int_equal(bound(SL_FILTER_INT, "", SL_FILTER_EQ, &v), -2);
}

/// A duration's value is a number of its unit, bounded exactly as on an
/// integer column (Python writes a timedelta of 1.5 s so on duration[s]).
static void test_numbers_on_duration_columns_compare_exactly(void** state) {
  (void)state;
  struct sluice_error err;
  struct ArrowSchema s;
  assert_int_equal(sl_schema_init(&s, NULL, "+s", "", 0, 1, &err), 0);
  assert_int_equal(sl_schema_init(s.children[0], NULL, "tDs", "d", 2, 0, &err), 0);
  struct sl_row_filter* f = parse_ok(&s, "d>1.5,d>=1.5,d<-2.5,d=3");
  assert_int_equal(f->n_conditions, 4);
  const struct sl_filter_condition* c = f->conditions;
  assert_true(c[0].op == SL_FILTER_GT && c[0].values[0].i == 1);
  assert_true(c[1].op == SL_FILTER_GE && c[1].values[0].i == 2);
  assert_true(c[2].op == SL_FILTER_LT && c[2].values[0].i == -2);
  assert_true(c[3].op == SL_FILTER_EQ && c[3].values[0].i == 3);
  sl_row_filter_free(f);
  expect_error(&s, "d>1s", EINVAL, "'1s' is not an integer (the duration in the column's unit)");
  s.release(&s);
}

/// Any number of values (more than 256 were refused), kept sorted for
/// bisection (NaNs last); a long condition is quoted by its start.
static void test_values_any_number_sorted(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  static char text[8192];
  int used = snprintf(text, sizeof text, "i64!=");
  for (int v = 999; v >= 0; --v) used += snprintf(text + used, sizeof text - (size_t)used, "%d|", v);
  text[used - 1] = '\0';
  struct sl_row_filter* f = parse_ok(&s, text);
  assert_int_equal(f->conditions[0].n_values, 1000);
  for (int k = 0; k < 1000; ++k) assert_true(f->conditions[0].values[k].i == k);
  sl_row_filter_free(f);
  f = parse_ok(&s, "f=nan|1|-2|nan|0.5,s=b|a|ab|%00");
  const union sl_filter_value* v = f->conditions[0].values;
  assert_true(v[0].f == -2 && v[1].f == 0.5 && v[2].f == 1 && isnan(v[3].f) && isnan(v[4].f));
  v = f->conditions[1].values;
  assert_true(v[0].bytes.len == 1 && v[0].bytes.s[0] == 0);
  assert_memory_equal(v[1].bytes.s, "a", 1);
  assert_memory_equal(v[2].bytes.s, "ab", 2);
  assert_memory_equal(v[3].bytes.s, "b", 1);
  sl_row_filter_free(f);
  memcpy(text + used - 1, "|x", 3);
  struct sluice_error err;
  assert_int_equal(sl_row_filter_parse(text, &s, NULL, &f, &err), EINVAL);
  assert_non_null(strstr(err.message, "filter 'i64!=999|998|"));
  assert_non_null(strstr(err.message, "...': 'x' is not an integer"));
  assert_true(strlen(err.message) < 250);
  s.release(&s);
}

static int parse_attempt(void* ctx, const struct sluice_allocator* alloc,
                         struct sluice_error* error) {
  (void)ctx;
  struct ArrowSchema s;
  int rc = sl_schema_init(&s, alloc, "+s", "", 0, 2, error);
  if (rc != 0) return rc;
  rc = sl_schema_init(s.children[0], alloc, "u", "s", 2, 0, error);
  if (rc == 0) rc = sl_schema_init(s.children[1], alloc, "l", "x", 2, 0, error);
  struct sl_row_filter* f = NULL;
  if (rc == 0) rc = sl_row_filter_parse("s=a|bb|ccc,x>1;s!=z", &s, alloc, &f, error);
  sl_row_filter_free(f);
  s.release(&s);
  return rc;
}

/// A date-time with a zone on a date column compares as pyarrow compares an
/// aware datetime with a date: the date's midnight in UTC with the instant
/// (it was refused, so Python shifted the value itself and overflowed near
/// the calendar's ends); date32 and date64 alike.
static void test_zoned_date_times_on_date_columns(void** state) {
  (void)state;
  struct sluice_error err;
  struct ArrowSchema s;
  assert_int_equal(sl_schema_init(&s, NULL, "+s", "", 0, 2, &err), 0);
  assert_int_equal(sl_schema_init(s.children[0], NULL, "tdD", "d", 2, 0, &err), 0);
  assert_int_equal(sl_schema_init(s.children[1], NULL, "tdm", "dm", 2, 0, &err), 0);
  struct sl_row_filter* f = parse_ok(
      &s, "d>=2024-01-01T19:00:00-05:00,d>2024-01-01T23:00-05:00,d=2024-01-02T00:00Z,"
          "dm=2024-01-02T05:00+0500,d>9999-12-31T23:00-05:00,d<0001-01-01T01:00+05:00,"
          "dm<=2024-01-02T05:00:00.5+05:00");
  assert_int_equal(f->n_conditions, 7);
  const struct sl_filter_condition* c = f->conditions;
  assert_true(c[0].op == SL_FILTER_GE && c[0].values[0].i == 19724);  // 2024-01-02
  assert_true(c[1].op == SL_FILTER_GT && c[1].values[0].i == 19724);  // 04:00 UTC on 01-02
  assert_true(c[2].op == SL_FILTER_EQ && c[2].values[0].i == 19724);
  assert_true(c[3].op == SL_FILTER_EQ && c[3].values[0].i == 19724LL * 86400000);
  assert_true(c[4].op == SL_FILTER_GT && c[4].values[0].i == 2932897);  // 10000-01-01
  assert_true(c[5].op == SL_FILTER_LT && c[5].values[0].i == -719162);  // 0001-01-01
  assert_true(c[6].op == SL_FILTER_LE && c[6].values[0].i == 19724LL * 86400000 + 500);
  sl_row_filter_free(f);
  f = parse_ok(&s, "d=2024-01-02T05:00+05:30");  // not a midnight in UTC: no row
  assert_true(f->conditions[0].op != SL_FILTER_EQ || f->conditions[0].n_values == 0);
  sl_row_filter_free(f);
  expect_error(&s, "d=2024-01-02T05:00+5:00", EINVAL, "is not a YYYY-MM-DD date");
  s.release(&s);
}

/// A finite number past float64's range is refused, as pyarrow refuses it
/// (it parsed as an infinity: f = 1e400 found the inf rows); inf itself and
/// a number that underflows to zero are taken.
static void test_finite_numbers_past_float64_are_refused(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  expect_error(&s, "f=1e400", EINVAL, "'1e400' is not a number within float64's range");
  expect_error(&s, "f>-1e309", EINVAL, "float64's range");
  struct sl_row_filter* f = parse_ok(&s, "f<inf,f>-Infinity,f!=1e-400");
  assert_true(isinf(f->conditions[0].values[0].f) && f->conditions[2].values[0].f == 0);
  sl_row_filter_free(f);
  s.release(&s);
}

/// NaN on a decimal column as pyarrow compares it: no row for =, <, ...;
/// every non-null row for != (it was "not a number").
static void test_nan_on_a_decimal_column(void** state) {
  (void)state;
  struct sluice_error err;
  struct ArrowSchema s;
  assert_int_equal(sl_schema_init(&s, NULL, "+s", "", 0, 1, &err), 0);
  assert_int_equal(sl_schema_init(s.children[0], NULL, "d:5,2", "m", 2, 0, &err), 0);
  struct sl_row_filter* f = parse_ok(&s, "m=nan|2,m!=NaN,m<-nan");
  const struct sl_filter_condition* c = f->conditions;
  assert_true(c[0].op == SL_FILTER_EQ && c[0].n_values == 1);  // = 2 only
  sl_row_filter_free(f);
  s.release(&s);
}

static void test_allocation_failures(void** state) {
  (void)state;
  assert_true(test_alloc_sweep(parse_attempt, NULL, 200) > 3);
}

static int may_none(void* ctx, const struct sl_filter_condition* c) {
  (void)ctx;
  (void)c;
  return 0;
}

/// A value that a column's type inferred from a sample does not take is a
/// pending condition (its error kept for the scan's end), not an error: the
/// whole input may widen the column. A column not inferred refuses it.
static void test_values_an_inferred_type_refuses_are_pending(void** state) {
  (void)state;
  struct ArrowSchema s;
  make_schema(&s, NULL);
  uint8_t inferred[N_COLUMNS] = {1, 0, 0, 0, 0, 1};  // i64 and b
  struct sluice_error err;
  memset(&err, 0, sizeof err);
  struct sl_row_filter* f = NULL;
  assert_int_equal(sl_row_filter_parse_inferred("i64=true,s=x;i64=1|hello;b=maybe,i32=2", &s,
                                                inferred, NULL, &f, &err), 0);
  assert_int_equal(err.code, 0);
  assert_int_equal(f->n_conditions, 5);
  const struct sl_filter_condition* c = f->conditions;
  assert_true(c[0].pending && !c[1].pending && c[2].pending && c[3].pending && !c[4].pending);
  assert_int_equal(f->pending.code, EINVAL);  // the first one's
  assert_non_null(strstr(f->pending.message, "'true' is not an integer, as column 'i64' (int64) "
                         "needs (the column's type was inferred from the data read, which no "
                         "value widened; schema=i64:TYPE gives it)"));
  union sl_filter_value lo = {.i = 0}, hi = {.i = 10};
  assert_true(sl_filter_range_may_pass(&c[0], &lo, &hi));
  // Pruning never rules a group out by a pending condition: the splits
  // must be read for the value that widens the column.
  assert_int_equal(sl_row_filter_may_pass(f, may_none, NULL), 1);  // (the second group)
  sl_row_filter_free(f);
  f = NULL;
  assert_int_equal(sl_row_filter_parse_inferred("i64=true,s=x", &s, inferred, NULL, &f, &err), 0);
  assert_int_equal(sl_row_filter_may_pass(f, may_none, NULL), 0);  // (s=x rules it out)
  sl_row_filter_free(f);
  f = NULL;
  // Without inferred types (or on a column whose type is given): refused.
  expect_error(&s, "i64=true", EINVAL, "'true' is not an integer, as column 'i64' (int64) needs");
  assert_int_equal(sl_row_filter_parse_inferred("i32=true", &s, inferred, NULL, &f, &err), EINVAL);
  assert_null(f);
  assert_null(strstr(err.message, "inferred"));
  s.release(&s);
}

/// A schema of fixed_size_binary[3] "fb", uuid "u" (w:16, arrow.uuid) and
/// int64 "" (a column named '').
static int make_fixed_schema(struct ArrowSchema* s, const struct sluice_allocator* alloc,
                             struct sluice_error* err) {
  int rc = sl_schema_init(s, alloc, "+s", "", 0, 3, err);
  if (rc != 0) return rc;
  rc = sl_schema_init(s->children[0], alloc, "w:3", "fb", 2, 0, err);
  if (rc == 0) rc = sl_schema_init(s->children[1], alloc, "w:16", "u", 2, 0, err);
  if (rc == 0) rc = sl_schema_set_extension(s->children[1], "arrow.uuid", err);
  if (rc == 0) rc = sl_schema_init(s->children[2], alloc, "l", "", 2, 0, err);
  if (rc != 0) s->release(s);
  return rc;
}

/// fixed_size_binary compares bytewise (values of any length, as pyarrow
/// compares them); a uuid column takes a UUID's text as its 16 bytes, as
/// DuckDB does; a column named '' is the empty name before the operator.
static void test_fixed_size_binary_uuid_and_the_empty_name(void** state) {
  (void)state;
  struct ArrowSchema s;
  struct sluice_error err;
  assert_int_equal(make_fixed_schema(&s, NULL, &err), 0);
  struct sl_row_filter* f = parse_ok(
      &s, "fb<ab%00,fb=abcd|,u=0102030405060708090a0B0C0D0E0F10|{ffffffff-ffff-ffff-ffff-"
          "ffffffffffff},=8");
  assert_int_equal(f->n_conditions, 4);
  const struct sl_filter_condition* c = f->conditions;
  assert_true(c[0].kind == SL_FILTER_BYTES && c[0].values[0].bytes.len == 3);
  assert_memory_equal(c[0].values[0].bytes.s, "ab\0", 3);
  assert_true(c[1].n_values == 2 && c[1].values[0].bytes.len == 0 &&
              c[1].values[1].bytes.len == 4);
  assert_true(c[2].kind == SL_FILTER_BYTES && c[2].n_values == 2);
  const uint8_t first[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  assert_int_equal(c[2].values[0].bytes.len, 16);
  assert_memory_equal(c[2].values[0].bytes.s, first, 16);
  assert_int_equal(c[2].values[1].bytes.s[15], 0xff);
  assert_true(c[3].column == 2 && c[3].kind == SL_FILTER_INT && c[3].values[0].i == 8);
  sl_row_filter_free(f);
  expect_error(&s, "u=0102", EINVAL, "'0102' is not a UUID");
  expect_error(&s, "u=0102030405060708090a0b0c0d0e0f100", EINVAL, "is not a UUID");
  expect_error(&s, "u=-", EINVAL, "is not a UUID");
  expect_error(&s, "u=0102030405060708090a0b0c0d0e0f1g", EINVAL, "is not a UUID");
  expect_error(&s, "u=01020304-0506-0708-090a-0b0c0d0e0f10%00", EINVAL, "is not a UUID");
  expect_error(&s, "=x", EINVAL, "'x' is not an integer, as column '' (int64) needs");
  s.release(&s);
  // (a schema without a column named '')
  make_schema(&s, NULL);
  expect_error(&s, "=8", EINVAL, "no column ''");
  s.release(&s);
}

static int fixed_parse_attempt(void* ctx, const struct sluice_allocator* alloc,
                               struct sluice_error* error) {
  (void)ctx;
  struct ArrowSchema s;
  int rc = make_fixed_schema(&s, alloc, error);
  if (rc != 0) return rc;
  struct sl_row_filter* f = NULL;
  rc = sl_row_filter_parse("fb=a|bb,u=01020304-0506-0708-090a-0b0c0d0e0f10|"
                           "{ffffffffffffffffffffffffffffffff},=1", &s, alloc, &f, error);
  sl_row_filter_free(f);
  s.release(&s);
  return rc;
}

static void test_allocation_failures_on_fixed_size_binary(void** state) {
  (void)state;
  assert_true(test_alloc_sweep(fixed_parse_attempt, NULL, 200) > 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_literals_take_the_columns_types),
      cmocka_unit_test(test_bad_filters_say_why),
      cmocka_unit_test(test_unsupported_types),
      cmocka_unit_test(test_null_typed_column_passes_no_row),
      cmocka_unit_test(test_or_groups),
      cmocka_unit_test(test_range_test_is_sound_and_tight),
      cmocka_unit_test(test_numbers_on_integer_columns_compare_exactly),
      cmocka_unit_test(test_numbers_on_duration_columns_compare_exactly),
      cmocka_unit_test(test_times_finer_than_the_unit_are_bounded),
      cmocka_unit_test(test_values_any_number_sorted),
      cmocka_unit_test(test_zoned_date_times_on_date_columns),
      cmocka_unit_test(test_finite_numbers_past_float64_are_refused),
      cmocka_unit_test(test_nan_on_a_decimal_column),
      cmocka_unit_test(test_allocation_failures),
      cmocka_unit_test(test_values_an_inferred_type_refuses_are_pending),
      cmocka_unit_test(test_fixed_size_binary_uuid_and_the_empty_name),
      cmocka_unit_test(test_allocation_failures_on_fixed_size_binary),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
