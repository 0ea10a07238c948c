// The tag finder and character-data decoder used on S3's XML answers
// (ListObjectsV2 pages, error bodies, UploadId): the five predefined
// entities and numeric character references (XML 1.0 section 4.1 and 4.6),
// and what must be refused.
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "io/sl_s3_xml.h"

static void decode_ok(const char* in, const char* expected) {
  char out[256];
  size_t n = 0;
  assert_true(strlen(in) < sizeof out);
  assert_int_equal(sl_s3_xml_decode(in, strlen(in), out, &n), 0);
  assert_int_equal(n, strlen(expected));
  assert_memory_equal(out, expected, n);
  assert_int_equal(out[n], '\0');
}

static void decode_bad(const char* in) {
  char out[256];
  size_t n = 0;
  assert_int_equal(sl_s3_xml_decode(in, strlen(in), out, &n), EILSEQ);
}

static void test_decode_entities(void** state) {
  (void)state;
  decode_ok("plain/key.parquet", "plain/key.parquet");
  decode_ok("a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;", "a&b <c> \"d\" 'e'");
  decode_ok("a%20b+c", "a%20b+c");  // no URL decoding: S3 keys are not encoded
  decode_ok("&#65;&#x42;&#x4a;", "ABJ");
  decode_ok("&#252;&#xFC;", "\xc3\xbc\xc3\xbc");           // U+00FC two ways
  decode_ok("&#x20AC;", "\xe2\x82\xac");                    // U+20AC, 3 bytes
  decode_ok("&#x1F600;", "\xf0\x9f\x98\x80");               // U+1F600, 4 bytes
  decode_ok("&#x10FFFF;", "\xf4\x8f\xbf\xbf");              // the last code point
  decode_ok("\xc3\xbc raw utf-8", "\xc3\xbc raw utf-8");
  decode_ok("", "");
}

static void test_decode_refusals(void** state) {
  (void)state;
  decode_bad("&nbsp;");     // not predefined in XML
  decode_bad("a & b");      // a bare ampersand
  decode_bad("&amp");       // unterminated
  decode_bad("&#;");
  decode_bad("&#x;");
  decode_bad("&#0;");       // NUL is not a character
  decode_bad("&#xD800;");   // a surrogate
  decode_bad("&#x110000;"); // past U+10FFFF
  decode_bad("&#12a;");
  decode_bad("&#X43;");     // XML spells hex references with a lowercase x
  decode_bad("&#99999999999999;");
  decode_bad("a<b");
}

static void test_find(void** state) {
  (void)state;
  const char* xml =
      "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<KeyCount>2</KeyCount><Contents><Key>a</Key></Contents><Contents><Key/></Contents>"
      "<IsTruncated>false</IsTruncated></ListBucketResult>";
  struct s3_xml_element root, e;
  assert_true(sl_s3_xml_find(xml, strlen(xml), "ListBucketResult", &root));
  assert_true(sl_s3_xml_find(root.inner, root.inner_len, "Key", &e));  // not <KeyCount>
  assert_int_equal(e.inner_len, 1);
  assert_memory_equal(e.inner, "a", 1);
  assert_true(sl_s3_xml_find(root.inner, root.inner_len, "Contents", &e));
  assert_true(sl_s3_xml_find(e.end, (size_t)(root.inner + root.inner_len - e.end), "Contents", &e));
  struct s3_xml_element key;
  assert_true(sl_s3_xml_find(e.inner, e.inner_len, "Key", &key));
  assert_int_equal(key.inner_len, 0);  // <Key/>
  assert_true(sl_s3_xml_find(root.inner, root.inner_len, "IsTruncated", &e));
  assert_int_equal(e.inner_len, 5);
  assert_false(sl_s3_xml_find(root.inner, root.inner_len, "NextContinuationToken", &e));
  // Unterminated elements and lengths that cut a tag are "absent".
  assert_false(sl_s3_xml_find("<Key>abc", 8, "Key", &e));
  assert_false(sl_s3_xml_find("<Key>abc</Key>", 10, "Key", &e));
  assert_false(sl_s3_xml_find("<Ke", 3, "Key", &e));
  assert_false(sl_s3_xml_find("", 0, "Key", &e));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_entities),
      cmocka_unit_test(test_decode_refusals),
      cmocka_unit_test(test_find),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
