// Encapsulated messages: the framing prefix and the Message flatbuffer.
#include <inttypes.h>
#include <string.h>

#include "core/sl_error.h"
#include "ipc_fbs.h"
#include "ipc_internal.h"

int sl_ipc_frame_prefix(const uint8_t* p, int64_t n, int64_t* prefix, int64_t* meta_len,
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

int sl_ipc_message_parse(const uint8_t* meta, size_t len, const struct ipc_where* where,
                      struct ipc_message* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  sl_fb_buf_init(&out->fb, meta, len);
  if (sl_fb_root(&out->fb, &out->message) != 0 ||
      sl_fb_read_i16(&out->message, IPC_MESSAGE_VERSION, IPC_METADATA_V1, &out->version) < 0 ||
      sl_fb_read_u8(&out->message, IPC_MESSAGE_HEADER_TYPE, 0, &out->header_type) < 0 ||
      sl_fb_read_i64(&out->message, IPC_MESSAGE_BODY_LENGTH, 0, &out->body_length) < 0)
    return sl_ipc_fb_error(&out->fb, where, "Message", error);
  int rc = sl_fb_read_table(&out->message, IPC_MESSAGE_HEADER, &out->header);
  if (rc < 0) return sl_ipc_fb_error(&out->fb, where, "Message header", error);
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
  return 0;
}

static int append_i32(struct sl_buffer* b, int32_t v) { return sl_buffer_append(b, &v, 4); }

int sl_ipc_read_kv_metadata(const struct fb_table* t, int slot, struct sl_buffer* out) {
  out->size = 0;
  struct fb_vec kvs;
  int rc = sl_fb_read_vec(t, slot, 4, &kvs);
  if (rc < 0) return -1;
  if (rc == 0 || kvs.count == 0) return 0;
  if (kvs.count > INT32_MAX / 8) return -1;
  if (append_i32(out, (int32_t)kvs.count) != 0) return ENOMEM;
  for (uint32_t i = 0; i < kvs.count; ++i) {
    struct fb_table kv;
    const char *k, *v;
    uint32_t klen, vlen;
    if (sl_fb_vec_table(&kvs, i, &kv) != 0 || sl_fb_read_string(&kv, IPC_KEY_VALUE_KEY, &k, &klen) < 0 ||
        sl_fb_read_string(&kv, IPC_KEY_VALUE_VALUE, &v, &vlen) < 0)
      return -1;
    if (klen > INT32_MAX || vlen > INT32_MAX) return -1;
    if (append_i32(out, (int32_t)klen) != 0 || sl_buffer_append(out, k, klen) != 0 ||
        append_i32(out, (int32_t)vlen) != 0 || sl_buffer_append(out, v, vlen) != 0)
      return ENOMEM;
  }
  return 0;
}

int sl_ipc_message_metadata(const struct ipc_message* msg, struct sl_buffer* out,
                         const struct ipc_where* where, struct sluice_error* error) {
  int rc = sl_ipc_read_kv_metadata(&msg->message, IPC_MESSAGE_CUSTOM_METADATA, out);
  if (rc < 0) return sl_ipc_fb_error(&msg->fb, where, "Message custom_metadata", error);
  if (rc == ENOMEM)
    return sl_error_set(error, ENOMEM, "%s: offset %" PRId64 ": out of memory reading message "
                        "metadata", where->name, where->offset);
  return 0;
}
