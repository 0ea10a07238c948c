// libFuzzer target: bytes -> the reader of S3's XML answers (ListObjectsV2
// pages, error bodies, multipart upload answers): every tag the listing and
// the writer look for is found and its text decoded. Found elements must lie
// inside the input, and decoding never grows the text (callers size their
// buffers on that).
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/sl_s3_xml.h"

static void check_inside(const char* xml, size_t n, const struct s3_xml_element* e,
                         const char* tag) {
  if (e->inner < xml || e->inner_len > n || e->inner + e->inner_len > xml + n ||
      e->end < e->inner + e->inner_len || e->end > xml + n) {
    fprintf(stderr, "fuzz_s3_xml: <%s> found outside the input\n", tag);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const tags[] = {"ListBucketResult",      "Contents", "Key",
                                     "IsTruncated",           "Error",    "Code",
                                     "Message",               "UploadId", "ETag",
                                     "NextContinuationToken", "Bucket"};
  const char* xml = (const char*)data;
  char* text = malloc(size + 1);
  if (text == NULL) return 0;
  for (size_t t = 0; t < sizeof tags / sizeof tags[0]; ++t) {
    // Every occurrence, as the listing walks <Contents> entries.
    const char* at = xml;
    struct s3_xml_element e;
    while (sl_s3_xml_find(at, (size_t)(xml + size - at), tags[t], &e)) {
      check_inside(xml, size, &e, tags[t]);
      size_t len = 0;
      if (sl_s3_xml_decode(e.inner, e.inner_len, text, &len) == 0 &&
          (len > e.inner_len || text[len] != '\0')) {
        fprintf(stderr, "fuzz_s3_xml: <%s> decoded to %zu bytes from %zu\n", tags[t], len,
                e.inner_len);
        abort();
      }
      if (e.end <= at) abort();  // no progress: the walk would never end
      at = e.end;
    }
  }
  free(text);
  return 0;
}
