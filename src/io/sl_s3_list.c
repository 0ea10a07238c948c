// Listing S3 prefixes and globs (ListObjectsV2). Placeholder until written.
#include <errno.h>

#include "../core/sl_error.h"
#include "sl_location.h"

int sl_s3_expand(const char* location, const struct sl_remote_options* remote,
                 const struct sluice_allocator* alloc, struct sl_location_list* out,
                 struct sluice_error* error) {
  (void)remote;
  (void)alloc;
  (void)out;
  return sl_error_set(error, ENOTSUP, "%s: listing S3 prefixes is not supported yet", location);
}
