// sluice schema: field names, types, nullability and metadata, as text or
// JSON (--json).
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/sl_utf8.h"
#include "core/sl_value_text.h"

/// Calls `visit` for each key/value pair of C Data Interface metadata (int32
/// count, then int32-length-prefixed key and value bytes).
static void metadata_each(const char* metadata,
                          void (*visit)(void* ctx, const char* key, int32_t key_len,
                                        const char* value, int32_t value_len, int index),
                          void* ctx) {
  if (metadata == NULL) return;
  int32_t n;
  memcpy(&n, metadata, 4);
  const char* p = metadata + 4;
  for (int32_t i = 0; i < n; ++i) {
    int32_t key_len, value_len;
    memcpy(&key_len, p, 4);
    const char* key = p + 4;
    p = key + key_len;
    memcpy(&value_len, p, 4);
    const char* value = p + 4;
    p = value + value_len;
    visit(ctx, key, key_len, value, value_len, i);
  }
}

struct text_ctx {
  const char* indent;
  int rc;
};

static void print_pair(void* ctx, const char* key, int32_t key_len, const char* value,
                       int32_t value_len, int index) {
  (void)index;
  struct text_ctx* t = ctx;
  struct sl_text line;
  sl_text_init(&line, NULL);
  int rc = sl_text_append_str(&line, t->indent);
  if (rc == 0) rc = sl_text_append_escaped(&line, key, (size_t)key_len, 0);
  if (rc == 0) rc = sl_text_append_str(&line, ": ");
  if (rc == 0) rc = sl_text_append_escaped(&line, value, (size_t)value_len, 0);
  if (rc == 0) fprintf(stdout, "%s\n", sl_text_cstr(&line));
  if (t->rc == 0) t->rc = rc;
  sl_text_reset(&line);
}

struct json_ctx {
  struct sl_text* out;
  int rc;
  int n;          ///< pairs written so far
  int binary;     ///< 0: the pairs whose key is UTF-8; 1: the others
};

static int is_utf8(const char* s, int32_t n) {
  return sl_utf8_invalid_at((const uint8_t*)s, n) < 0;
}

/// {"base64":"..."}: bytes that are not UTF-8, which a JSON string cannot
/// hold (\u00XX escapes would read back as other characters).
static int append_json_base64(struct sl_text* out, const char* s, int32_t n) {
  size_t len = ((size_t)n + 2) / 3 * 4;
  int rc = sl_text_append_str(out, "{\"base64\":\"");
  if (rc == 0) rc = sl_text_reserve(out, len);
  if (rc == 0) {
    out->len += sl_base64_encode((const uint8_t*)s, (size_t)n, out->data + out->len);
    out->data[out->len] = '\0';
    rc = sl_text_append_str(out, "\"}");
  }
  return rc;
}

/// A metadata value: a JSON string when it is UTF-8, else {"base64": ...}.
static int append_json_bytes(struct sl_text* out, const char* s, int32_t n) {
  return is_utf8(s, n) ? sl_text_append_json_string(out, s, (size_t)n)
                       : append_json_base64(out, s, n);
}

/// "key":value into the "metadata" object (keys that are UTF-8), or
/// {"key":...,"value":...} into the "binary_metadata" list (the others).
static void json_pair(void* ctx, const char* key, int32_t key_len, const char* value,
                      int32_t value_len, int index) {
  (void)index;
  struct json_ctx* j = ctx;
  if (j->rc != 0 || is_utf8(key, key_len) == j->binary) return;
  if (j->n++ > 0) j->rc = sl_text_append_char(j->out, ',');
  if (j->binary) {
    if (j->rc == 0) j->rc = sl_text_append_str(j->out, "{\"key\":");
    if (j->rc == 0) j->rc = append_json_base64(j->out, key, key_len);
    if (j->rc == 0) j->rc = sl_text_append_str(j->out, ",\"value\":");
  } else {
    if (j->rc == 0) j->rc = sl_text_append_json_string(j->out, key, (size_t)key_len);
    if (j->rc == 0) j->rc = sl_text_append_char(j->out, ':');
  }
  if (j->rc == 0) j->rc = append_json_bytes(j->out, value, value_len);
  if (j->rc == 0 && j->binary) j->rc = sl_text_append_char(j->out, '}');
}

/// ,"metadata":{...} and, when a key is not UTF-8, ,"binary_metadata":[...].
static int json_metadata(const char* metadata, struct sl_text* out) {
  struct json_ctx j = {out, sl_text_append_str(out, ",\"metadata\":{"), 0, 0};
  if (j.rc == 0) metadata_each(metadata, json_pair, &j);
  if (j.rc == 0) j.rc = sl_text_append_char(out, '}');
  struct json_ctx b = {out, j.rc, 0, 1};
  size_t mark = out->len;
  if (b.rc == 0) b.rc = sl_text_append_str(out, ",\"binary_metadata\":[");
  if (b.rc == 0) metadata_each(metadata, json_pair, &b);
  if (b.rc == 0 && b.n == 0) out->len = mark, out->data[mark] = '\0';  // none: no list
  else if (b.rc == 0) b.rc = sl_text_append_char(out, ']');
  return b.rc;
}

