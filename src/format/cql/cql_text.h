// CQL text the table reader and writer both need: quoted identifiers and the
// options they share (consistency level, tls).
#ifndef CQL_TEXT_H
#define CQL_TEXT_H

#include <stddef.h>

#include "sluice.h"
#include "../../core/sl_options.h"
#include "../../core/sl_value_text.h"
#include "../../io/sl_cql.h"

/// Appends `name` as a quoted CQL identifier ("a""b").
int sl_cql_append_ident(struct sl_text* text, const char* name);

/// The protocol's level for a consistency option value (one, local_one,
/// quorum, local_quorum, all), or EINVAL with a message naming `format`
/// ("cql" / "cql write").
int sl_cql_parse_consistency(const char* value, size_t n, const char* format, int* level,
                          struct sluice_error* error);

/// true|false (also 1|0) for option `key`, else EINVAL naming `format`.
int sl_cql_parse_bool(const char* value, size_t n, const char* format, const char* key, int* out,
                   struct sluice_error* error);

/// The connection options of a cql:// location, into `address`:
/// tls=true|false, tls_cert=FILE and tls_key=FILE (a client certificate and
/// its key, PEM), compression=lz4|none. *taken = 1 when `o` is one of them
/// (EINVAL for a bad value), 0 when not.
int sl_cql_connection_option(const struct sl_option* o, const char* format,
                          struct sl_cql_address* address, int* taken, struct sluice_error* error);

/// compression=lz4|none (also the writer's --compression) into *out.
int sl_cql_parse_compression(const char* value, size_t n, const char* format, int* out,
                          struct sluice_error* error);

#endif
