// The Avro object container file reader ("avro", .avro).
//
// Type mapping (writer schema → Arrow): null → na; boolean → bool; int → int32;
// long → int64; float/double → float32/float64; bytes → binary; string → utf8
// (uuid stays utf8); record → struct; enum → dictionary<int32, utf8>;
// array → list; map → map<utf8, T>; fixed → fixed_size_binary; ["null", T] in
// either order → nullable T; other unions → dense union (type code = branch
// index); decimal (bytes/fixed) → decimal128, decimal256 above precision 38;
// date → date32; time-millis → time32[ms]; time-micros → time64[us];
// timestamp-{millis,micros,nanos} → timestamp[ms/us/ns, tz=UTC];
// local-timestamp-* → timestamp without tz; duration (fixed 12) →
// month_day_nano interval (milliseconds × 10^6 nanoseconds). Unknown or
// invalid logical types fall back to the underlying type. A non-record
// top-level schema becomes one column named "value". The schema's metadata
// keeps the writer schema JSON under "avro.schema".
//
// Strings must be valid UTF-8 (Arrow utf8 requires it); bytes are not checked.
//
// Ranged sources are planned into splits of consecutive blocks (block headers
// are walked and every sync marker checked at open); forward-only sources are
// one split decoded sequentially. Projection skips unrequested top-level
// fields without decoding them.
//
// Format option `reader_schema=PATH` (a .avsc file) resolves the writer schema
// against a reader schema as the Avro spec describes: fields matched by name
// or alias, writer-only fields skipped, reader-only fields filled from their
// defaults, promotions (int → long/float/double, long → float/double, float →
// double, string ↔ bytes), enum symbols remapped, unions on either side
// resolved branch by branch (a writer branch the reader cannot take fails
// only when the data uses it). A writer enum symbol the reader lacks reads
// as the reader enum's "default" symbol; without one it is an error when met.
#ifndef SL_AVRO_READER_H
#define SL_AVRO_READER_H

#include "format/sl_format.h"

/// The reader table for Avro object container files.
const struct sl_format_reader* sl_avro_reader(void);

#endif
