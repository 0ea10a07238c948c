// Reading S3's XML answers: ListObjectsV2 pages, multipart upload answers,
// and error bodies (which the HTTP source shows for any server that sends
// one, so this needs nothing else of S3's).
#ifndef SL_S3_XML_H
#define SL_S3_XML_H

#include <stddef.h>

/// S3's XML answers are flat and attribute-free below the root, so a small
/// tag finder does (no XML library is needed for them).
/// The first element <tag>...</tag> (or <tag/>) in xml[0, n): its raw content
/// (entities still encoded) and the first byte after it. 1 = found, 0 = absent.
struct s3_xml_element {
  const char* inner;
  size_t inner_len;
  const char* end;
};
int sl_s3_xml_find(const char* xml, size_t n, const char* tag, struct s3_xml_element* out);

/// Decodes XML character data into `out` (room for n + 1 bytes: decoding
/// never grows the text; NUL-terminated): the five predefined entities and
/// numeric character references as UTF-8. 0, or EILSEQ for an unknown
/// entity, a bad or NUL reference, or a raw '<' / NUL.
int sl_s3_xml_decode(const char* in, size_t n, char* out, size_t* out_len);

/// What an S3 XML error answer says, for messages: "Code: Message", then
/// the <Endpoint> and <Region> that a bucket of another region's answer
/// names (301 PermanentRedirect, 400 AuthorizationHeaderMalformed) with a
/// hint to set the region. "" (0) when xml[0, n) has no <Code>; else the
/// length written into out (cut to cap - 1).
size_t sl_s3_error_text(const char* xml, size_t n, char* out, size_t cap);

#endif
