// The Apache Cassandra table writer ("cql"): loads an Arrow stream into an
// existing table, `cql://host[:port]/keyspace.table`.
//
// One prepared statement, INSERT INTO "ks"."t" ("c1", ...) VALUES (?, ...),
// over the stream's columns (by name; the node says which it lacks); the
// node's bound-variable types decide how each column is encoded
// (cql_encode.c). Consecutive rows of one partition go as one UNLOGGED
// BATCH (one mutation for the node), other rows as single EXECUTEs; many
// requests are in flight at once on one connection, each on its own stream,
// so that the node never waits for the client. A row whose clustering
// columns are all null (how a partition of static values only reads) goes
// through a second statement, prepared at the first such row: the INSERT of
// the partition key and static columns only (system_schema.columns says
// which columns are which). Requests the node answers
// with a write timeout, overloaded or unavailable are sent again after a
// backoff (inserts are idempotent). Not atomic: Cassandra has no transaction
// across partitions, so a failed load leaves the rows written before the
// failure (running it again completes it).
//
// Format options: consistency=one|local_one|quorum|local_quorum|all
// (default local_one), batch_rows=N (rows of one partition per batch, default
// 32, 1 = no batches), in_flight=N (requests awaiting answers, default 128),
// nulls=unset|null (default unset: a null leaves the cell as it is, without
// writing a tombstone, as DSBulk does; null deletes the cell).
#ifndef SL_CQL_WRITER_H
#define SL_CQL_WRITER_H

#include "format/sl_format.h"

const struct sl_format_writer* sl_cql_writer(void);

#endif
