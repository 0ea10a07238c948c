// src/codec/sl_gzip: gzip members written by libdeflate and zlib (the peers)
// inflate back to their input through any output piece size, across member
// boundaries; truncation, corruption and allocation failure are reported as
// such.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <libdeflate.h>
#include <zlib.h>

#include "codec/sl_gzip.h"
#include "core/sl_error.h"
#include "test_util.h"

#define N_TEXT 100000

/// Text that compresses but not to nothing: numbered lines.
static size_t make_text(uint8_t* out, size_t cap) {
  size_t n = 0;
  for (int i = 0; n + 32 < cap; ++i)
    n += (size_t)snprintf((char*)out + n, cap - n, "row %d,%d\n", i, i * 7919 % 1000);
  return n;
}

/// Two gzip members (libdeflate) of text[0, split) and text[split, n).
static size_t two_members(const uint8_t* text, size_t n, size_t split, uint8_t* out, size_t cap) {
  struct libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  assert_non_null(c);
  size_t a = libdeflate_gzip_compress(c, text, split, out, cap);
  size_t b = libdeflate_gzip_compress(c, text + split, n - split, out + a, cap - a);
  libdeflate_free_compressor(c);
  assert_true(a > 0 && b > 0);
  return a + b;
}

/// Inflates all of `z` with output offered `piece` bytes at a time.
static enum sl_gzip_status inflate_all(struct sl_gzip* g, const uint8_t* z, size_t zn, size_t piece,
                                       uint8_t* out, size_t cap, size_t* made) {
  size_t in_pos = 0;
  *made = 0;
  for (;;) {
    size_t room = cap - *made < piece ? cap - *made : piece, used, got;
    enum sl_gzip_status st =
        sl_gzip_inflate(g, z + in_pos, zn - in_pos, &used, out + *made, room, &got);
    in_pos += used;
    *made += got;
    if (st != SL_GZIP_OUT_FULL || *made == cap) return st;
  }
}

static void test_members_any_piece_size(void** state) {
  (void)state;
  static uint8_t text[N_TEXT], z[N_TEXT], back[N_TEXT + 1];
  size_t n = make_text(text, sizeof text);
  size_t zn = two_members(text, n, n / 3, z, sizeof z);
  const size_t pieces[] = {1, 7, 4096, sizeof back};
  struct sl_gzip g = {0};
  for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; ++i) {
    // One state for every round: started once, then reset.
    assert_int_equal(sl_gzip_start(&g, NULL, SL_GZIP_ONLY, NULL), 0);
    size_t made;
    assert_int_equal(inflate_all(&g, z, zn, pieces[i], back, sizeof back, &made), SL_GZIP_END);
    assert_int_equal(made, n);
    assert_memory_equal(back, text, n);
  }
  sl_gzip_end(&g);
}

static void test_zlib_header(void** state) {
  (void)state;
  static uint8_t text[N_TEXT], z[N_TEXT], back[N_TEXT];
  size_t n = make_text(text, sizeof text);
  uLongf zn = sizeof z;
  assert_int_equal(compress2(z, &zn, text, n, 6), Z_OK);
  struct sl_gzip g = {0};
  size_t made;
  assert_int_equal(sl_gzip_start(&g, NULL, SL_GZIP_OR_ZLIB, NULL), 0);
  assert_int_equal(inflate_all(&g, z, zn, sizeof back, back, sizeof back, &made), SL_GZIP_END);
  assert_int_equal(made, n);
  assert_memory_equal(back, text, n);
  sl_gzip_end(&g);
  // gzip only: a zlib stream is not one.
  assert_int_equal(sl_gzip_start(&g, NULL, SL_GZIP_ONLY, NULL), 0);
  assert_int_equal(inflate_all(&g, z, zn, sizeof back, back, sizeof back, &made), SL_GZIP_CORRUPT);
  assert_true(strlen(sl_gzip_message(&g)) > 0);
  sl_gzip_end(&g);
}

static void test_truncated_and_corrupt(void** state) {
  (void)state;
  static uint8_t text[N_TEXT], z[N_TEXT], back[N_TEXT];
  size_t n = make_text(text, sizeof text);
  size_t zn = two_members(text, n, n / 2, z, sizeof z);
  struct sl_gzip g = {0};
  size_t made;
  // Cut anywhere (inside the second member's header, data or trailer).
  const size_t cuts[] = {1, 10, zn / 2, zn - 9, zn - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; ++i) {
    assert_int_equal(sl_gzip_start(&g, NULL, SL_GZIP_ONLY, NULL), 0);
    assert_int_equal(inflate_all(&g, z, cuts[i], 4096, back, sizeof back, &made),
                     SL_GZIP_TRUNCATED);
  }
  // Trailing bytes that are no gzip member.
  static uint8_t padded[N_TEXT + 4];
  memcpy(padded, z, zn);
  memset(padded + zn, 0, 4);
  assert_int_equal(sl_gzip_start(&g, NULL, SL_GZIP_ONLY, NULL), 0);
  assert_int_equal(inflate_all(&g, padded, zn + 4, 4096, back, sizeof back, &made),
                   SL_GZIP_CORRUPT);
  // A flipped bit fails the CRC (or the data) rather than passing silently.
  z[zn / 4] ^= 0x10;
  assert_int_equal(sl_gzip_start(&g, NULL, SL_GZIP_ONLY, NULL), 0);
  assert_int_equal(inflate_all(&g, z, zn, 4096, back, sizeof back, &made), SL_GZIP_CORRUPT);
  sl_gzip_end(&g);
}

struct inflate_run {
  const uint8_t* z;
  size_t zn, n;
  uint8_t* back;
};

static int inflate_once(void* ctx, const struct sluice_allocator* alloc,
                        struct sluice_error* error) {
  struct inflate_run* r = ctx;
  struct sl_gzip g = {0};
  int rc = sl_gzip_start(&g, alloc, SL_GZIP_ONLY, NULL);
  if (rc != 0) return sl_error_set(error, rc, "start: %d", rc);
  size_t made;
  enum sl_gzip_status st = inflate_all(&g, r->z, r->zn, 4096, r->back, r->n, &made);
  sl_gzip_end(&g);
  if (st == SL_GZIP_NOMEM) return sl_error_set(error, ENOMEM, "inflate: out of memory");
  assert_int_equal(st, SL_GZIP_END);
  assert_int_equal(made, r->n);
  return 0;
}

static void test_allocation_failure(void** state) {
  (void)state;
  static uint8_t text[N_TEXT], z[N_TEXT], back[N_TEXT];
  size_t n = make_text(text, sizeof text);
  struct inflate_run run = {z, two_members(text, n, n / 2, z, sizeof z), n, back};
  // zlib allocates its state and, lazily, its window: both fail cleanly.
  assert_true(test_alloc_sweep(inflate_once, &run, 100) >= 2);
  assert_memory_equal(back, text, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_members_any_piece_size),
      cmocka_unit_test(test_zlib_header),
      cmocka_unit_test(test_truncated_and_corrupt),
      cmocka_unit_test(test_allocation_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
