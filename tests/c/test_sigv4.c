// The SigV4 signer against published AWS vectors.
//
// Sources:
// - The AWS Signature Version 4 Test Suite (aws-sig-v4-test-suite, as shipped
//   in awslabs/aws-c-auth tests/aws-signing-test-suite and in the AWS SDKs'
//   suite fixtures): credentials AKIDEXAMPLE /
//   wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, us-east-1, service "service",
//   20150830T123600Z; cases get-vanilla, post-vanilla,
//   get-vanilla-query-order-key-case, get-unreserved, post-header-value-case.
// - Amazon S3 API reference, "Authenticating Requests (AWS Signature Version
//   4)" examples: credentials AKIAIOSFODNN7EXAMPLE /
//   wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, us-east-1, 20130524T000000Z;
//   "GET Object" (Range: bytes=0-9) and "GET Bucket (List Objects)".
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "io/sl_sigv4.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SUITE_KEY "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_SCOPE "Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"
#define S3_KEY "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

static void check(const char* method, const char* path, const char* query,
                  const struct sl_sigv4_header* headers, size_t n, const char* payload_hash,
                  const char* date, const char* service, const char* key, const char* secret,
                  const char* expected) {
  struct sl_sigv4_request r = {method, path,      query,   headers, n,   payload_hash,
                               date,   "us-east-1", service, key,     secret};
  char out[1024];
  assert_int_equal(sl_sigv4_authorization(&r, out, sizeof out), 0);
  assert_string_equal(out, expected);
}

static void suite_case(const char* method, const char* path, const char* query,
                       const struct sl_sigv4_header* extra, size_t n_extra, const char* signed_,
                       const char* signature) {
  struct sl_sigv4_header headers[8] = {{"Host", "example.amazonaws.com"},
                                       {"X-Amz-Date", "20150830T123600Z"}};
  for (size_t i = 0; i < n_extra; ++i) headers[2 + i] = extra[i];
  char expected[512];
  snprintf(expected, sizeof expected, "AWS4-HMAC-SHA256 " SUITE_SCOPE ", SignedHeaders=%s, Signature=%s",
           signed_, signature);
  check(method, path, query, headers, 2 + n_extra, EMPTY_SHA256, "20150830T123600Z", "service",
        SUITE_KEY, SUITE_SECRET, expected);
}

static void test_get_vanilla(void** state) {
  (void)state;
  suite_case("GET", "/", "", NULL, 0, "host;x-amz-date",
             "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

static void test_post_vanilla(void** state) {
  (void)state;
  suite_case("POST", "/", NULL, NULL, 0, "host;x-amz-date",
             "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

static void test_get_vanilla_query_order_key_case(void** state) {
  (void)state;
  suite_case("GET", "/", "Param2=value2&Param1=value1", NULL, 0, "host;x-amz-date",
             "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

static void test_get_unreserved(void** state) {
  (void)state;
  char path[128];
  assert_true(sl_sigv4_uri_encode(
                  "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 0, path,
                  sizeof path) != (size_t)-1);
  suite_case("GET", path, "", NULL, 0, "host;x-amz-date",
             "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f");
}

static void test_post_header_value_case(void** state) {
  (void)state;
  struct sl_sigv4_header extra[] = {{"My-Header1", "VALUE1"}};
  suite_case("POST", "/", "", extra, 1, "host;my-header1;x-amz-date",
             "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d");
}

static void test_s3_get_object(void** state) {
  (void)state;
  struct sl_sigv4_header headers[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                                      {"Range", "bytes=0-9"},
                                      {"x-amz-content-sha256", EMPTY_SHA256},
                                      {"x-amz-date", "20130524T000000Z"}};
  check("GET", "/test.txt", "", headers, 4, EMPTY_SHA256, "20130524T000000Z", "s3", S3_KEY,
        S3_SECRET,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_s3_list_objects(void** state) {
  (void)state;
  struct sl_sigv4_header headers[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                                      {"x-amz-content-sha256", EMPTY_SHA256},
                                      {"x-amz-date", "20130524T000000Z"}};
  check("GET", "/", "prefix=J&max-keys=2", headers, 3, EMPTY_SHA256, "20130524T000000Z", "s3",
        S3_KEY, S3_SECRET,
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

static void test_helpers(void** state) {
  (void)state;
  char out[64];
  assert_int_equal(sl_sigv4_uri_encode("a b/ü$", 0, out, sizeof out), strlen("a%20b/%C3%BC%24"));
  assert_string_equal(out, "a%20b/%C3%BC%24");
  assert_true(sl_sigv4_uri_encode("a/b", 1, out, sizeof out) != (size_t)-1);
  assert_string_equal(out, "a%2Fb");
  assert_int_equal(sl_sigv4_uri_encode("abcdef", 0, out, 4), (size_t)-1);
  char date[17];
  sl_sigv4_amz_date(1440938160LL, date);
  assert_string_equal(date, "20150830T123600Z");
  char hex[65];
  assert_int_equal(sl_sigv4_sha256_hex("", 0, hex), 0);
  assert_string_equal(hex, EMPTY_SHA256);
  unsigned char md5[16];  // RFC 1321's "abc"
  static const unsigned char abc_md5[16] = {0x90, 0x01, 0x50, 0x98, 0x3c, 0xd2, 0x4f, 0xb0,
                                            0xd6, 0x96, 0x3f, 0x7d, 0x28, 0xe1, 0x7f, 0x72};
  assert_int_equal(sl_md5("abc", 3, md5), 0);
  assert_memory_equal(md5, abc_md5, 16);
  // A tiny output buffer is an error, not a truncated header.
  struct sl_sigv4_header h[] = {{"host", "x"}, {"x-amz-date", "20150830T123600Z"}};
  struct sl_sigv4_request r = {"GET", "/", "", h, 2, EMPTY_SHA256, "20150830T123600Z",
                               "us-east-1", "s3", "K", "S"};
  assert_int_not_equal(sl_sigv4_authorization(&r, out, 16), 0);
  r.amz_date = "2015";
  assert_int_equal(sl_sigv4_authorization(&r, out, sizeof out), EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_vanilla),
      cmocka_unit_test(test_post_vanilla),
      cmocka_unit_test(test_get_vanilla_query_order_key_case),
      cmocka_unit_test(test_get_unreserved),
      cmocka_unit_test(test_post_header_value_case),
      cmocka_unit_test(test_s3_get_object),
      cmocka_unit_test(test_s3_list_objects),
      cmocka_unit_test(test_helpers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
