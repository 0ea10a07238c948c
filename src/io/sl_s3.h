// s3://bucket/key sources: ranged and forward reads of an S3 object through
// the HTTP source (sl_source_http.h), every request signed with SigV4
// (sl_sigv4.h).
//
// Settings are the caller's (sluice_s3_options, through
// sl_remote_options.s3) where given, else found the way AWS tools find them:
// - credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
//   AWS_SESSION_TOKEN); else the profile (AWS_PROFILE, default "default") in
//   the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default
//   ~/.aws/credentials) or the config file (AWS_CONFIG_FILE, default
//   ~/.aws/config, section "[profile NAME]" or "[default]"):
//   aws_access_key_id, aws_secret_access_key, aws_session_token. None found:
//   anonymous (unsigned) requests, for public buckets.
// - region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`, else
//   us-east-1.
// - endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
//   `endpoint_url`, else https://s3.REGION.amazonaws.com.
// - addressing: path-style (ENDPOINT/bucket/key) for custom endpoints and for
//   bucket names that are not DNS-safe; virtual-hosted
//   (bucket.s3.REGION.amazonaws.com/key) on AWS otherwise.
//   SLUICE_S3_ADDRESSING_STYLE=path|virtual, or the profile's nested
//   "s3 =\n  addressing_style = ..." in the config file, forces one.
#ifndef SL_S3_H
#define SL_S3_H

#include "sl_source.h"

int sl_s3_source_open(const char* location, const struct sl_remote_options* remote,
                      const struct sluice_allocator* alloc, struct sl_source** out,
                      struct sluice_error* error);

/// Uploads bytes [offset, offset + size) of the open file `fd` (offset a
/// multiple of the page size) as the object at `location`
/// (s3://bucket/key): one PUT up to the part size (sl_s3_part_size), else
/// a multipart upload with parts sent in parallel, aborted on any error so
/// that no partial object appears.
/// `remote` (NULL = defaults) gives the TLS and S3 settings.
int sl_s3_upload_file(const char* location, const struct sl_remote_options* remote, int fd,
                      int64_t offset, int64_t size, const struct sluice_allocator* alloc,
                      struct sluice_error* error);

/// The multipart part size a write to `location` (s3://bucket/key) asks
/// for: `given` (sluice_s3_options.part_size; 0 = none), else
/// SLUICE_S3_PART_SIZE, else 8 MiB; raised to S3's least, 5 MiB. The one
/// check of every spelling of it: more than S3's most for a part (5 GiB),
/// a negative one or a variable that is no size is EINVAL naming it.
int sl_s3_part_size(int64_t given, const char* location, int64_t* out,
                    struct sluice_error* error);

/// Deletes the object at `location` (s3://bucket/key): one DELETE, retried
/// as every request; S3 answers success for a key that is not there.
int sl_s3_delete_object(const char* location, const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sluice_error* error);

#endif
