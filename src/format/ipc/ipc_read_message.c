// Encapsulated messages: the framing prefix and the Message flatbuffer.
#include <inttypes.h>
#include <string.h>

#include "core/sl_error.h"
#include "ipc_fbs.h"
#include "ipc_internal.h"

int ipc_frame_prefix(const uint8_t* p, int64_t n, int64_t* prefix, int64_t* meta_len,
                     const struct ipc_where* where, struct sluice_error* error) {
  if (n < 4)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": truncated message prefix",
                        where->name, where->offset);
  uint32_t first = fb_load_u32(p);
  int32_t len;
  if (first == IPC_CONTINUATION_MARKER) {
    if (n < 8)
      return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": truncated message prefix",
                          where->name, where->offset);
    len = fb_load_i32(p + 4);
    *prefix = 8;
  } else {
    // Before Arrow 0.15 messages started directly with the length.
    len = (int32_t)first;
    *prefix = 4;
  }
  if (len < 0)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": negative message length %d",
                        where->name, where->offset, (int)len);
  *meta_len = len;
  return 0;
}

int ipc_message_parse(const uint8_t* meta, size_t len, const struct ipc_where* where,
                      struct ipc_message* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  fb_buf_init(&out->fb, meta, len);
  if (fb_root(&out->fb, &out->message) != 0 ||
      fb_read_i16(&out->message, IPC_MESSAGE_VERSION, IPC_METADATA_V1, &out->version) < 0 ||
      fb_read_u8(&out->message, IPC_MESSAGE_HEADER_TYPE, 0, &out->header_type) < 0 ||
      fb_read_i64(&out->message, IPC_MESSAGE_BODY_LENGTH, 0, &out->body_length) < 0)
    return ipc_fb_error(&out->fb, where, "Message", error);
  int rc = fb_read_table(&out->message, IPC_MESSAGE_HEADER, &out->header);
  if (rc < 0) return ipc_fb_error(&out->fb, where, "Message header", error);
  if (rc == 0 || out->header_type == IPC_MESSAGE_NONE)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": message without a header",
                        where->name, where->offset);
  if (out->body_length < 0)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": negative body length %" PRId64,
                        where->name, where->offset, out->body_length);
  if (out->version < IPC_METADATA_V4 || out->version > IPC_METADATA_V5)
    return sl_error_set(error, ENOTSUP,
                        "%s: offset %" PRId64 ": unsupported IPC metadata version %d",
                        where->name, where->offset, (int)out->version);
  // Custom metadata on messages carries nothing we need; it is not read.
  return 0;
}