static int json_field(const struct ArrowSchema* field, struct sl_text* out) {
  char type[1024];
  cli_type_name(field, type, sizeof type);
  const char* name = field->name != NULL ? field->name : "";
  struct json_ctx j = {out, 0, 0, 0};
  j.rc = sl_text_append_str(out, "{\"name\":");
  if (j.rc == 0) j.rc = sl_text_append_json_string(out, name, strlen(name));
  if (j.rc == 0) j.rc = sl_text_append_str(out, ",\"type\":");
  if (j.rc == 0) j.rc = sl_text_append_json_string(out, type, strlen(type));
  if (j.rc == 0) j.rc = sl_text_append_str(out, ",\"format\":");
  if (j.rc == 0) j.rc = sl_text_append_json_string(out, field->format, strlen(field->format));
  if (j.rc == 0) {
    j.rc = sl_text_append_str(out, (field->flags & ARROW_FLAG_NULLABLE) ? ",\"nullable\":true"
                                                                       : ",\"nullable\":false");
  }
  if (j.rc == 0 && field->metadata != NULL) j.rc = json_metadata(field->metadata, out);
  if (j.rc == 0 && field->n_children > 0) {
    j.rc = sl_text_append_str(out, ",\"children\":[");
    for (int64_t i = 0; i < field->n_children && j.rc == 0; ++i) {
      if (i > 0) j.rc = sl_text_append_char(out, ',');
      if (j.rc == 0) j.rc = json_field(field->children[i], out);
    }
    if (j.rc == 0) j.rc = sl_text_append_char(out, ']');
  }
  if (j.rc == 0 && field->dictionary != NULL) {
    j.rc = sl_text_append_str(out, ",\"dictionary\":");
    if (j.rc == 0) j.rc = json_field(field->dictionary, out);
  }
  if (j.rc == 0) j.rc = sl_text_append_char(out, '}');
  return j.rc;
}

static int print_json(const struct ArrowSchema* schema) {
  struct sl_text out;
  sl_text_init(&out, NULL);
  struct json_ctx j = {&out, sl_text_append_str(&out, "{\"fields\":["), 0, 0};
  for (int64_t i = 0; i < schema->n_children && j.rc == 0; ++i) {
    if (i > 0) j.rc = sl_text_append_char(&out, ',');
    if (j.rc == 0) j.rc = json_field(schema->children[i], &out);
  }
  if (j.rc == 0) j.rc = sl_text_append_char(&out, ']');
  if (j.rc == 0) j.rc = json_metadata(schema->metadata, &out);
  if (j.rc == 0) j.rc = sl_text_append_str(&out, "}\n");
  if (j.rc == 0) fputs(sl_text_cstr(&out), stdout);
  sl_text_reset(&out);
  if (j.rc != 0) {
    cli_error("out of memory");
    return CLI_ERROR;
  }
  return CLI_OK;
}

/// The field's name escaped (sl_text_append_escaped) in `text`; NULL when out of memory.
static const char* escaped_name(const struct ArrowSchema* field, struct sl_text* text) {
  const char* name = field->name != NULL ? field->name : "";
  sl_text_clear(text);
  return sl_text_append_escaped(text, name, strlen(name), 0) == 0 ? sl_text_cstr(text) : NULL;
}

/// Characters in escaped text (UTF-8: the bytes that begin one), for padding.
static int text_width(const struct sl_text* text) {
  int w = 0;
  for (size_t i = 0; i < text->len; ++i) w += ((unsigned char)text->data[i] & 0xc0) != 0x80;
  return w;
}

static int print_text(const struct ArrowSchema* schema) {
  struct sl_text name;
  sl_text_init(&name, NULL);
  struct text_ctx pairs = {"    ", 0};
  int name_width = 4;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    if (escaped_name(schema->children[i], &name) == NULL) goto oom;
    int w = text_width(&name);
    if (w > name_width) name_width = w < 40 ? w : 40;
  }
  for (int64_t i = 0; i < schema->n_children; ++i) {
    const struct ArrowSchema* field = schema->children[i];
    char type[1024];
    cli_type_name(field, type, sizeof type);
    if (escaped_name(field, &name) == NULL) goto oom;
    int pad = name_width - text_width(&name);
    fprintf(stdout, "%s%*s  %s%s\n", sl_text_cstr(&name), pad > 0 ? pad : 0, "", type,
            (field->flags & ARROW_FLAG_NULLABLE) ? "" : " not null");
    metadata_each(field->metadata, print_pair, &pairs);
  }
  if (schema->metadata != NULL) {
    fputs("metadata:\n", stdout);
    metadata_each(schema->metadata, print_pair, &pairs);
  }
  sl_text_reset(&name);
  if (pairs.rc != 0) goto oom;
  return CLI_OK;
oom:
  sl_text_reset(&name);
  cli_error("out of memory");
  return CLI_ERROR;
}

int cli_cmd_schema(const struct cli_options* options) {
  struct sluice_dataset* dataset = NULL;
  int status = cli_open(options, options->n_positional, &dataset);
  if (status != CLI_OK) return status;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (sluice_dataset_schema(dataset, &schema, &error) != 0) {
    cli_error("%s", error.message);
    sluice_dataset_close(dataset);
    return CLI_ERROR;
  }
  if (options->json) {
    status = print_json(&schema);
  } else {
    status = print_text(&schema);
  }
  schema.release(&schema);
  sluice_dataset_close(dataset);
  return status;
}
