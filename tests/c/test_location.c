// Multi-object locations: sl_glob_match, and sl_location_expand over a
// directory tree the test builds (hidden and _-prefixed entries, symbolic
// links, `**`, trailing slashes, errors, allocation failures).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sl_alloc.h"
#include "io/sl_location.h"
#include "io/sl_source.h"
#include "test_util.h"

/* ---- sl_glob_match ---------------------------------------------------------- */

struct glob_case {
  const char* pattern;
  const char* name;
  int match;
};

// Written by hand. Cross-checked once (2026-11-30) with Python 3.11: for each
// row a temporary directory holding `name` as a file, and
// glob.glob(pattern, root_dir=tmp, recursive=True) listing it or not. Python
// agrees on every row except those marked "python differs": its fnmatch has no
// backslash escapes and takes '^' literally, its glob skips dot files for '*',
// and it matches characters where sluice (like fnmatch(3) in the C locale)
// matches bytes. Rows without a `**` segment are also checked below against
// glibc's fnmatch(3) with FNM_PATHNAME, a peer that agrees on all of them.
static const struct glob_case glob_cases[] = {
    {"*.csv", "a.csv", 1},
    {"*.csv", "a.csv.gz", 0},
    {"*.csv", ".csv", 1},  // python differs (dot file)
    {"*.csv", "dir/a.csv", 0},
    {"*.CSV", "a.csv", 0},
    {"a*", "a", 1},
    {"*", "abc", 1},
    {"*/*", "a/b", 1},
    {"*/*", "a", 0},
    {"a?c", "abc", 1},
    {"a?c", "ac", 0},
    {"a?c", "abbc", 0},
    {"a?c", "a/c", 0},
    {"??", "\xc3\xa9", 1},  // python differs (one character, two bytes)
    {"[abc].txt", "b.txt", 1},
    {"[abc].txt", "d.txt", 0},
    {"[a-c]x", "bx", 1},
    {"[a-c]x", "dx", 0},
    {"[!a-c]x", "dx", 1},
    {"[!a-c]x", "bx", 0},
    {"[^a-c]x", "dx", 1},  // python differs ('^' literal)
    {"[^a-c]x", "bx", 0},  // python differs
    {"[]]", "]", 1},
    {"[]a]", "a", 1},
    {"[!]]", "a", 1},
    {"[!]]", "]", 0},
    {"[a-]", "-", 1},
    {"[a-]", "b", 0},
    {"[0-9][0-9]", "42", 1},
    {"[0-9][0-9]", "4x", 0},
    {"[", "[", 1},
    {"a[b", "a[b", 1},
    {"a[b", "ab", 0},
    {"\\*", "*", 1},  // python differs (no escapes)
    {"\\*", "a", 0},
    {"\\?x", "?x", 1},  // python differs
    {"\\?x", "ax", 0},
    {"a\\[b]", "a[b]", 1},  // python differs
    {"a\\[b]", "ab", 0},
    {"[\\]]", "]", 1},  // python differs
    {"\\a\\b", "ab", 1},  // python differs
    {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0},
    {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", 1},
    {"**", "a", 1},
    {"**", "a/b/c", 1},
    {"**/*.csv", "x.csv", 1},
    {"**/*.csv", "a/b/x.csv", 1},
    {"**/*.csv", "a/b/x.txt", 0},
    {"a/**/b", "a/b", 1},
    {"a/**/b", "a/x/y/b", 1},
    {"a/**/b", "a/x/y/c", 0},
    {"a/**/b", "b", 0},
    {"a/**", "a/x/y", 1},
    {"a/**", "b/x", 0},
    {"**/b/**/c.csv", "x/b/y/z/c.csv", 1},
    {"**/b/**/c.csv", "b/c.csv", 1},
    {"**/b/**/c.csv", "x/y/c.csv", 0},
    {"**/**/x", "x", 1},
    {"**/a/*/b", "a/a/q/b", 1},
    {"**/a/*/b", "a/a/q/c/b", 0},
    {"a**b", "axxb", 1},
    {"a**b", "ax/xb", 0},
    {"a/*/c", "a/b/c", 1},
    {"a/*/c", "a/b/d/c", 0},
    {"a/*/c", "a/c", 0},
    {"year=*/month=0[1-6]/*.parquet", "year=2024/month=03/part-0.parquet", 1},
    {"year=*/month=0[1-6]/*.parquet", "year=2024/month=07/part-0.parquet", 0},
};

/// 1 when one of the pattern's '/'-segments is exactly `**`.
static int has_globstar_segment(const char* pattern) {
  for (const char* p = pattern; (p = strstr(p, "**")) != NULL; p += 2) {
    if ((p == pattern || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return 1;
  }
  return 0;
}

static void test_glob_match(void** unused) {
  (void)unused;
  for (size_t i = 0; i < sizeof glob_cases / sizeof glob_cases[0]; ++i) {
    const struct glob_case* c = &glob_cases[i];
    int got = sl_glob_match(c->pattern, c->name);
    if (got != c->match) {
      fail_msg("sl_glob_match(\"%s\", \"%s\") = %d, expected %d", c->pattern, c->name, got,
               c->match);
    }
    if (!has_globstar_segment(c->pattern)) {
      int peer = fnmatch(c->pattern, c->name, FNM_PATHNAME) == 0;
      if (peer != c->match) {
        fail_msg("fnmatch(\"%s\", \"%s\") = %d, the table says %d", c->pattern, c->name, peer,
                 c->match);
      }
    }
  }
}

/// Patterns that a naive backtracking matcher takes exponential time on; the
/// matcher must give the answer (this is no timing assertion: a blow-up shows
/// as the CTest timeout).
static void test_glob_no_blowup(void** unused) {
  (void)unused;
  char name[4097];
  memset(name, 'a', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  assert_false(sl_glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*b", name));
  char path[8192];
  size_t n = 0;
  for (int i = 0; i < 1000; ++i) n += (size_t)snprintf(path + n, sizeof path - n, "a/");
  snprintf(path + n, sizeof path - n, "c");
  assert_false(sl_glob_match("**/a/**/a/**/a/**/a/**/b", path));
  assert_true(sl_glob_match("**/a/**/a/**/a/**/a/**/c", path));
}

/* ---- Expansion over a directory tree ---------------------------------------- */

static char base_dir[512];

static void make_dir(const char* relative) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", base_dir, relative);
  assert_int_equal(mkdir(path, 0755), 0);
}

static void make_file(const char* relative) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", base_dir, relative);
  assert_int_equal(test_write_file(path, "x\n", 2), 0);
}

static void make_link(const char* target, const char* relative) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", base_dir, relative);
  assert_int_equal(symlink(target, path), 0);
}

static int tree_setup(void** state) {
  (void)state;
  test_temp_path("location", base_dir, sizeof base_dir);
  if (mkdir(base_dir, 0755) != 0) return -1;
  return 0;
}

static int tree_teardown(void** state) {
  (void)state;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/// Expands base_dir/<relative> (prefixed by `scheme`) and checks the names,
/// given relative to base_dir, in order.
static void expect_names(const char* scheme, const char* relative, const char* const* expected,
                         size_t n_expected) {
  char location[1024];
  snprintf(location, sizeof location, "%s%s/%s", scheme, base_dir, relative);
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sl_location_list list;
  struct sluice_error error;
  int rc = sl_location_expand(location, NULL, &ta.base, &list, &error);
  if (rc != 0) fail_msg("%s: %s", location, error.message);
  if (list.n != n_expected) {
    for (size_t i = 0; i < list.n; ++i) print_message("  got %s\n", list.names[i]);
    fail_msg("%s: %zu names, expected %zu", location, list.n, n_expected);
  }
  for (size_t i = 0; i < n_expected; ++i) {
    char want[1024];
    snprintf(want, sizeof want, "%s/%s", base_dir, expected[i]);
    if (strcmp(list.names[i], want) != 0) {
      fail_msg("%s: name %zu is %s, expected %s", location, i, list.names[i], want);
    }
  }
  sl_location_list_free(&list, &ta.base);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

#define EXPECT(scheme, relative, ...)                                            \
  do {                                                                           \
    static const char* const want_[] = {__VA_ARGS__};                            \
    expect_names(scheme, relative, want_, sizeof want_ / sizeof want_[0]);       \
  } while (0)

/// Expansion must fail with `code` and a message holding `needle`.
static void expect_error(const char* relative, int code, const char* needle) {
  char location[1024];
  snprintf(location, sizeof location, "%s/%s", base_dir, relative);
  struct test_allocator ta;
  test_allocator_init(&ta);
  struct sl_location_list list;
  struct sluice_error error;
  int rc = sl_location_expand(location, NULL, &ta.base, &list, &error);
  if (rc != code) fail_msg("%s: rc %d (%s), expected %d", location, rc, error.message, code);
  if (strstr(error.message, needle) == NULL) {
    fail_msg("%s: message '%s' lacks '%s'", location, error.message, needle);
  }
  sl_location_list_free(&list, &ta.base);
  assert_int_equal(atomic_load(&ta.live_bytes), 0);
}

static void build_tree(void) {
  make_dir("t");
  make_file("t/a.csv");
  make_file("t/b.csv");
  make_file("t/c.txt");
  make_file("t/.hidden.csv");
  make_file("t/_SUCCESS");
  make_file("t/_tmp.csv");
  make_link("a.csv", "t/filelink.csv");
  make_link("nowhere.csv", "t/dangling.csv");
  make_dir("t/sub");
  make_file("t/sub/d.csv");
  make_file("t/sub/e.txt");
  make_link("..", "t/sub/loop");  // back to t: a cycle
  make_dir("t/sub/.x");
  make_file("t/sub/.x/f.csv");
  make_dir("t/sub/_temporary");
  make_file("t/sub/_temporary/g.csv");
  make_dir("t/sub/deep");
  make_file("t/sub/deep/h.csv");
  make_dir("t/_data");
  make_file("t/_data/i.csv");
  make_dir("t/.dot");
  make_file("t/.dot/j.csv");
  make_dir("t/empty");
  make_file("t/empty/.keep");
  make_file("t/empty/_SUCCESS");
  make_dir("t/empty/_sub");
  make_file("t/empty/_sub/x.csv");
  char fifo[1024];
  snprintf(fifo, sizeof fifo, "%s/t/sub/pipe.csv", base_dir);
  assert_int_equal(mkfifo(fifo, 0644), 0);
}

static void test_expand_tree(void** unused) {
  (void)unused;
  build_tree();
  // A directory: every regular file under it, hidden, _-prefixed, dangling
  // links, FIFOs and the cycle left out; the link to a file kept.
  EXPECT("", "t", "t/a.csv", "t/b.csv", "t/c.txt", "t/filelink.csv", "t/sub/d.csv",
         "t/sub/deep/h.csv", "t/sub/e.txt");
  EXPECT("", "t/", "t/a.csv", "t/b.csv", "t/c.txt", "t/filelink.csv", "t/sub/d.csv",
         "t/sub/deep/h.csv", "t/sub/e.txt");
  EXPECT("", "t//", "t/a.csv", "t/b.csv", "t/c.txt", "t/filelink.csv", "t/sub/d.csv",
         "t/sub/deep/h.csv", "t/sub/e.txt");
  EXPECT("file://", "t", "t/a.csv", "t/b.csv", "t/c.txt", "t/filelink.csv", "t/sub/d.csv",
         "t/sub/deep/h.csv", "t/sub/e.txt");
  // From t/sub, the link back to t is no cycle: t is listed through it, up to
  // t/sub/loop/sub, which is t/sub again.
  EXPECT("", "t/sub", "t/sub/d.csv", "t/sub/deep/h.csv", "t/sub/e.txt", "t/sub/loop/a.csv",
         "t/sub/loop/b.csv", "t/sub/loop/c.txt", "t/sub/loop/filelink.csv");
  // Globs.
  EXPECT("", "t/*.csv", "t/a.csv", "t/b.csv", "t/filelink.csv");
  EXPECT("file://", "t/*.csv", "t/a.csv", "t/b.csv", "t/filelink.csv");
  EXPECT("", "t/[ab].csv", "t/a.csv", "t/b.csv");
  EXPECT("", "t/?.*", "t/a.csv", "t/b.csv", "t/c.txt");
  EXPECT("", "t/**/*.csv", "t/a.csv", "t/b.csv", "t/filelink.csv", "t/sub/d.csv",
         "t/sub/deep/h.csv");
  EXPECT("", "t/**", "t/a.csv", "t/b.csv", "t/c.txt", "t/filelink.csv", "t/sub/d.csv",
         "t/sub/deep/h.csv", "t/sub/e.txt");
  EXPECT("", "t/*/*.csv", "t/sub/d.csv");
  EXPECT("", "t/*//*.csv", "t/sub/d.csv");
  EXPECT("", "t/s*/", "t/sub/d.csv", "t/sub/deep/h.csv", "t/sub/e.txt");
  EXPECT("", "t/sub/**/h.csv", "t/sub/deep/h.csv");
  // Components the user wrote are taken as written, even with '_' or '.'.
  EXPECT("", "t/_data/*.csv", "t/_data/i.csv");
  EXPECT("", "t/.dot/*.csv", "t/.dot/j.csv");
  EXPECT("", "t/./sub/*.csv", "t/./sub/d.csv");
  // Nothing matches.
  expect_error("t/*.parquet", ENOENT, "no files match '");
  expect_error("t/*.parquet", ENOENT, "t/*.parquet'");
  expect_error("t/nodir/*.csv", ENOENT, "no files match '");
  expect_error("t/a.csv/*.csv", ENOENT, "no files match '");
  expect_error("t/empty", ENOENT, "no files match '");
  expect_error("t/empty/", ENOENT, "t/empty/'");
}

static void test_single_objects(void** unused) {
  (void)unused;
  char location[1024];
  struct sl_location_list list;
  struct sluice_error error;
  const char* singles[] = {"t/a.csv", "t/missing.csv", "t/a\\b.csv"};
  for (size_t i = 0; i < sizeof singles / sizeof singles[0]; ++i) {
    snprintf(location, sizeof location, "%s/%s", base_dir, singles[i]);
    assert_int_equal(sl_location_is_many(location), 0);
    assert_int_equal(sl_location_is_escaped(location), 0);
    assert_int_equal(sl_location_expand(location, NULL, NULL, &list, &error), 0);
    assert_int_equal(list.n, 1);
    assert_string_equal(list.names[0], location);
    sl_location_list_free(&list, NULL);
  }
  // Glob characters all escaped: one object, named without the escapes.
  const char* escaped[][2] = {{"t/a\\*.csv", "t/a*.csv"}, {"t/r\\[1\\].csv", "t/r[1].csv"},
                              {"t/r\\[1].csv", "t/r[1].csv"}, {"t/q\\?\\\\.csv", "t/q?\\.csv"}};
  for (size_t i = 0; i < sizeof escaped / sizeof escaped[0]; ++i) {
    char want[1024];
    snprintf(location, sizeof location, "%s/%s", base_dir, escaped[i][0]);
    snprintf(want, sizeof want, "%s/%s", base_dir, escaped[i][1]);
    assert_int_equal(sl_location_is_many(location), 0);
    assert_int_equal(sl_location_is_escaped(location), 1);
    assert_int_equal(sl_location_expand(location, NULL, NULL, &list, &error), 0);
    assert_int_equal(list.n, 1);
    assert_string_equal(list.names[0], want);
    sl_location_list_free(&list, NULL);
  }
  assert_int_equal(sl_location_is_escaped("s3://b/run\\[1\\].csv"), 1);
  assert_int_equal(sl_location_is_escaped("s3://b/run\\[1\\]/"), 0);
  assert_int_equal(sl_location_is_escaped("s3://b/a\\b.csv"), 0);
  assert_int_equal(sl_location_is_escaped("https://h/run\\[1\\].csv"), 0);
  snprintf(location, sizeof location, "file://%s/t/a.csv", base_dir);
  assert_int_equal(sl_location_expand(location, NULL, NULL, &list, &error), 0);
  assert_int_equal(list.n, 1);
  assert_string_equal(list.names[0], location);
  sl_location_list_free(&list, NULL);

  const char* remote_singles[] = {"https://example.invalid/data/*.csv",
                                  "http://example.invalid/dir/", "s3://bucket/key.parquet", "-"};
  for (size_t i = 0; i < sizeof remote_singles / sizeof remote_singles[0]; ++i) {
    assert_int_equal(sl_location_is_many(remote_singles[i]), 0);
    assert_int_equal(sl_location_expand(remote_singles[i], NULL, NULL, &list, &error), 0);
    assert_int_equal(list.n, 1);
    assert_string_equal(list.names[0], remote_singles[i]);
    sl_location_list_free(&list, NULL);
  }
  assert_int_equal(sl_location_is_many("s3://bucket/prefix/"), 1);
  assert_int_equal(sl_location_is_many("s3://bucket/prefix/*.parquet"), 1);
  assert_int_equal(sl_location_is_many("s3://bucket/p/part-[0-3].parquet"), 1);
  snprintf(location, sizeof location, "%s/t", base_dir);
  assert_int_equal(sl_location_is_many(location), 1);
  snprintf(location, sizeof location, "%s/t/*.csv", base_dir);
  assert_int_equal(sl_location_is_many(location), 1);
  snprintf(location, sizeof location, "file://%s/t", base_dir);
  assert_int_equal(sl_location_is_many(location), 1);
  assert_int_equal(sl_location_expand("", NULL, NULL, &list, &error), EINVAL);
  sl_location_list_free(&list, NULL);
}

/// Escaped glob characters in the directory part, bytewise order, and names
/// relative to the current directory.
static void test_relative_and_escaped(void** unused) {
  (void)unused;
  make_dir("r");
  make_dir("r/we[ird]");
  make_file("r/we[ird]/k.csv");
  make_file("r/-");
  make_file("r/x.csv");
  make_file("r/B.csv");
  make_file("r/a-b.csv");
  make_file("r/a.csv");
  make_dir("r/a");
  make_file("r/a/x.csv");
  EXPECT("", "r/we\\[ird\\]/*.csv", "r/we[ird]/k.csv");
  EXPECT("", "r/**/*.csv", "r/B.csv", "r/a-b.csv", "r/a.csv", "r/a/x.csv",
         "r/we[ird]/k.csv", "r/x.csv");

  char cwd[1024];
  assert_non_null(getcwd(cwd, sizeof cwd));
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/r", base_dir);
  assert_int_equal(chdir(dir), 0);
  struct sl_location_list list;
  struct sluice_error error;
  int rc = sl_location_expand("*", NULL, NULL, &list, &error);
  int rc_dot = 0;
  struct sl_location_list dot;
  if (rc == 0) rc_dot = sl_location_expand(".", NULL, NULL, &dot, &error);
  assert_int_equal(chdir(cwd), 0);
  assert_int_equal(rc, 0);
  // A file named "-" must not turn into standard input.
  assert_int_equal(list.n, 5);
  assert_string_equal(list.names[0], "./-");
  assert_string_equal(list.names[1], "B.csv");
  assert_string_equal(list.names[4], "x.csv");
  sl_location_list_free(&list, NULL);
  assert_int_equal(rc_dot, 0);
  assert_int_equal(dot.n, 7);
  assert_string_equal(dot.names[0], "./-");
  assert_string_equal(dot.names[4], "./a/x.csv");
  sl_location_list_free(&dot, NULL);
}

/// A directory that cannot be listed is an error naming it. As root, mode
/// 000 does not stop opendir, so a path longer than PATH_MAX does it.
/// file:// URLs: localhost and %XX escapes (RFC 8089), relative as before,
/// bad escapes and %00 refused; and a file opened and written through one.
static void test_file_urls(void** unused) {
  (void)unused;
  char out[64];
  struct sluice_error error;
  static const struct {
    const char* url;
    const char* path;
  } k_ok[] = {{"file:///tmp/x.csv", "/tmp/x.csv"},
              {"file://localhost/tmp/a%20b%2Bc.csv", "/tmp/a b+c.csv"},
              {"file://data/x%2fy.csv", "data/x/y.csv"},
              {"file:///%C3%A9t%c3%a9", "/\xC3\xA9t\xC3\xA9"}};
  for (size_t i = 0; i < sizeof k_ok / sizeof k_ok[0]; ++i) {
    assert_int_equal(sl_file_url_path(k_ok[i].url, out, sizeof out, &error), 0);
    assert_string_equal(out, k_ok[i].path);
  }
  assert_int_equal(sl_file_url_path("file:///a%2", out, sizeof out, &error), EINVAL);
  assert_non_null(strstr(error.message, "bad %-escape"));
  assert_int_equal(sl_file_url_path("file:///a%zz", out, sizeof out, &error), EINVAL);
  assert_int_equal(sl_file_url_path("file:///a%00b", out, sizeof out, &error), EINVAL);
  assert_int_equal(sl_file_url_path("file://", out, sizeof out, &error), EINVAL);
  assert_int_equal(sl_file_url_path("file:///0123456789012345678901234567890123456789"
                                    "012345678901234567890123456789", out, sizeof out, &error),
                   ENAMETOOLONG);
  // Opened through the source: the file with a space in its name.
  char dir[512], path[700], url[900];
  test_temp_path("url dir", dir, sizeof dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/a b.txt", dir);
  assert_int_equal(test_write_file(path, "hello", 5), 0);
  size_t k = 0;
  k += (size_t)snprintf(url + k, sizeof url - k, "file://localhost");
  for (const char* c = path; *c != '\0'; ++c) {
    k += (size_t)snprintf(url + k, sizeof url - k, *c == ' ' ? "%%20" : "%c", *c);
  }
  struct sl_source* src = NULL;
  assert_int_equal(sl_source_open(url, sluice_default_allocator(), &src, &error), 0);
  assert_int_equal(src->size, 5);
  struct sl_view v;
  assert_int_equal(sl_source_read_at(src, 0, 5, &v, &error), 0);
  assert_memory_equal(v.data, "hello", 5);
  sl_view_release(&v);
  sl_source_close(src);
  unlink(path);
  rmdir(dir);
}

static void test_unreadable_directory(void** unused) {
  (void)unused;
  make_dir("u");
  make_file("u/a.csv");
  char path[8192];
  int n = snprintf(path, sizeof path, "%s/u", base_dir);
  char segment[201];
  memset(segment, 'd', 200);
  segment[200] = '\0';
  char cwd[1024];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(path), 0);
  while (n < 4200) {
    assert_int_equal(mkdir(segment, 0755), 0);
    assert_int_equal(chdir(segment), 0);
    n += 201;
  }
  assert_int_equal(test_write_file("deep.csv", "x\n", 2), 0);
  assert_int_equal(chdir(cwd), 0);
  expect_error("u", ENAMETOOLONG, "/u/dddd");
  expect_error("u/**/*.csv", ENAMETOOLONG, "dddd");

  if (geteuid() != 0) {
    make_dir("v");
    make_dir("v/locked");
    make_file("v/a.csv");
    char locked[1024];
    snprintf(locked, sizeof locked, "%s/v/locked", base_dir);
    assert_int_equal(chmod(locked, 0), 0);
    expect_error("v", EACCES, "v/locked': ");
    assert_int_equal(chmod(locked, 0755), 0);
  }
}

/// Every allocation failing in turn: ENOMEM and nothing leaked. Enough files
/// to grow the list and long enough names to grow the path buffer.
static void test_allocation_failures(void** unused) {
  (void)unused;
  make_dir("m");
  char name[64];
  for (int i = 0; i < 40; ++i) {
    snprintf(name, sizeof name, "m/f%02d.csv", i);
    make_file(name);
  }
  char long_dir[400];
  snprintf(long_dir, sizeof long_dir, "m/%0250d", 0);
  make_dir(long_dir);
  char long_file[500];
  snprintf(long_file, sizeof long_file, "%s/z.csv", long_dir);
  make_file(long_file);

  const char* relatives[] = {"m", "m/**/*.csv", "m/*.csv", "m/a.csv"};
  for (size_t k = 0; k < sizeof relatives / sizeof relatives[0]; ++k) {
    char location[1024];
    snprintf(location, sizeof location, "%s/%s", base_dir, relatives[k]);
    int succeeded = 0;
    for (long long fail_at = 1; fail_at < 1000 && !succeeded; ++fail_at) {
      struct test_allocator ta;
      test_allocator_init(&ta);
      atomic_store(&ta.fail_at, fail_at);
      struct sl_location_list list;
      struct sluice_error error;
      int rc = sl_location_expand(location, NULL, &ta.base, &list, &error);
      if (rc == 0) {
        succeeded = 1;
        assert_true(list.n == 41 || list.n == 40 || list.n == 1);
      } else {
        if (rc != ENOMEM) {
          fail_msg("%s, fail_at %lld: rc %d (%s)", location, fail_at, rc, error.message);
        }
        assert_non_null(strstr(error.message, "out of memory"));
      }
      sl_location_list_free(&list, &ta.base);
      assert_int_equal(atomic_load(&ta.live_bytes), 0);
    }
    assert_true(succeeded);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_glob_match),
      cmocka_unit_test(test_glob_no_blowup),
      cmocka_unit_test(test_expand_tree),
      cmocka_unit_test(test_single_objects),
      cmocka_unit_test(test_relative_and_escaped),
      cmocka_unit_test(test_file_urls),
      cmocka_unit_test(test_unreadable_directory),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
