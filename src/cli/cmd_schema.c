// sluice schema: field names, types, nullability and metadata, as text or
// JSON (--json).
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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

static void print_pair(void* ctx, const char* key, int32_t key_len, const char* value,
                       int32_t value_len, int index) {
  (void)index;
  fprintf(stdout, "%s%.*s: %.*s\n", (const char*)ctx, (int)key_len, key, (int)value_len, value);
}

struct json_ctx {
  struct sl_text* out;
  int rc;
};

static void json_pair(void* ctx, const char* key, int32_t key_len, const char* value,
                      int32_t value_len, int index) {
  struct json_ctx* j = ctx;
  if (j->rc == 0 && index > 0) j->rc = sl_text_append_char(j->out, ',');
  if (j->rc == 0) j->rc = sl_text_append_json_string(j->out, key, (size_t)key_len);
  if (j->rc == 0) j->rc = sl_text_append_char(j->out, ':');
  if (j->rc == 0) j->rc = sl_text_append_json_string(j->out, value, (size_t)value_len);
}

static int json_field(const struct ArrowSchema* field, struct sl_text* out) {
  char type[1024];
  cli_type_name(field, type, sizeof type);
  const char* name = field->name != NULL ? field->name : "";
  struct json_ctx j = {out, 0};
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
  if (j.rc == 0 && field->metadata != NULL) {
    j.rc = sl_text_append_str(out, ",\"metadata\":{");
    metadata_each(field->metadata, json_pair, &j);
    if (j.rc == 0) j.rc = sl_text_append_char(out, '}');
  }
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
  struct json_ctx j = {&out, sl_text_append_str(&out, "{\"fields\":[")};
  for (int64_t i = 0; i < schema->n_children && j.rc == 0; ++i) {
    if (i > 0) j.rc = sl_text_append_char(&out, ',');
    if (j.rc == 0) j.rc = json_field(schema->children[i], &out);
  }
  if (j.rc == 0) j.rc = sl_text_append_str(&out, "],\"metadata\":{");
  if (j.rc == 0) metadata_each(schema->metadata, json_pair, &j);
  if (j.rc == 0) j.rc = sl_text_append_str(&out, "}}\n");
  if (j.rc == 0) fputs(sl_text_cstr(&out), stdout);
  sl_text_reset(&out);
  if (j.rc != 0) {
    cli_error("out of memory");
    return CLI_ERROR;
  }
  return CLI_OK;
}

static void print_text(const struct ArrowSchema* schema) {
  int name_width = 4;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    const char* name = schema->children[i]->name != NULL ? schema->children[i]->name : "";
    int w = (int)strlen(name);
    if (w > name_width) name_width = w < 40 ? w : 40;
  }
  for (int64_t i = 0; i < schema->n_children; ++i) {
    const struct ArrowSchema* field = schema->children[i];
    char type[1024];
    cli_type_name(field, type, sizeof type);
    fprintf(stdout, "%-*s  %s%s\n", name_width, field->name != NULL ? field->name : "", type,
            (field->flags & ARROW_FLAG_NULLABLE) ? "" : " not null");
    metadata_each(field->metadata, print_pair, "    ");
  }
  if (schema->metadata != NULL) {
    fputs("metadata:\n", stdout);
    metadata_each(schema->metadata, print_pair, "    ");
  }
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
    print_text(&schema);
  }
  schema.release(&schema);
  sluice_dataset_close(dataset);
  return status;
}
