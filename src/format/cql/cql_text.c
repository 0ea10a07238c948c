// CQL text shared by the reader and the writer: see cql_text.h.
#include "cql_text.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "../../core/sl_error.h"
#include "../../io/sl_cql.h"

int sl_cql_append_ident(struct sl_text* t, const char* name) {
  int rc = sl_text_append_char(t, '"');
  for (const char* p = name; rc == 0 && *p != '\0'; ++p) {
    rc = *p == '"' ? sl_text_append(t, "\"\"", 2) : sl_text_append_char(t, *p);
  }
  return rc == 0 ? sl_text_append_char(t, '"') : rc;
}

int sl_cql_parse_consistency(const char* v, size_t n, const char* format, int* level,
                          struct sluice_error* error) {
  static const struct {
    const char* name;
    int level;
  } levels[] = {{"any", SL_CQL_ANY},       {"one", SL_CQL_ONE},
                {"two", SL_CQL_TWO},       {"three", SL_CQL_THREE},
                {"quorum", SL_CQL_QUORUM}, {"all", SL_CQL_ALL},
                {"local_quorum", SL_CQL_LOCAL_QUORUM}, {"each_quorum", SL_CQL_EACH_QUORUM},
                {"local_one", SL_CQL_LOCAL_ONE}};
  // In any case, as cqlsh's CONSISTENCY and the drivers' names (QUORUM).
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; ++i) {
    if (strlen(levels[i].name) == n && strncasecmp(levels[i].name, v, n) == 0) {
      *level = levels[i].level;
      return 0;
    }
  }
  return sl_error_set(error, EINVAL,
                      "%s option consistency='%.*s': expected any, one, two, three, quorum, all, "
                      "local_quorum, each_quorum or local_one",
                      format, (int)n, v);
}

int sl_cql_parse_compression(const char* v, size_t n, const char* format, int* out,
                          struct sluice_error* error) {
  if ((n == 3 && memcmp(v, "lz4", 3) == 0) || (n == 4 && memcmp(v, "none", 4) == 0)) {
    *out = n == 3;
    return 0;
  }
  return sl_error_set(error, EINVAL, "%s compression '%.*s': expected lz4 or none", format,
                      (int)n, v);
}

int sl_cql_connection_option(const struct sl_option* o, const char* format,
                          struct sl_cql_address* a, int* taken, struct sluice_error* error) {
  *taken = 1;
  if (sl_option_is(o, "tls")) return sl_cql_parse_bool(o->value, o->value_len, format, "tls", &a->tls,
                                                     error);
  if (sl_option_is(o, "compression")) {
    return sl_cql_parse_compression(o->value, o->value_len, format, &a->compression, error);
  }
  char* file = sl_option_is(o, "tls_cert") ? a->tls_cert
               : sl_option_is(o, "tls_key") ? a->tls_key
                                            : NULL;
  if (file == NULL) {
    *taken = 0;
    return 0;
  }
  if (o->value_len == 0 || o->value_len >= sizeof a->tls_cert) {
    return sl_error_set(error, EINVAL, "%s option %.*s: expected a file name of 1 to %zu bytes",
                        format, (int)o->key_len, o->key, sizeof a->tls_cert - 1);
  }
  memcpy(file, o->value, o->value_len);
  file[o->value_len] = '\0';
  return 0;
}

int sl_cql_parse_bool(const char* v, size_t n, const char* format, const char* key, int* out,
                   struct sluice_error* error) {
  if ((n == 4 && memcmp(v, "true", 4) == 0) || (n == 1 && v[0] == '1')) {
    *out = 1;
    return 0;
  }
  if ((n == 5 && memcmp(v, "false", 5) == 0) || (n == 1 && v[0] == '0')) {
    *out = 0;
    return 0;
  }
  return sl_error_set(error, EINVAL, "%s option %s='%.*s': expected true or false", format, key,
                      (int)n, v);
}
